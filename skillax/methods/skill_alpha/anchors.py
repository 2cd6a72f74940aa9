"""Anchored-query scorers: the frozen worker answers q_anc with a skill in context, a verifier
scores the answer (Skill-alpha's V_t; DESIGN.md §1.1).

Every scorer has one method, ``score(jobs) -> list[JobScore]``, where a job is
``(skill_context, anchor_task)`` (``skill_context`` from
:func:`skillax.methods.skill_alpha.prompts.skill_context`; "" = no skill). All jobs of a call
go to the worker together: one ``Worker.chat`` batch for single-turn queries, one batch per
lock-step play turn for games -- so every worker call of a training unit (control and all
edited skills, all k anchors) is batched.

* :class:`EnvScorer` -- experience-to-skill: the worker plays the anchored game (ALFWorld /
  TextWorld) with ``skillax.agents.agent_loop.play_episodes``; V = game success (``won``).
  A local worker samples turn t of episode e with the key (base + t, e) (base reserved per
  play call, the ``methods.common.policy.TurnSampler`` scheme), so lock-step and overlapped
  play (``overlap``) give the same episodes. With several processes (issue 21) each plays its
  contiguous block of a call's jobs and the trajectories are gathered (:meth:`EnvScorer.play`):
  the same episodes as one process playing them all. A held-out evaluation pass plays on
  :meth:`EnvScorer.evaluation_keys` instead: the worker's evaluation stream, one base for the
  whole pass and the caller's episode ids (common random numbers, ``evaluate`` module).
* :class:`ReasoningScorer` -- reasoning: one answer per question; V = the reasoning-gym scorer
  (or math-verify for AIME) through :class:`skillax.agents.envs.reasoning.ReasoningEnv`.
* :class:`RubricScorer` -- document-to-skill: one answer per question; V = the all-or-nothing
  rubric judge (:class:`skillax.agents.judges.RubricJudge`), rubrics in
  ``task.payload["rubrics"]``.

Failures are never scores: a worker completion with ``error`` set, a game that crashed
(``failed``) or a judge that gave no parsable verdict makes that job's ``JobScore.error``
non-None and ``score`` None. The unit that needed it is skipped (and counted), so a failure
can never turn into a wrong rollback reward.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from skillax.agents.envs.base import Task

QA_SYSTEM = "Answer the question. If a skill is given, follow its rules."


@dataclasses.dataclass(frozen=True)
class JobScore:
    """Verified score of one (skill, anchored query) run; ``score`` None iff ``error`` is set."""

    score: float | None
    error: str | None = None
    answer: str = ""


def play_skills(ctx: str) -> list[str]:
    """The skills list of the worker's play prompts for skill context ``ctx``
    (``prompts.skill_context``): the one document, or none for an empty context. What
    ``agent_loop.build_play_prompt`` renders at evaluation and in the play SFT of
    ``sft.play_search`` (:mod:`skillax.methods.skill_alpha.play_search`)."""
    return [ctx] if ctx.strip() else []


def qa_messages(skill_ctx: str, question: str, system: str = QA_SYSTEM) -> list[dict]:
    """Single-turn worker prompt: optional skill block, then the question."""
    block = f"Skill (rules to follow):\n{skill_ctx}\n\n" if skill_ctx.strip() else ""
    return [{"role": "system", "content": system}, {"role": "user", "content": f"{block}{question}"}]


@dataclasses.dataclass(frozen=True)
class PlayKeys:
    """The sampling keys of one held-out evaluation pass (:meth:`EnvScorer.evaluation_keys`).

    ``worker``: the frozen worker on its evaluation stream (``LocalWorker.evaluation_stream``).
    ``base``: the first of the ``max_steps`` turn words reserved on it (turn t of episode id e
    keys on (base + t, e) in every :meth:`EnvScorer.play` of the pass, whatever its chunk)."""

    worker: object
    base: int


class EnvScorer:
    """Worker plays the anchored game with the skill injected; score = ``won`` (in {0, 1}).

    Args:
      worker: a frozen :class:`~skillax.agents.workers.base.Worker`.
      env: registered environment name ("alfworld" | "textworld").
      env_kwargs: kwargs of the environment (e.g. ``max_steps``).
      n_workers: game processes of the pool (0 = in-process).
      play_cfg: :class:`~skillax.agents.agent_loop.PlayConfig` (skill caps, history).
      max_steps: step cap per anchored episode.
      temperature, max_tokens: worker sampling per play turn.
      overlap: play loop, 1 = lock-step | K >= 2 | "auto" (``play_episodes``).
    """

    def __init__(self, worker, env: str, *, env_kwargs: dict | None = None, n_workers: int = 0,
                 play_cfg=None, max_steps: int = 20, temperature: float = 0.0, max_tokens: int = 64,
                 overlap: int | str = 1):
        from skillax.agents.agent_loop import PlayConfig

        self.worker, self.env, self.env_kwargs = worker, env, dict(env_kwargs or {})
        self.n_workers, self.max_steps = int(n_workers), int(max_steps)
        self.play_cfg = play_cfg or PlayConfig(max_skills=1, max_skill_chars=6000)
        self.temperature, self.max_tokens = float(temperature), int(max_tokens)
        self.overlap = overlap
        self._pool = None
        self.jobs_run = 0

    def pool(self):
        if self._pool is None:
            from skillax.agents.envs import env_spec
            from skillax.agents.envs.runner import EnvPool

            self._pool = EnvPool(env_spec(self.env, **self.env_kwargs), self.n_workers, max_steps=self.max_steps)
        return self._pool

    def _generate(self, worker, prompts: list, keys=None) -> list[dict]:
        kw = {} if keys is None else {"keys": keys}
        outs = worker.chat(prompts, temperature=self.temperature, max_tokens=self.max_tokens,
                           stop=["</action>"], **kw)
        res = []
        for c in outs:
            text = c.text
            # The Worker API cuts the stop string; put the closing tag back for parse_action.
            if c.error is None and c.finish_reason == "stop" and "<action>" in text \
                    and "</action>" not in text[text.rfind("<action>"):]:
                text += "</action>"
            res.append({"text": text, "error": c.error})
        return res

    def evaluation_keys(self) -> PlayKeys | None:
        """The keys of one held-out evaluation pass: the worker's fresh evaluation stream
        (``LocalWorker.evaluation_stream``: a private counter from ``EVAL_CALL_OFFSET``, the
        training counter untouched) with ``max_steps`` turn words reserved on it once. None for
        a worker without one (an OpenAI-compatible endpoint: no sampling keys at all; its
        passes play unkeyed, as before). Every process gets the same keys (no collective)."""
        stream = getattr(self.worker, "evaluation_stream", None)
        if stream is None:
            return None
        worker = stream()
        return PlayKeys(worker, worker.reserve_calls(self.max_steps))

    def play(self, jobs: Sequence[tuple[str, Task]], *, episode_ids: Sequence[int] | None = None,
             keys: PlayKeys | None = None):
        """Trajectories of the worker on the jobs' tasks, in job order (one batch; keyed per
        (turn, episode) when the worker has ``reserve_calls``, module docstring).

        ``episode_ids``: the key id of each job's episode (default its index in ``jobs``).
        ``keys``: an evaluation pass's :class:`PlayKeys` (its worker and turn words; nothing is
        reserved here); None = the scorer's worker, ``max_steps`` words reserved per call (the
        training rollouts). Raises ValueError when ``episode_ids`` does not match ``jobs``.

        Several processes (issue 21): every process passes the same ``jobs`` (a collective);
        each plays its contiguous block (``collectives.share``) on its own pool, episode e
        keyed on its id in the whole call, and the trajectories are all-gathered in job
        order -- so the episodes are those of the 1-process call, and the turn words are
        reserved on every process, also one with no job."""
        from skillax import collectives
        from skillax.agents.agent_loop import play_episodes

        eids = list(range(len(jobs))) if episode_ids is None else [int(e) for e in episode_ids]
        if len(eids) != len(jobs):
            raise ValueError(f"{len(eids)} episode ids for {len(jobs)} jobs")
        if keys is None:
            worker, reserve = self.worker, getattr(self.worker, "reserve_calls", None)
            base = reserve(self.max_steps) if reserve is not None else None
        else:
            worker, base = keys.worker, keys.base
        lo, hi = collectives.share(len(jobs))
        mine = jobs[lo:hi]

        def generate(prompts, ids):
            keyed = None if base is None else [(base + t, eids[lo + e]) for e, t in ids]
            return self._generate(worker, prompts, keyed)
        trajs = play_episodes(self.pool(), [t for _, t in mine], generate, skills=[play_skills(c) for c, _ in mine],
                              cfg=self.play_cfg, max_steps=self.max_steps, overlap=self.overlap,
                              pass_ids=True) if mine else []
        return collectives.concat(collectives.allgather_objects(trajs))

    def score(self, jobs: Sequence[tuple[str, Task]]) -> list[JobScore]:
        if not jobs:
            return []
        self.jobs_run += len(jobs)
        out = []
        for tr in self.play(jobs):
            errs = [s.gen.get("error") for s in tr.steps if s.gen.get("error")]
            if tr.failed:
                out.append(JobScore(None, f"game failed: {tr.fail_reason}"))
            elif errs:
                out.append(JobScore(None, f"worker error: {errs[0]}"))
            else:
                out.append(JobScore(1.0 if tr.won else 0.0, answer="; ".join(s.action or "" for s in tr.steps)))
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


class ReasoningScorer:
    """Worker answers a reasoning task with the skill in context; score from the task's own
    scorer (reasoning-gym ``score_answer`` / math-verify), binary by default."""

    def __init__(self, worker, *, temperature: float = 0.0, max_tokens: int = 256,
                 binary: bool = True, system: str = QA_SYSTEM):
        from skillax.agents.envs.reasoning import ReasoningEnv

        self.worker, self.temperature, self.max_tokens, self.system = worker, float(temperature), int(max_tokens), system
        self.env = ReasoningEnv(binary_reward=binary)
        self.jobs_run = 0

    def score(self, jobs: Sequence[tuple[str, Task]]) -> list[JobScore]:
        if not jobs:
            return []
        self.jobs_run += len(jobs)
        convs = [qa_messages(ctx, self.env.reset(t)[0], self.system) for ctx, t in jobs]
        outs = self.worker.chat(convs, temperature=self.temperature, max_tokens=self.max_tokens)
        res = []
        for (_, t), c in zip(jobs, outs):
            if c.error is not None:
                res.append(JobScore(None, f"worker error: {c.error}"))
                continue
            self.env.reset(t)
            _, reward, _, _ = self.env.step(c.text)
            res.append(JobScore(float(reward), answer=c.text))
        return res

    def close(self) -> None:
        self.env.close()


class RubricScorer:
    """Worker answers a question over a document with the skill in context; the rubric judge
    grades it all-or-nothing (``task.payload["rubrics"]``). A judge that returns no valid
    verdict after its retries is a failure (JobScore.error), not a 0."""

    def __init__(self, worker, judge, *, temperature: float = 0.0, max_tokens: int = 256,
                 system: str = QA_SYSTEM):
        self.worker, self.judge = worker, judge
        self.temperature, self.max_tokens, self.system = float(temperature), int(max_tokens), system
        self.jobs_run = 0

    def score(self, jobs: Sequence[tuple[str, Task]]) -> list[JobScore]:
        from skillax.agents.judges import RubricItem

        if not jobs:
            return []
        self.jobs_run += len(jobs)
        for _, t in jobs:
            if not t.payload.get("rubrics"):
                raise ValueError(f"document task {t.id!r} has no payload['rubrics']")
        outs = self.worker.chat([qa_messages(ctx, t.goal, self.system) for ctx, t in jobs],
                                temperature=self.temperature, max_tokens=self.max_tokens)
        res: list[JobScore | None] = [None] * len(jobs)
        todo = []
        for i, c in enumerate(outs):
            if c.error is not None:
                res[i] = JobScore(None, f"worker error: {c.error}")
            else:
                todo.append(i)
        verdicts = self.judge.judge([RubricItem(jobs[i][1].goal, outs[i].text, list(jobs[i][1].payload["rubrics"]))
                                     for i in todo]) if todo else []
        for i, v in zip(todo, verdicts):
            if v.error is not None and v.error != "empty answer":
                res[i] = JobScore(None, f"judge failure: {v.error}", outs[i].text)
            else:
                res[i] = JobScore(float(v.score), answer=outs[i].text)
        return res  # type: ignore[return-value]

    def close(self) -> None:
        pass
