"""Rollout engine: jitted KV-cache sampler with logprobs, stops and multi-turn continuation.

Public API (details in each module):
  Sampler(cfg, tokenizer=None, max_len=4096, dtype=bf16, buckets=None)
    .generate(params, prompts, SamplingParams, seed, step, return_state=False, reserve=0)
    .continue_(state, new_token_chunks, params, sampling=None, seed=None, step=None)
    .generate_text(params, tokenizer, conversations, sampling, seed, step)
    .compile_count
  SamplingParams(temperature, top_k, top_p, max_new_tokens, n, stop_strings, stop_token_ids,
                 eos_ids, pad_id)
  SampleOutput(tokens, logprobs, mask, stop_reason, lengths, group, texts, stats)
  make_generate_fn(sampler, params) -> the LocalWorker's generate_fn
  reshard_params(params, shardings) -> weight hand-off to another sharding
"""

from skillax.engine.buckets import Buckets
from skillax.engine.handoff import reshard_params
from skillax.engine.sampler import (SampleOutput, Sampler, SamplerState, default_eos_ids,
                                    encode_conversation, make_generate_fn)
from skillax.engine.sampling import SamplingParams, sample_tokens, sampling_logprobs, token_logprobs

__all__ = ["Buckets", "SampleOutput", "Sampler", "SamplerState", "SamplingParams",
           "default_eos_ids", "encode_conversation", "make_generate_fn", "reshard_params",
           "sample_tokens", "sampling_logprobs", "token_logprobs"]
