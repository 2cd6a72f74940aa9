"""Host-side handle on the policy for method loops: chat prompts -> sampled generations.

The method loops never touch jax arrays: they call ``PolicySampler.sample(prompts, ...)``
with token-id prompts and get back ``Generation`` records (ids, logprobs, stop reasons,
texts). ``params`` is read through a callable each call, so the sampler always uses the
trainer's current weights without a copy (weight hand-off, ARCHITECTURE.md).

Keys (``skillax.engine.decode``): by default row r of a call uses the words (call counter,
r) and the counter advances by one per call -- distinct randomness per call, deterministic
per seed, but a row's sample depends on its position in the call. ``sample(keys=...)``
gives each row its own (step, row) words instead; :class:`TurnSampler` uses (reserved
counter value + turn, episode), so an episode's turn samples the same tokens whichever
episodes share the call (overlapped play, ``skillax.agents.agent_loop``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

from skillax.engine.sampler import Sampler, encode_conversation, encode_conversations
from skillax.engine.sampling import SamplingParams
from skillax.methods.common.rows import Generation


# The first call word of every held-out evaluation (:meth:`PolicySampler.evaluation_stream`).
# Training words count up from 0 by a few dozen a step, so they never reach it; int32-safe.
EVAL_CALL_OFFSET = 1 << 30
# Key ids of held-out games per evaluated split (:func:`evaluation_episode`): 2^20 games a split,
# 2^11 splits below the int32 limit of a row id.
EVAL_SPLIT_STRIDE = 1 << 20


def evaluation_episode(split_index: int, game: int) -> int:
    """The key id (the row word of ``PolicySampler.sample(keys=...)``) of held-out game ``game``
    (its 0-based index in its split's evaluation task list) of the ``split_index``-th evaluated
    split: ``split_index * EVAL_SPLIT_STRIDE + game``, an int. Every condition and arm of one
    seed plays the game on this id, whatever the job's position in a chunk (Skill-alpha and
    SkillOS evaluations; ARCHITECTURE.md, "Sampling keys"). Raises ValueError when ``game`` is
    outside [0, EVAL_SPLIT_STRIDE) or ``split_index`` outside [0, 2^11)."""
    if not 0 <= int(game) < EVAL_SPLIT_STRIDE or not 0 <= int(split_index) < 1 << 11:
        raise ValueError(f"held-out game {game} of split {split_index}: game must be in [0, {EVAL_SPLIT_STRIDE}) "
                         f"and split in [0, {1 << 11})")
    return int(split_index) * EVAL_SPLIT_STRIDE + int(game)


@dataclasses.dataclass
class CallCounter:
    """The call counter shared by every ``PolicySampler`` of one engine (checkpointed by it)."""

    value: int = 0


class PolicySampler:
    """Wraps a ``Sampler`` with the run's seed and a monotonically increasing call counter
    (folded into every row's key: distinct randomness per call, deterministic per seed).

    ``counter``: a shared :class:`CallCounter` (``PolicyEngine.policy_sampler``); default a
    private one starting at ``call_offset``. ``seconds`` / ``tokens_generated`` accumulate
    the sampler's program time and completion tokens; ``host_seconds`` the rest of
    :meth:`sample` (packing ids, decoding, records); ``row_steps`` the decode slots the
    calls paid for (batch bucket x decode steps of the longest row, summed over the row
    chunks of a call the sampler split for ``model.sampler_memory_gb``), so
    ``tokens_generated / row_steps`` is the fraction of decode work spent on live rows
    (issue 17 item 5: finished and padding rows still ride along until the call ends).
    """

    def __init__(self, sampler: Sampler, tokenizer, get_params: Callable[[], object], seed: int,
                 temperature: float, call_offset: int = 0, counter: CallCounter | None = None):
        self.sampler = sampler
        self.tokenizer = tokenizer
        self.get_params = get_params
        self.seed = int(seed)
        self.temperature = float(temperature)
        self.counter = counter if counter is not None else CallCounter(int(call_offset))
        self.tokens_generated = 0
        self.seconds = 0.0
        self.host_seconds = 0.0
        self.n_calls = 0
        self.row_steps = 0

    @property
    def calls(self) -> int:
        """The call counter (the step word of the next unkeyed call)."""
        return self.counter.value

    @calls.setter
    def calls(self, v: int) -> None:
        self.counter.value = int(v)

    def evaluation_stream(self) -> "PolicySampler":
        """This sampler (same weights, seed and temperature) on a private call counter that
        starts at :data:`EVAL_CALL_OFFSET`, for one held-out evaluation pass.

        Every pass that starts from a fresh stream samples game e's turn t with the same key
        whatever the training history (RL steps taken, earlier evaluations, the arm), so arms
        of one seed are compared on common random numbers: a paired difference then comes
        from the weights (or the prompt's skill), not from each arm's own sampling noise.
        Before 2026-12-06 the evaluation drew from the training counter: an SFT arm and an arm
        one RL step (lr 1e-5) later differed in 36 of 134 ALFWorld games (campaign 17,
        ``benchmarks/results/learning/campaign_2026-12-06e``). The training counter is not
        moved. Returns a new :class:`PolicySampler`; its time/token tallies start at 0."""
        return PolicySampler(self.sampler, self.tokenizer, self.get_params, self.seed, self.temperature,
                             call_offset=EVAL_CALL_OFFSET)

    def reserve_calls(self, n: int) -> int:
        """Reserve ``n`` counter values for keyed calls (:class:`TurnSampler`); returns the
        first. Unkeyed calls never use them."""
        if n < 1:
            raise ValueError(f"reserve at least one call, got {n}")
        base = self.calls
        self.calls = base + int(n)
        return base

    def encode(self, messages: Sequence[dict]) -> list[int]:
        return encode_conversation(self.tokenizer, messages)

    def encode_batch(self, conversations: Sequence[Sequence[dict]]) -> list[list[int]]:
        """:meth:`encode` of many conversations in one batched tokenizer call (same ids)."""
        return encode_conversations(self.tokenizer, conversations)

    def sample(self, prompts: Sequence[Sequence[int]], *, objective: str, episodes: Sequence[int],
               max_new_tokens: int, stop_strings: Sequence[str] = (), prefix: str = "",
               temperature: float | None = None,
               keys: Sequence[tuple[int, int]] | None = None) -> list[Generation]:
        """One batched sampler call; returns one ``Generation`` per prompt (text = prefix + completion).

        ``keys``: None (the call takes the next counter value; row r keys on (value, r)), or
        one (step, row) pair per prompt used as given (the counter does not move; reserve
        the step words with :meth:`reserve_calls`).
        Raises ValueError naming the row, its episode and the cache budget when a prompt is
        too long for the sampler (before anything runs).
        """
        if not prompts:
            return []
        t0 = time.perf_counter()
        sp = SamplingParams(temperature=self.temperature if temperature is None else float(temperature),
                            max_new_tokens=int(max_new_tokens), stop_strings=tuple(stop_strings))
        budget = self.sampler.max_len - sp.max_new_tokens
        for i, p in enumerate(prompts):
            if len(p) > budget:
                raise ValueError(
                    f"{objective} row {i} (episode {int(episodes[i])}) has a prompt of {len(p)} tokens "
                    f"but the cache budget is {budget} (model.max_len {self.sampler.max_len} - "
                    f"max_new_tokens {sp.max_new_tokens}); raise model.max_len or shorten the prompt")
        if keys is not None and len(keys) != len(prompts):
            raise ValueError(f"{len(keys)} keys for {len(prompts)} prompts")
        step = self.calls
        out = self.sampler.generate(self.get_params(), prompts, sp, seed=self.seed, step=step,
                                    row_keys=None if keys is None else list(keys))
        if keys is None:
            self.calls = step + 1
        self.n_calls += 1
        self.tokens_generated += int(out.lengths.sum())
        self.row_steps += int(out.stats.get("row_steps", int(out.stats.get("batch", len(prompts)))
                                            * int(out.stats.get("steps", 0))))
        dev_s = float(out.stats.get("seconds", 0.0))
        self.seconds += dev_s
        texts = out.texts
        if texts is None:
            texts = [self.tokenizer.decode(out.tokens[i, :int(out.lengths[i])].tolist(),
                                           skip_special_tokens=True) for i in range(len(prompts))]
        toks, lps = out.tokens.tolist(), out.logprobs.tolist()
        gens = []
        for i, p in enumerate(prompts):
            n = int(out.lengths[i])
            gens.append(Generation(prompt_ids=list(p), completion_ids=toks[i][:n],
                                   logprobs=lps[i][:n], objective=objective, episode=int(episodes[i]),
                                   stop_reason=out.stop_reason[i], text=prefix + texts[i]))
        self.host_seconds += time.perf_counter() - t0 - dev_s
        return gens


class TurnSampler:
    """``generate(prompts, ids)`` for :func:`skillax.agents.agent_loop.play_episodes` with
    per-(episode, turn) keys, so lock-step and overlapped play sample the same tokens.

    Reserves ``max_turns`` counter values at construction (one per turn: turn t of episode
    e keys on (base + t, e)); a turn >= ``max_turns`` is an error. Responses are
    ``{"text", "generation"}`` dicts (the ``Generation`` has ``episode`` = e).

    Args:
      policy: a :class:`PolicySampler`. max_turns: the play loop's step cap.
      max_new_tokens, stop_strings, objective, temperature: passed to ``policy.sample``.
      episode_ids: optional map from the play loop's episode index to the id stored on the
        generation and used in the key (default the index itself).
    """

    takes_ids = True

    def __init__(self, policy: PolicySampler, *, max_turns: int, max_new_tokens: int,
                 stop_strings: Sequence[str] = (), objective: str = "util",
                 temperature: float | None = None, episode_ids: Sequence[int] | None = None):
        self.policy = policy
        self.max_turns = int(max_turns)
        self.base = policy.reserve_calls(self.max_turns)
        self.kw = dict(objective=objective, max_new_tokens=int(max_new_tokens),
                       stop_strings=tuple(stop_strings), temperature=temperature)
        self.episode_ids = None if episode_ids is None else [int(e) for e in episode_ids]
        self.encode_seconds = 0.0

    def __call__(self, prompts: Sequence[Sequence[dict]], ids: Sequence[tuple[int, int]]) -> list[dict]:
        eps = [e if self.episode_ids is None else self.episode_ids[e] for e, _ in ids]
        for (_, t) in ids:
            if not 0 <= t < self.max_turns:
                raise ValueError(f"turn {t} outside the {self.max_turns} turns reserved")
        t0 = time.perf_counter()
        enc = self.policy.encode_batch(prompts)
        self.encode_seconds += time.perf_counter() - t0
        gens = self.policy.sample(enc, episodes=eps, keys=[(self.base + t, e) for e, (_, t) in zip(eps, ids)],
                                  **self.kw)
        return [{"text": g.text, "generation": g} for g in gens]
