"""The embedded default policy: our sampler's greedy continuations of 3 chat prompts equal
transformers' greedy ``generate`` on the same (dequantised GGUF) weights, token for token."""

import jax.numpy as jnp
import numpy as np
import pytest
import torch

from skillax.engine.sampler import Sampler, encode_conversation
from skillax.engine.sampling import SamplingParams
from skillax.models import hf_io
from skillax.models.config import ModelConfig
from tests._smollm2 import smollm2

PROMPTS = ["What is the capital of France?", "Write a haiku about rain.",
           "List three uses of a paperclip."]


@pytest.mark.slow
def test_smollm2_greedy_matches_transformers():
    import transformers

    hf_config, state_dict, tokenizer = smollm2()
    cfg = ModelConfig.from_hf_dict(hf_config)
    params = hf_io.params_from_source(cfg, hf_io.DictSource(state_dict), jnp.float32)
    prompts = [encode_conversation(tokenizer, [{"role": "user", "content": p}]) for p in PROMPTS]
    sampler = Sampler(cfg, tokenizer, max_len=256, dtype=jnp.float32)
    out = sampler.generate(params, prompts, SamplingParams(temperature=0.0, max_new_tokens=32), seed=0)

    hf_cfg = transformers.LlamaConfig(**{k: v for k, v in hf_config.items() if k != "rope_parameters"})
    model = transformers.LlamaForCausalLM(hf_cfg).float().eval()
    sd = {k: torch.from_numpy(np.array(v)) for k, v in state_dict.items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}
    model.tie_weights()
    eos = set(sampler.default_eos)
    for i, p in enumerate(prompts):
        with torch.no_grad():
            ref = model.generate(torch.tensor([p]), max_new_tokens=32, do_sample=False,
                                 eos_token_id=sorted(eos), pad_token_id=2)[0, len(p):].tolist()
        n = int(out.lengths[i])
        ours = out.tokens[i, :n].tolist()
        assert ours == ref, (PROMPTS[i], tokenizer.decode(ours), tokenizer.decode(ref))
