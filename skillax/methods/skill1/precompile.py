"""The sampler calls of a Skill1 RL step, as ``engine.precompile.StageCalls`` (``model.precompile``).

One rollout makes four kinds of fresh calls (``methods.skill1.rollout``), each over this
process's E = ceil(tasks_per_step / processes) x group_size episodes:

* query: all E rows, one prompt per task (G rows each; two tasks may share a goal), stop
  ``</query>``, ``rollout.query_tokens``; prompt lengths exact from the training goals;
* rerank: the 1..E episodes with >= 2 candidates, stop ``</rank>``, ``rollout.rank_tokens``;
* play: one call per turn over the 1..E live episodes (any number of them may share a prompt),
  stop ``</action>``, ``rollout.action_tokens``;
* distil: all E rows, no stop string, ``rollout.distil_tokens``.

Prompt lengths other than the query's depend on what the games print, so they are bounded by
rendering the stage's prompt through the policy's tokenizer: the shortest with every variable
field empty, the longest with every capped field (``config.play``'s character caps, the
history, ``rollout.top_k`` candidates, ``rollout.distil_prompt_chars``) filled with ALFWorld-like
room text (:data:`FILLER`). The upper bound is an estimate, not a
bound: an admissible action longer than :data:`ACTION_CHARS` or text denser than the filler
can exceed it (such a call builds late, as before).
"""

from __future__ import annotations

from typing import Sequence

from skillax.agents.agent_loop import PlayConfig, build_play_prompt
from skillax.engine.precompile import StageCalls
from skillax.engine.sampling import SamplingParams, sampling_mode
from skillax.engine.sampler import encode_conversation
from skillax.methods.skill1 import prompts
from skillax.methods.skill1.rollout import RolloutConfig

FILLER = "On the countertop 2, you see a apple 1, a bread 1, and a mug 3. "
ACTION_CHARS = 32       # characters of one admissible action in the longest play prompt ("take mug 3 from countertop 2")
HEAD_CHARS = 200        # characters of a candidate skill's description head (rerank prompt)


def fill(chars: int) -> str:
    """``chars`` characters of :data:`FILLER` text (the longest prompts' content)."""
    return (FILLER * (chars // len(FILLER) + 1))[:chars]


def play_tokens(tokenizer, goals: Sequence[str], play: PlayConfig, max_steps: int) -> tuple[int, int]:
    """(shortest, longest) play prompt in tokens: the shortest goal with no observation, history,
    admissible action or skill; the longest goal with every capped field full (module docstring)."""
    short, long_ = min(goals, key=len), max(goals, key=len)
    lo = build_play_prompt(short, "", [], [], [], 0, play)
    hist = [(fill(play.max_history_obs_chars), fill(play.max_action_chars))] * max(play.history_k, 1)
    adm = [fill(ACTION_CHARS)] * (play.max_admissible or 50)
    hi = build_play_prompt(long_, fill(play.max_obs_chars), hist, adm, [fill(play.max_skill_chars)] * play.max_skills,
                           max_steps - 1, play)
    return len(encode_conversation(tokenizer, lo)), len(encode_conversation(tokenizer, hi))


def stage_calls(cfg, tokenizer, goals: Sequence[str], play: PlayConfig, rollout: RolloutConfig,
                processes: int = 1) -> list[StageCalls]:
    """The :class:`StageCalls` of one Skill1 RL step (module docstring) for ``cfg``
    (tasks_per_step, group_size, temperature), the training ``goals`` and the rollout's
    ``play`` / ``rollout`` settings (its ablation: no query / rerank without selection or
    retrieval, no distil unless ``rollout.distil == "policy"``). Raises ValueError on no goals."""
    if not goals:
        raise ValueError("no training goals to bound the prompts with")
    G = int(cfg.group_size)
    tasks = -(-int(cfg.tasks_per_step) // max(int(processes), 1))
    E = tasks * G
    E_lo = max(int(cfg.tasks_per_step) // max(int(processes), 1), 1) * G   # collectives.share: uneven blocks
    mode = sampling_mode(SamplingParams(temperature=float(cfg.temperature)))
    short, long_ = min(goals, key=len), max(goals, key=len)
    out = [StageCalls("play", (1, E), (1, E), play_tokens(tokenizer, goals, play, rollout.max_steps),
                      rollout.action_tokens, True, mode)]
    if rollout.use_retrieval and rollout.selection:
        q = [len(prompts.query_prompt(tokenizer, g)) for g in set(goals)]
        out.append(StageCalls("query", (E_lo, E), (1, tasks), (min(q), max(q)), rollout.query_tokens, True, mode))
        lo = len(prompts.rerank_prompt(tokenizer, short, [("", "")] * 2))
        hi = len(prompts.rerank_prompt(tokenizer, long_, [(fill(HEAD_CHARS), fill(160))] * max(rollout.top_k, 2)))
        out.append(StageCalls("rerank", (1, E), (1, E), (lo, hi), rollout.rank_tokens, True, mode))
    if rollout.distil == "policy":
        steps = [(fill(ACTION_CHARS), fill(prompts.OBS_CHARS))] * rollout.max_steps
        lo = len(prompts.distil_prompt(tokenizer, short, [], False, rollout.distil_prompt_chars))
        hi = len(prompts.distil_prompt(tokenizer, long_, steps, True, rollout.distil_prompt_chars))
        out.append(StageCalls("distil", (E_lo, E), (1, E), (lo, hi), rollout.distil_tokens, False, mode))
    return out


def precompile_step(engine, cfg, goals: Sequence[str], play: PlayConfig, rollout: RolloutConfig,
                    processes: int = 1) -> dict:
    """``engine.precompile_sampler`` with this step's :func:`stage_calls` (built only when
    ``model.precompile`` is on), one printed line when it built; returns its metrics ({} when off).
    The Skill1 loop and ``benchmarks/rl_loop.py`` call it before their first step."""
    pre = engine.precompile_sampler(lambda: stage_calls(cfg, engine.tokenizer, goals, play, rollout, processes))
    if pre:
        print(f"precompiled {pre['compile/precompiled']} of {pre['compile/precompile_shapes']} sampling programs "
              f"in {pre['compile/precompile_s']:.1f} s", flush=True)
    return pre
