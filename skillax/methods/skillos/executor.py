"""The frozen SkillOS executor π_L: plays tasks with retrieved skills and judges its own episode.

Two back-ends behind one batched ``chat(conversations, max_tokens, stop) -> texts``:

* :class:`PolicyChat` -- a local frozen policy (a ``PolicySampler`` over a frozen copy of the
  initial weights: SmolLM2 as curator *and* executor in the embedded setting);
* :class:`WorkerChat` -- any :class:`~skillax.agents.workers.base.Worker` (an OpenAI-compatible
  endpoint such as vLLM serving Qwen3-8B, as in the paper).

Play (issue 17): with a local back-end every play turn samples with per-(turn, episode) keys
(the ``TurnSampler`` scheme of ``methods.common.policy``: turn t of episode e keys on
(base + t, e), base reserved per play call), so lock-step and overlapped play
(``Executor(overlap=K)``, ``agents.agent_loop.play_episodes``) give the same episodes; an
endpoint back-end has no keys. ``play(..., episode_ids=...)`` keys on the caller's episode ids
(SkillOS: the rollout index) instead of the position in the call, and ``judge`` does the same
with one reserved word, so several processes that each play a block of the episodes sample
what one process does (issue 21); both reserve their words also for an empty call.
``play(..., started=True)``: the caller already submitted the resets (``pool.start_batch``).

Held-out evaluation (common random numbers, ``skillos.evaluate``): :meth:`Executor.evaluation_stream`
is the executor on its policy's fresh evaluation stream (``PolicySampler.evaluation_stream``;
the training counter does not move), and the pass reserves its play and judge words on it once
and passes them to every call (``play(..., base=)``, ``judge(..., word=)``), so game g keys on
the same words in every chunk, condition and arm. An endpoint back-end has no keys: its
evaluation stream is the executor itself, unkeyed as before (out of the scheme).

Failures never raise out of :class:`Executor`: a prompt longer than the local model's
budget or a failed endpoint request yields the empty text, is counted in
``Executor.stats["errors"]``, and the play step parses no action (invalid, the episode most
likely fails) -- so an executor outage shows up in r_task, never as a crash.
"""
from __future__ import annotations

import collections
import copy
from typing import Sequence

from skillax.agents.agent_loop import PlayConfig, Trajectory, play_episodes
from skillax.agents.envs.base import Task
from skillax.methods.skillos.prompts import parse_self_judgement, self_judge_messages

ACTION_STOP = "</action>"


class PolicyChat:
    """Local frozen policy as a chat back-end.

    Args:
      policy: a ``skillax.methods.common.policy.PolicySampler`` (its temperature is used).
      max_len: the sampler's cache length; prompts with ``len + max_tokens > max_len`` are not
        generated (empty text, counted as an error).
    """

    def __init__(self, policy, max_len: int):
        self.policy = policy
        self.max_len = int(max_len)

    def reserve(self, n: int) -> int:
        """Reserve ``n`` key steps for keyed calls (``PolicySampler.reserve_calls``)."""
        return self.policy.reserve_calls(n)

    def evaluation_stream(self) -> "PolicyChat":
        """This back-end on ``policy.evaluation_stream()`` (a private counter from
        ``EVAL_CALL_OFFSET``; the training counter untouched), for one evaluation pass."""
        return PolicyChat(self.policy.evaluation_stream(), self.max_len)

    def chat(self, convs: Sequence[Sequence[dict]], max_tokens: int, stop: Sequence[str],
             stats: collections.Counter, keys: Sequence[tuple[int, int]] | None = None) -> list[str]:
        """``keys``: optional (step, row) sampler key per conversation (``PolicySampler.sample``)."""
        ids = self.policy.encode_batch(convs)
        ok = [i for i, p in enumerate(ids) if len(p) + max_tokens <= self.max_len]
        out = [""] * len(convs)
        stats["errors"] += len(convs) - len(ok)
        stats["too_long"] += len(convs) - len(ok)
        if ok:
            gens = self.policy.sample([ids[i] for i in ok], objective="executor", episodes=[-1] * len(ok),
                                      max_new_tokens=max_tokens, stop_strings=list(stop),
                                      keys=None if keys is None else [keys[i] for i in ok])
            for i, g in zip(ok, gens):
                out[i] = _restore_stop(g.text, stop, g.stop_reason == "stop")
        return out


class WorkerChat:
    """A :class:`~skillax.agents.workers.base.Worker` (OpenAI-compatible or local) as back-end."""

    def __init__(self, worker, temperature: float):
        self.worker = worker
        self.temperature = float(temperature)

    def chat(self, convs: Sequence[Sequence[dict]], max_tokens: int, stop: Sequence[str],
             stats: collections.Counter) -> list[str]:
        comps = self.worker.chat([list(c) for c in convs], temperature=self.temperature,
                                 max_tokens=int(max_tokens), stop=list(stop) or None)
        out = []
        for c in comps:
            if not c.ok:
                stats["errors"] += 1
                out.append("")
            else:  # OpenAI semantics cut the stop string: put it back so tags stay closed
                out.append(_restore_stop(c.text, stop, c.finish_reason == "stop"))
        return out


def _restore_stop(text: str, stop: Sequence[str], stopped: bool) -> str:
    if stopped and ACTION_STOP in stop and "<action>" in text and not text.rstrip().endswith(ACTION_STOP):
        return text + ACTION_STOP
    return text


class Executor:
    """π_L: batched play with skills in context + self-judged correctness.

    Args:
      backend: :class:`PolicyChat` or :class:`WorkerChat`.
      play_cfg: play prompt/loop knobs (:class:`~skillax.agents.agent_loop.PlayConfig`).
      action_tokens: max new tokens per play step. max_steps: extra episode cap (None: env's).
      self_judge: ``"executor"`` (ask the executor yes/no about its episode; the paper's
        self-judged 1_ξ) or ``"env"`` (use the environment's verdict: an oracle shortcut).
      judge_tokens: max new tokens of the yes/no answer.
      overlap: play loop, 1 = lock-step | K >= 2 | "auto" (``play_episodes``; same episodes
        with a local back-end, module docstring).
    ``stats`` counts ``calls`` (chat batches), ``requests`` (conversations), ``errors``,
    ``too_long``, ``judge_unparsed`` (self-judgements with neither yes nor no: taken as failure).
    """

    def __init__(self, backend, play_cfg: PlayConfig, *, action_tokens: int = 48, max_steps: int | None = None,
                 self_judge: str = "executor", judge_tokens: int = 8, overlap: int | str = 1):
        if self_judge not in ("executor", "env"):
            raise ValueError(f"self_judge must be 'executor' or 'env', got {self_judge!r}")
        self.backend = backend
        self.play_cfg = play_cfg
        self.action_tokens = int(action_tokens)
        self.max_steps = max_steps
        self.self_judge = self_judge
        self.judge_tokens = int(judge_tokens)
        self.overlap = overlap
        self.stats: collections.Counter = collections.Counter()

    def evaluation_stream(self) -> "Executor":
        """This executor (same knobs, same ``stats`` counter) on its back-end's evaluation
        stream (module docstring); an endpoint back-end (no ``evaluation_stream``): ``self``."""
        stream = getattr(self.backend, "evaluation_stream", None)
        if stream is None:
            return self
        ex = copy.copy(self)           # every knob, and the same ``stats`` object
        ex.backend = stream()
        return ex

    def turns(self, pool) -> int | None:
        """The play turns keyed per episode: ``max_steps``, else the pool's; None = unknown (unkeyed play)."""
        return self.max_steps or getattr(pool, "max_steps", None)

    def _chat(self, convs, max_tokens, stop, **kw) -> list[str]:
        self.stats["calls"] += 1
        self.stats["requests"] += len(convs)
        return self.backend.chat(convs, max_tokens, stop, self.stats, **kw)

    def play(self, pool, tasks: Sequence[Task], skills: Sequence[Sequence[str]], *,
             started: bool = False, episode_ids: Sequence[int] | None = None,
             base: int | None = None) -> list[Trajectory]:
        """One episode per task, each with its own skills list (lock-step or overlapped:
        ``overlap``; keyed per (turn, episode) with a local back-end, module docstring).
        ``episode_ids``: the id each episode's keys use (default its position in ``tasks``).
        ``base``: the first turn word, already reserved by the caller (an evaluation pass, for
        all its calls); None = reserve :meth:`turns` words here (also for no tasks; nothing is
        played then). Raises ValueError when ``episode_ids`` does not match ``tasks``."""
        turns = self.turns(pool)
        reserve = getattr(self.backend, "reserve", None)
        eids = list(range(len(tasks))) if episode_ids is None else [int(e) for e in episode_ids]
        if len(eids) != len(tasks):
            raise ValueError(f"{len(eids)} episode ids for {len(tasks)} tasks")
        if reserve is not None and turns:
            base = reserve(int(turns)) if base is None else int(base)

            def generate(prompts, ids):
                return self._chat(prompts, self.action_tokens, [ACTION_STOP],
                                  keys=[(base + t, eids[e]) for e, t in ids])
        else:
            def generate(prompts, ids):
                return self._chat(prompts, self.action_tokens, [ACTION_STOP])
        if not tasks:
            return []
        return play_episodes(pool, list(tasks), generate, skills=[list(s) for s in skills],
                             cfg=self.play_cfg, max_steps=self.max_steps, overlap=self.overlap,
                             pass_ids=True, started=started)

    def judge(self, trajs: Sequence[Trajectory], views: Sequence[str],
              episode_ids: Sequence[int] | None = None, word: int | None = None) -> list[bool]:
        """Self-judged correctness per episode (``self_judge`` mode); unparsable -> False.
        With a local back-end the answers are keyed on (one reserved word, episode id)
        (``episode_ids``, default the position; the word is reserved also for no episode,
        unless the caller passes the ``word`` it reserved: an evaluation pass)."""
        if self.self_judge == "env":
            return [bool(t.won) and not t.failed for t in trajs]
        reserve = getattr(self.backend, "reserve", None)
        kw = {}
        if reserve is not None:
            word = reserve(1) if word is None else int(word)
            eids = list(range(len(trajs))) if episode_ids is None else [int(e) for e in episode_ids]
            kw = {"keys": [(word, e) for e in eids]}
        if not trajs:
            return []
        texts = self._chat([self_judge_messages(t.goal, v) for t, v in zip(trajs, views)],
                           self.judge_tokens, [], **kw)
        out = []
        for t in texts:
            v = parse_self_judgement(t)
            if v is None:
                self.stats["judge_unparsed"] += 1
            out.append(bool(v))
        return out
