"""Host-side handle on the policy for method loops: chat prompts -> sampled generations.

The method loops never touch jax arrays: they call ``PolicySampler.sample(prompts, ...)``
with token-id prompts and get back ``Generation`` records (ids, logprobs, stop reasons,
texts). ``params`` is read through a callable each call, so the sampler always uses the
trainer's current weights without a copy (weight hand-off, ARCHITECTURE.md).
"""

from __future__ import annotations

from typing import Callable, Sequence

from skillax.engine.sampler import Sampler, encode_conversation
from skillax.engine.sampling import SamplingParams
from skillax.methods.common.rows import Generation


class PolicySampler:
    """Wraps a ``Sampler`` with the run's seed and a monotonically increasing call counter
    (folded into every row's key: distinct randomness per call, deterministic per seed)."""

    def __init__(self, sampler: Sampler, tokenizer, get_params: Callable[[], object], seed: int,
                 temperature: float, call_offset: int = 0):
        self.sampler = sampler
        self.tokenizer = tokenizer
        self.get_params = get_params
        self.seed = int(seed)
        self.temperature = float(temperature)
        self.calls = int(call_offset)
        self.tokens_generated = 0
        self.seconds = 0.0

    def encode(self, messages: Sequence[dict]) -> list[int]:
        return encode_conversation(self.tokenizer, messages)

    def sample(self, prompts: Sequence[Sequence[int]], *, objective: str, episodes: Sequence[int],
               max_new_tokens: int, stop_strings: Sequence[str] = (), prefix: str = "",
               temperature: float | None = None) -> list[Generation]:
        """One batched sampler call; returns one ``Generation`` per prompt (text = prefix + completion)."""
        if not prompts:
            return []
        sp = SamplingParams(temperature=self.temperature if temperature is None else float(temperature),
                            max_new_tokens=int(max_new_tokens), stop_strings=tuple(stop_strings))
        out = self.sampler.generate(self.get_params(), [list(p) for p in prompts], sp,
                                    seed=self.seed, step=self.calls)
        self.calls += 1
        self.tokens_generated += int(out.lengths.sum())
        self.seconds += float(out.stats.get("seconds", 0.0))
        gens = []
        for i, p in enumerate(prompts):
            n = int(out.lengths[i])
            ids = out.tokens[i, :n].tolist()
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            gens.append(Generation(prompt_ids=list(p), completion_ids=ids,
                                   logprobs=out.logprobs[i, :n].astype(float).tolist(),
                                   objective=objective, episode=int(episodes[i]),
                                   stop_reason=out.stop_reason[i], text=prefix + text))
        return gens
