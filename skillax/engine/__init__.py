"""Rollout engine: jitted KV-cache sampler with logprobs, stops and multi-turn continuation."""

from skillax.engine.buckets import Buckets
from skillax.engine.sampler import (SampleOutput, Sampler, SamplerState, default_eos_ids,
                                    encode_conversation, make_generate_fn)
from skillax.engine.sampling import SamplingParams, sample_tokens, sampling_logprobs, token_logprobs

__all__ = ["Buckets", "SampleOutput", "Sampler", "SamplerState", "SamplingParams",
           "default_eos_ids", "encode_conversation", "make_generate_fn", "sample_tokens",
           "sampling_logprobs", "token_logprobs"]
