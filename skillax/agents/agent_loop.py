"""Host side of the play loop: prompts, action parsing, trajectories (pure text; no jax).

The policy plays one step per call: it sees the task, an injected skills block, the last
``k`` (observation, action) pairs, the current observation and the admissible actions, and
answers ``<think>...</think><action>...</action>``. This is the Skill1 play format (Skill1
paper; released code built on verl-agent's ALFWorld prompt, history of the last 2 steps,
an action is invalid when its tags are missing, invalid-action penalty 0.1) and the
executor format SkillOS uses with retrieved skills in context (DESIGN.md §1.2, §1.3).
Wording is kept short: the embedded default policy is a 135M model with ~400-token prompts.

The method supplies ``generate(prompts) -> responses``: ``prompts`` is a list of chat
message lists (``[{"role": "system"|"user", "content": str}]``); each response is a
string or a dict with a ``"text"`` key plus anything else the method wants kept on the
step (token ids, logprobs, ...), which lands in :attr:`Step.gen`. A generate that sets the
attribute ``takes_ids = True`` is called ``generate(prompts, ids)`` with one ``(episode,
turn)`` pair per prompt (episode = index in ``tasks``, turn = 0-based step of that episode),
so it can key each row's randomness on the pair instead of on the call
(``skillax.methods.common.policy.TurnSampler``): then which episodes share a call does not
change what any of them samples, and overlapped play equals lock-step play.

``play_episodes(..., overlap=K)`` with K >= 2 plays asynchronously on an
:class:`~skillax.agents.envs.runner.EnvPool`: an episode's next turn is generated as soon as
its observation is back and at least ``1/K`` of the live episodes are waiting (or nothing
else is in flight), while the workers step the others -- environment time hides behind
generation. Same prompts, same actions and same rewards as lock-step when generation is
keyed per (episode, turn) and the environments are deterministic.
"""
from __future__ import annotations

import collections
import dataclasses
import re
import time
from typing import Any, Callable, Sequence

from skillax.agents.envs.base import Task

SYSTEM_PROMPT = ("You are an agent in a text game. Each turn, think briefly in <think>...</think>, "
                 "then give exactly one action from the admissible list in <action>...</action>.")
#: the system prompt of ``PlayConfig(think=False)`` (ours: the action-only answer format)
ACTION_ONLY_SYSTEM_PROMPT = ("You are an agent in a text game. Each turn, give exactly one action from "
                             "the admissible list in <action>...</action>.")

INVALID_NO_THINK = "missing_think"
INVALID_NO_ACTION = "missing_action_tag"
INVALID_EMPTY = "empty_action"
INVALID_TOO_LONG = "action_too_long"

_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_ACTION = re.compile(r"<action>(.*?)</action>", re.S)


@dataclasses.dataclass
class PlayConfig:
    """Knobs of the play prompt and loop.

    history_k: past steps shown (Skill1: 2). max_admissible: admissible actions listed
    (None = all; the rest are summarised as "(+N more)"). max_obs_chars /
    max_history_obs_chars / max_skill_chars: character caps of the current observation,
    of each past observation and of each skill (truncated with "..."). max_skills: skills
    injected. The defaults keep a first-step prompt near 400 tokens for the embedded 135M
    default; GPU runs with 8B models raise them. require_think: a response without a
    <think>...</think> block is invalid. invalid_penalty: subtracted from the episode
    return once per invalid step (Skill1 released code: 0.1). penalize_env_invalid: also
    penalise well-formed actions the game rejected as not admissible. max_action_chars:
    longer actions are invalid. think: the answer format -- True (Skill1's): the prompt asks
    for ``<think>...</think><action>...</action>`` and SFT demonstrations write both (the
    think a copy of the action: ``methods.common.play_sft.expert_answer``); False (ours): the
    prompt asks for ``<action>...</action>`` alone, the demonstrations write only that, the
    default system prompt becomes :data:`ACTION_ONLY_SYSTEM_PROMPT`, and ``require_think``
    must be False (ValueError otherwise). Campaign 15's GRPO arm dropped the think block at RL
    step 15 and gained 22 points held out; an SFT warm start without it tells whether the
    format alone explains that (``benchmarks/results/learning/campaign_2026-12-04b``).
    """

    history_k: int = 2
    max_admissible: int | None = 20
    max_obs_chars: int = 400
    max_history_obs_chars: int = 150
    max_skill_chars: int = 400
    max_skills: int = 2
    require_think: bool = True
    invalid_penalty: float = 0.1
    penalize_env_invalid: bool = False
    max_action_chars: int = 200
    system_prompt: str = SYSTEM_PROMPT
    think: bool = True

    def __post_init__(self):
        if not self.think:
            if self.require_think:
                raise ValueError("PlayConfig(think=False) asks for <action> alone: set require_think=False "
                                 "(config: play.require_think=False) or every step counts as invalid")
            if self.system_prompt == SYSTEM_PROMPT:
                self.system_prompt = ACTION_ONLY_SYSTEM_PROMPT
        if self.history_k < 0 or self.max_skills < 0 or min(self.max_obs_chars, self.max_history_obs_chars) < 16:
            raise ValueError(f"invalid PlayConfig {self}")
        if self.max_admissible is not None and self.max_admissible < 1:
            raise ValueError(f"max_admissible must be None or >= 1, got {self.max_admissible}")


def parse_action(text: str, require_think: bool = True,
                 max_action_chars: int = 200) -> tuple[str | None, str | None]:
    """Extract the action from a policy response.

    Returns (action, invalid_reason). The action is the text of the first
    ``<action>...</action>`` block (after the think block when there is one), with
    whitespace collapsed. Invalid reasons:

    * ``"missing_action_tag"`` -- no complete action block: (None, reason);
    * ``"empty_action"`` -- the block is blank: (None, reason);
    * ``"action_too_long"`` -- longer than ``max_action_chars``: (None, reason);
    * ``"missing_think"`` -- ``require_think`` and no complete think block; the action is
      still returned (it is played, but the step is invalid and penalised).

    Text outside the tags is ignored. Example: ``"<think>go</think><action>go north</action>"``
    -> ``("go north", None)``.
    """
    if not isinstance(text, str):
        return None, INVALID_NO_ACTION
    think = _THINK.search(text)
    start = think.end() if think else 0
    m = _ACTION.search(text, start) or (_ACTION.search(text) if think else None)
    if m is None:
        return None, INVALID_NO_ACTION
    action = " ".join(m.group(1).split())
    if not action:
        return None, INVALID_EMPTY
    if len(action) > max_action_chars:
        return None, INVALID_TOO_LONG
    if require_think and think is None:
        return action, INVALID_NO_THINK
    return action, None


def _cap(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: max(0, n - 3)].rstrip() + "..."


def format_skills(skills: Sequence[str], cfg: PlayConfig) -> str:
    """The injected skills block ("" when there are none): numbered, each capped."""
    skills = [s for s in skills if s and s.strip()][: cfg.max_skills]
    if not skills:
        return ""
    return "Skills:\n" + "\n".join(f"[{i}] {_cap(s, cfg.max_skill_chars)}" for i, s in enumerate(skills, 1))


def format_admissible(admissible: Sequence[str], cfg: PlayConfig) -> str:
    """Admissible actions joined by "; ", capped at ``cfg.max_admissible`` ("help" dropped
    first when capping, since it never advances a task)."""
    acts = list(admissible)
    if cfg.max_admissible is not None and len(acts) > cfg.max_admissible:
        acts = [a for a in acts if a != "help"]
    if cfg.max_admissible is None or len(acts) <= cfg.max_admissible:
        return "; ".join(acts)
    return "; ".join(acts[: cfg.max_admissible]) + f"; (+{len(acts) - cfg.max_admissible} more)"


def build_play_prompt(goal: str, observation: str, history: Sequence[tuple[str, str]],
                      admissible: Sequence[str], skills: Sequence[str] = (), step: int = 0,
                      cfg: PlayConfig | None = None) -> list[dict[str, str]]:
    """Chat messages for one play step.

    Args:
      goal: task sentence. observation: current observation. history: all past
        (observation, action) pairs of the episode, oldest first; only the last
        ``cfg.history_k`` are shown. admissible: current admissible actions.
      skills: skill texts to inject (may be empty). step: index of this step (0-based).
    Returns ``[{"role": "system", ...}, {"role": "user", ...}]``.
    """
    cfg = cfg or PlayConfig()
    parts = [f"Task: {goal.strip()}"]
    sk = format_skills(skills, cfg)
    if sk:
        parts.append(sk)
    shown = list(history)[-cfg.history_k:] if cfg.history_k else []
    if shown:
        first = len(history) - len(shown) + 1
        lines = [f"[{first + j}] Obs: {_cap(o, cfg.max_history_obs_chars)}\nAction: {a}"
                 for j, (o, a) in enumerate(shown)]
        parts.append("Recent steps:\n" + "\n".join(lines))
    obs = observation.strip()
    if goal.strip() and obs.startswith(goal.strip()):  # TextWorld intros repeat the objective
        obs = obs[len(goal.strip()):].lstrip() or obs
    parts.append(f"Step {step + 1}. Observation: {_cap(obs, cfg.max_obs_chars)}")
    if admissible:
        parts.append("Admissible actions: " + format_admissible(admissible, cfg))
    parts.append("Answer: <think>...</think><action>...</action>" if cfg.think else "Answer: <action>...</action>")
    return [{"role": "system", "content": cfg.system_prompt}, {"role": "user", "content": "\n\n".join(parts)}]


@dataclasses.dataclass
class Step:
    """One play step. ``valid`` is the format check (:func:`parse_action`);
    ``env_invalid`` is the environment's verdict (empty/too long/not admissible)."""

    observation: str
    prompt: list[dict[str, str]]
    response: str
    action: str | None
    valid: bool
    invalid_reason: str | None = None
    env_invalid: bool = False
    reward: float = 0.0
    done: bool = False
    gen: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Trajectory:
    """One episode. ``reward`` is the terminal task reward r(tau) in {0, 1} (= ``won``);
    ``penalty`` is ``invalid_penalty`` x (number of penalised steps); ``score`` is the sum of
    environment rewards. ``token_ids`` / ``loss_mask`` (policy tokens 1, context 0) are
    filled by the method when it packs the episode for the trainer."""

    task_id: str
    goal: str
    skills: list[str] = dataclasses.field(default_factory=list)
    steps: list[Step] = dataclasses.field(default_factory=list)
    won: bool = False
    failed: bool = False
    fail_reason: str | None = None
    truncated: bool = False
    penalty: float = 0.0
    score: float = 0.0
    final_observation: str = ""
    token_ids: list[int] | None = None
    loss_mask: list[int] | None = None
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def reward(self) -> float:
        return 1.0 if self.won else 0.0

    @property
    def n_invalid(self) -> int:
        return sum(not s.valid for s in self.steps)

    def history(self) -> list[tuple[str, str]]:
        """(observation, action) pairs played so far ("" for a missing action)."""
        return [(s.observation, s.action or "") for s in self.steps]

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.update(n_steps=self.n_steps, reward=self.reward)
        return d


class _Play:
    """Per-episode bookkeeping shared by the lock-step and overlapped loops (so both build
    the same prompts and apply results the same way)."""

    def __init__(self, tasks, skills, cfg: PlayConfig):
        self.tasks, self.cfg = tasks, cfg
        self.trajs = [Trajectory(t.id, t.goal, skills[i]) for i, t in enumerate(tasks)]
        self.obs: list[str] = [""] * len(tasks)
        self.infos: list[dict] = [{} for _ in tasks]
        self.pending: dict[int, Step] = {}

    def start(self, i: int, obs: str, info: dict) -> bool:
        """Record episode i's reset; returns whether it is live."""
        self.obs[i], self.infos[i] = obs, info
        tr = self.trajs[i]
        if info.get("failed"):
            tr.failed, tr.fail_reason, tr.final_observation = True, info.get("fail_reason"), obs
            return False
        return True

    def turn(self, i: int) -> int:
        return len(self.trajs[i].steps)

    def prompt(self, i: int) -> list[dict[str, str]]:
        tr = self.trajs[i]
        return build_play_prompt(self.tasks[i].goal, self.obs[i], tr.history(),
                                 self.infos[i].get("admissible_commands") or [], tr.skills,
                                 self.turn(i), self.cfg)

    def respond(self, i: int, prompt, response) -> str:
        """Parse episode i's response; returns the action to play ("" when none parsed)."""
        text, gen = ((response, {}) if isinstance(response, str)
                     else (response["text"], {k: v for k, v in response.items() if k != "text"}))
        action, reason = parse_action(text, self.cfg.require_think, self.cfg.max_action_chars)
        self.pending[i] = Step(self.obs[i], prompt, text, action, reason is None, reason, gen=gen)
        return action or ""

    def observe(self, i: int, result) -> bool:
        """Apply episode i's step result; returns whether it goes on."""
        o, rew, done, info = result
        st = self.pending.pop(i)
        st.env_invalid, st.reward, st.done = bool(info.get("invalid")), float(rew), bool(done)
        tr = self.trajs[i]
        tr.steps.append(st)
        tr.score += st.reward
        if not st.valid or (self.cfg.penalize_env_invalid and st.env_invalid):
            tr.penalty += self.cfg.invalid_penalty
        self.obs[i], self.infos[i] = o, info
        if done:
            tr.won, tr.truncated = bool(info.get("won")), bool(info.get("truncated"))
            tr.failed, tr.fail_reason = bool(info.get("failed")), info.get("fail_reason")
            tr.final_observation = o
            return False
        return True

    def cap(self, i: int) -> None:
        """Episode i stopped by the loop's ``max_steps``."""
        self.trajs[i].truncated, self.trajs[i].final_observation = True, self.obs[i]

    def generate(self, generate, live: list[int], pass_ids: bool) -> list[str]:
        """Prompts of ``live``, one generate call, parsed actions (in ``live`` order)."""
        prompts = [self.prompt(i) for i in live]
        if pass_ids:
            responses = generate(prompts, [(i, self.turn(i)) for i in live])
        else:
            responses = generate(prompts)
        if len(responses) != len(live):
            raise ValueError(f"generate returned {len(responses)} responses for {len(live)} prompts")
        return [self.respond(i, p, r) for i, p, r in zip(live, prompts, responses)]


def play_episodes(pool, tasks: Sequence[Task], generate: Callable[..., list],
                  skills: Sequence[Sequence[str]] | None = None, cfg: PlayConfig | None = None,
                  max_steps: int | None = None, *, overlap: int | str = 1,
                  pass_ids: bool | None = None, started: bool = False) -> list[Trajectory]:
    """Play ``tasks`` to the end: in lock-step (one ``generate`` call per turn over every live
    episode) or overlapped (``overlap >= 2``, module docstring).

    Args:
      pool: an :class:`~skillax.agents.envs.runner.EnvPool` (lock-step: anything with
        ``reset_batch``/``step_batch``; overlapped: also ``start_batch``/``submit``/``poll``).
        tasks: one episode per task.
      generate: ``prompts -> responses`` or, with ``pass_ids``, ``(prompts, ids) ->
        responses`` (module docstring); called with live episodes' prompts only.
      skills: per-task list of skill texts (default none).
      max_steps: optional extra cap on steps (the environment/pool caps apply anyway).
      overlap: 1 = lock-step; K >= 2 = a call is made once >= 1/K of the live episodes wait
        for one (or nothing else is in flight); "auto" = K = 2 while a turn of environment
        work per worker (measured) exceeds a generate call's fixed cost (measured), else
        K = 1 -- lock-step where splitting a latency-bound call would cost more than it hides
        (``_overlapped.split``). On a pool without worker processes the environments run at
        submission: nothing to overlap.
      pass_ids: call ``generate(prompts, ids)``; default ``getattr(generate, "takes_ids",
        False)``. Without it, sampled (non-greedy) generation under ``overlap >= 2`` depends
        on which episodes share each call, which depends on timing.
      started: the caller already called ``pool.start_batch(tasks)`` (e.g. before its query
        / retrieval stage, so the resets overlap it); play collects those resets.
    Returns one :class:`Trajectory` per task, in order. A response without a parseable
    action plays the empty action (the game answers as to nothing and counts it invalid).
    """
    cfg = cfg or PlayConfig()
    skills = [list(s) for s in skills] if skills is not None else [[] for _ in tasks]
    if len(skills) != len(tasks):
        raise ValueError(f"{len(skills)} skill lists for {len(tasks)} tasks")
    if overlap != "auto" and (isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 1):
        raise ValueError(f"overlap must be an int >= 1 or 'auto', got {overlap!r}")
    if pass_ids is None:
        pass_ids = bool(getattr(generate, "takes_ids", False))
    play = _Play(tasks, skills, cfg)
    if overlap == 1:
        _lock_step(pool, play, generate, max_steps, pass_ids, started)
    else:
        _overlapped(pool, play, generate, max_steps, pass_ids, overlap, started)
    return play.trajs


def _started_resets(pool, n: int) -> list[tuple[str, dict]]:
    """The results of resets the caller submitted with ``pool.start_batch``."""
    got: dict = {}
    while len(got) < n:
        new = pool.poll(None)
        if not new:
            raise RuntimeError(f"started=True but only {len(got)} of {n} resets came back "
                               "(was pool.start_batch(tasks) called with these tasks?)")
        got.update(new)
    return [(got[i][0], got[i][3]) for i in range(n)]


def _lock_step(pool, play: _Play, generate, max_steps, pass_ids: bool, started: bool) -> None:
    n = len(play.tasks)
    resets = _started_resets(pool, n) if started else pool.reset_batch(play.tasks)
    live = [i for i, (o, info) in enumerate(resets) if play.start(i, o, info)]
    t = 0
    while live and (max_steps is None or t < max_steps):
        actions: list[str | None] = [None] * n
        for i, a in zip(live, play.generate(generate, live, pass_ids)):
            actions[i] = a
        results = pool.step_batch(actions)
        live, t = [i for i in live if play.observe(i, results[i])], t + 1
    for i in live:  # stopped by max_steps here
        play.cap(i)


def _overlapped(pool, play: _Play, generate, max_steps, pass_ids: bool, overlap,
                started: bool) -> None:
    """Asynchronous play: generate for the episodes whose observations are back while the
    pool steps the others (module docstring; ``overlap`` is K >= 2 or "auto")."""
    ready: set[int] = set()               # live episodes waiting for the policy
    flying = set(range(len(play.tasks)))  # episodes with a reset / step in the pool
    # generate-call durations: kept on the pool across calls when it has room for them
    call_s = getattr(pool, "policy_call_s", None)
    call_s = call_s if call_s is not None else collections.deque(maxlen=16)
    if not started:
        pool.start_batch(play.tasks)

    def take(results: dict) -> None:
        for i, (o, rew, done, info) in results.items():
            flying.discard(i)
            goes_on = play.start(i, o, info) if i not in play.pending else play.observe(i, (o, rew, done, info))
            if not goes_on:
                continue
            if max_steps is not None and play.turn(i) >= max_steps:
                play.cap(i)
                pool.end_episodes([i])
            else:
                ready.add(i)

    def split(n_live: int) -> bool:
        """auto: split the live episodes (K = 2) iff one turn of environment work per worker
        (median item time x live episodes / workers; resets while any are in flight) is
        longer than a generate call's fixed cost (estimated by the shortest of the recent
        calls: exact for latency-bound calls, an upper bound otherwise). Model: a call costs
        a + b * rows, a turn E per worker; lock-step a turn costs a + b N + E, two halves
        max(2a + b N, E): smaller iff a < E. Before any call or item is timed: split (the
        first call then overlaps the resets)."""
        resetting = any(i not in play.pending and not play.trajs[i].steps for i in flying)
        typical = getattr(pool, "typical_s", None)
        item_s = typical("reset" if resetting else "step") if typical else None
        if not call_s or item_s is None:
            return True
        workers = max(1, min(int(getattr(pool, "n_workers", 1)) or 1, n_live))
        return item_s * n_live / workers > min(list(call_s)[-8:])

    while flying or ready:
        take(pool.poll(0.0))
        n_live = len(flying) + len(ready)
        if not ready:
            go = False
        elif not flying:
            go = True
        else:
            k = (2 if split(n_live) else 1) if overlap == "auto" else overlap
            go = len(ready) * k >= n_live
        if go:
            batch = sorted(ready)
            ready.clear()
            t0 = time.perf_counter()
            actions = play.generate(generate, batch, pass_ids)
            call_s.append(time.perf_counter() - t0)
            pool.submit(dict(zip(batch, actions)))
            flying.update(batch)
        elif flying:
            got = pool.poll(None)
            if not got:
                raise RuntimeError(f"the pool returned nothing for episodes in flight {sorted(flying)}")
            take(got)
