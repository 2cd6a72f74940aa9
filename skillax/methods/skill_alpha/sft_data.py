"""SFT warm-start data for the Skill-alpha editor: chat transcripts of edit decisions.

Paper: SFT on teacher-synthesised edit trajectories (DeepSeek-V4-Pro; 3 epochs, lr 5e-6,
warmup 0.05, cosine). Two teachers, both walking the *same* evidence stream the RL editor
reads and applying their own edits as they go (so every prompt shows the skill the teacher
built so far):

* :class:`RuleTeacher` (embedded default, deterministic): derives each edit from the expert
  solutions of the chunk's tasks -- the ``... | expert]`` units among the evidence, or, with
  ``evidence.source = "worker"``, the chunk's privileged ``teacher_units`` that the editor
  never sees (the paper's teacher is an LLM with its own knowledge of the task). Steps as
  the editor sees them, instance numbers removed:
    1. PRUNE rules that are not about any task family of the stream (misleading content);
    2. MERGE when two or more rules cover the chunk's family;
    3. CREATE ``"<family>: <expert plan>"`` when no rule covers the family;
    4. NOOP (``noop_covered``, config ``sft.noop_examples``) when every expert plan of the
       chunk has the same action skeleton ("go to -> take -> go to -> heat -> ...") as a
       plan the family's rule already holds: the rule covers the evidence at the level of
       the task type, which is what NOOP means ("the skill already covers the evidence");
    5. UPDATE the family's rule when the chunk's expert plan is not in it yet (the rule keeps
       the two most recent plans, joined by " OR ");
    6. NOOP otherwise.
  ``level`` (config ``sft.rule_level``): "instance" (default) writes the plan with the
  game's object and receptacle names; "type" writes it with the goal object as X and its
  destination as Y (issue 18: lessons at the level of a task type, like the hand-written
  skills), keeping where the object was found.
  To show PRUNE and MERGE, episode e starts from z_0 plus (e % 3 == 1) misleading rules or
  (e % 3 == 2) a duplicated family rule, chosen with ``random.Random(seed + e)``. Actions
  outside ``actions`` (config ``unit.actions``, the action-space ablations) are never
  written: their starting rules are not injected, and a NOOP the space lacks gives no
  transcript (the skill goes on unchanged).
* :func:`teacher_transcripts` (OpenAI-compatible teacher when configured): the teacher
  answers the editor prompts; only valid edits in the action space are kept (and applied).

Each transcript is ``{"messages": [system, user, assistant], "meta": {...}}`` where system +
user are exactly the RL editor prompt (:func:`prompts.editor_messages` within the same token
budget, system turn of the same action space) and the assistant turn is ``"<think>\\n" +
reasoning + "\\n</think>\\n" + JSON`` -- what the editor writes during RL (the default RL
prompt has no pre-fill, see ``prompts``).
"""
from __future__ import annotations

import json
import random
import re
from typing import Sequence

from skillax.methods.skill_alpha import prompts
from skillax.methods.skill_alpha.action_space import parse_actions
from skillax.skills.edits import ACTIONS, EditAction, apply_edit, parse_edit
from skillax.skills.rules import make_rule_body, rules_of, with_rules
from skillax.skills.skill_md import SkillDoc

MISLEADING_RULES = (
    "Always type 'look' five times before any other action.",
    "Never open containers; objects are always in plain sight.",
    "Ignore the task description and explore randomly.",
    "Repeat the last action whenever nothing happens.",
)
LEVELS = ("instance", "type")
TYPE_NOTE = " (X = the task's object, Y = where it must go)"
_NUM = re.compile(r"\s+\d+\b")
_STEP = re.compile(r"^Step \d+: > (.*)$")
_HEAD = re.compile(r"^Task \[(.+?) \| expert\]: ")
_TAKE = re.compile(r"^take (.+?) from ")
_MOVE = re.compile(r"^(?:move|put) (.+?) (?:to|in/on|in|on) (.+)$")


def generalise(action: str) -> str:
    """Instance numbers removed: ``"take egg 1 from countertop 2"`` -> ``"take egg from countertop"``."""
    return " ".join(_NUM.sub("", " " + action).split())


def abstract_plan(plan: str) -> str:
    """A generalised plan at the level of its task type: the first taken object becomes X and
    the destination of the last ``move`` becomes Y (whole words), e.g.
    ``"go to fridge -> take egg from fridge -> go to microwave -> heat egg with microwave ->
    go to diningtable -> move egg to diningtable"`` ->
    ``"go to fridge -> take X from fridge -> go to microwave -> heat X with microwave -> go to
    Y -> move X to Y"``. A plan without a ``take`` is returned unchanged."""
    acts = plan.split(" -> ")
    obj = next((m.group(1) for a in acts if (m := _TAKE.match(a))), None)
    if obj is None:
        return plan
    moves = [m.group(2) for a in acts if (m := _MOVE.match(a))]
    names = [(obj, "X")] + ([(moves[-1], "Y")] if moves and moves[-1] != obj else [])
    out = []
    for a in acts:
        for name, sym in names:
            a = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sym, a)
        out.append(a)
    return " -> ".join(out)


def skeleton(plan: str) -> str:
    """The plan's action verbs (``"go to -> take -> go to -> heat -> go to -> move"``)."""
    verbs = []
    for a in plan.split(" -> "):
        w = a.split()
        verbs.append(" ".join(w[:2]) if w[:2] == ["go", "to"] else (w[0] if w else ""))
    return " -> ".join(verbs)


def expert_plans(units: Sequence[str], max_steps: int = 10) -> list[str]:
    """Generalised plans (``"a -> b -> c"``) of the expert units among ``units``, in order."""
    plans = []
    for u in units:
        lines = u.splitlines()
        if not lines or not _HEAD.match(lines[0]):
            continue
        acts: list[str] = []
        for ln in lines[1:]:
            m = _STEP.match(ln)
            if m:
                g = generalise(m.group(1))
                if g and (not acts or acts[-1] != g):
                    acts.append(g)
        if acts:
            plans.append(" -> ".join(acts[:max_steps]))
    return plans


class RuleTeacher:
    """Deterministic edit teacher over a stream whose families are ``families`` (module
    docstring). ``actions``: the action space; ``noop_covered``: NOOP when the family rule
    already covers the chunk's plan skeletons; ``level``: "instance" | "type"."""

    def __init__(self, families: Sequence[str], actions: Sequence[str] = ACTIONS, noop_covered: bool = False,
                 level: str = "instance"):
        if level not in LEVELS:
            raise ValueError(f"sft.rule_level must be one of {LEVELS}, got {level!r}")
        self.families = tuple(families)
        self.actions = parse_actions(actions)
        self.noop_covered, self.level = bool(noop_covered), level

    def family_rules(self, skill: SkillDoc, family: str) -> list:
        return [r for r in rules_of(skill).rules if r.text.startswith(f"{family}")
                and r.text[len(family):].startswith((": ", TYPE_NOTE))]

    def foreign_rules(self, skill: SkillDoc) -> list:
        return [r for r in rules_of(skill).rules if not any(r.text.startswith(f"{f}") and r.text[len(f):].startswith(
            (": ", TYPE_NOTE)) for f in self.families)]

    def _head(self, family: str) -> str:
        return f"{family}{TYPE_NOTE}: " if self.level == "type" else f"{family}: "

    def _plans(self, text: str, family: str) -> list[str]:
        for head in (f"{family}{TYPE_NOTE}: ", f"{family}: "):
            if text.startswith(head):
                return text[len(head):].split(" OR ")
        return [text]

    def decide(self, skill: SkillDoc, family: str, units: Sequence[str]) -> tuple[str, EditAction]:
        """(reasoning, action) for one chunk (module docstring); ``units`` = the chunk's
        evidence units plus its teacher-only units."""
        foreign = self.foreign_rules(skill)
        if foreign and "PRUNE" in self.actions:
            ids = tuple(r.label for r in foreign)
            return (f"{', '.join(ids)} do not describe any task in the evidence and would mislead the worker.",
                    EditAction("PRUNE", ids))
        mine = self.family_rules(skill, family)
        plans = expert_plans(units)
        if self.level == "type":
            plans = list(dict.fromkeys(abstract_plan(p) for p in plans))
        head = self._head(family)
        if len(mine) >= 2 and "MERGE" in self.actions:
            variants = []
            for r in mine:
                for v in self._plans(r.text, family):
                    if v not in variants:
                        variants.append(v)
            ids = tuple(r.label for r in mine)
            return (f"{', '.join(ids)} all cover {family}; one rule is enough.",
                    EditAction("MERGE", ids, f"{head}{' OR '.join(variants[-2:])}"))
        if not plans:
            return "The evidence has no successful expert run to learn from.", EditAction("NOOP")
        if not mine:
            return (f"No rule covers {family} yet; add how such a task is solved.",
                    EditAction("CREATE", (), f"{head}{plans[0]}"))
        rule = mine[0]
        known = self._plans(rule.text, family)
        if self.noop_covered and {skeleton(p) for p in plans} <= {skeleton(k) for k in known}:
            return (f"{rule.label} already gives these steps for {family}; only the objects differ.",
                    EditAction("NOOP"))
        new = [p for p in plans if p not in known]
        if new:
            kept = (known + [new[0]])[-2:]
            return (f"{rule.label} misses how this {family} task was solved.",
                    EditAction("UPDATE", (rule.label,), f"{head}{' OR '.join(kept)}"))
        return f"{rule.label} already describes the expert's solution.", EditAction("NOOP")


def assistant_text(think: str, action: EditAction) -> str:
    """Canonical assistant turn: ``<think>\\n``, reasoning, ``</think>``, one JSON object."""
    obj: dict = {"action": action.action}
    if action.target:
        obj["target"] = list(action.target)
    if action.content is not None:
        obj["content"] = action.content
    return f"{prompts.EDITOR_PREFIX}{think.strip()}\n</think>\n{json.dumps(obj, ensure_ascii=False)}"


def _prompt_messages(tokenizer, skill, item, max_prompt_tokens, system: str = prompts.EDITOR_SYSTEM):
    ids, fit = prompts.fit_editor_prompt(tokenizer, skill, item.units, item.kind, max_prompt_tokens, system=system)
    if fit.over_budget or fit.truncations.get("prompt"):
        return None
    return prompts.editor_messages(skill, item.units[:fit.n_units], item.kind, system)


def initial_skill(z0: SkillDoc, episode: int, families: Sequence[str], seed: int,
                  actions: Sequence[str] = ACTIONS) -> SkillDoc:
    """z_0 of teacher episode ``episode`` (module docstring)."""
    rng = random.Random(seed + episode)
    texts = [r.text for r in rules_of(z0).rules]
    if episode % 3 == 1 and "PRUNE" in actions:
        texts += rng.sample(MISLEADING_RULES, 2)
    elif episode % 3 == 2 and families and "MERGE" in actions:
        fam = rng.choice(list(families))
        texts += [f"{fam}: look -> inventory", f"{fam}: examine the room first"]
    return with_rules(z0, make_rule_body(texts))


def rule_transcripts(stream, z0: SkillDoc, tokenizer, *, episodes: int = 3, max_prompt_tokens: int = 8192,
                     seed: int = 0, actions: Sequence[str] = ACTIONS, noop_covered: bool = False,
                     level: str = "instance") -> tuple[list[dict], dict]:
    """Deterministic-teacher transcripts over ``episodes`` passes of the stream.

    Returns (transcripts, stats) with per-action counts (``no_transcript`` counts teacher
    NOOPs the action space lacks). Raises ValueError if a teacher edit does not apply (a
    teacher bug is never trained on)."""
    actions = parse_actions(actions)
    families = sorted({it.family for it in stream.items})
    teacher = RuleTeacher(families, actions, noop_covered, level)
    system = prompts.editor_system(actions)
    out, stats = [], {"skipped_prompts": 0}
    for e in range(episodes):
        skill = initial_skill(z0, e, families, seed, actions)
        for item in stream.items:
            think, action = teacher.decide(skill, item.family, tuple(item.units) + tuple(item.teacher_units))
            if action.action not in actions:
                stats["no_transcript"] = stats.get("no_transcript", 0) + 1
                continue
            msgs = _prompt_messages(tokenizer, skill, item, max_prompt_tokens, system)
            res = apply_edit(skill, action)
            if not res.valid:
                raise ValueError(f"teacher edit {action} does not apply: {res.reason}")
            if msgs is None:
                stats["skipped_prompts"] += 1
            else:
                text = assistant_text(think, action)
                assert parse_edit(text).ok, text
                out.append({"messages": msgs + [{"role": "assistant", "content": text}],
                            "meta": {"episode": e, "chunk": item.index, "family": item.family,
                                     "action": action.action, "teacher": "rule"}})
                stats[action.action] = stats.get(action.action, 0) + 1
            skill = res.skill
    return out, stats


def teacher_transcripts(stream, z0: SkillDoc, tokenizer, worker, *, episodes: int = 1,
                        max_prompt_tokens: int = 8192, temperature: float = 0.7, max_tokens: int = 1024,
                        actions: Sequence[str] = ACTIONS) -> tuple[list[dict], dict]:
    """Transcripts from an OpenAI-compatible teacher (any ``Worker``): valid edits in the
    action space only."""
    actions = parse_actions(actions)
    system = prompts.editor_system(actions)
    out, stats = [], {"invalid": 0, "errors": 0, "skipped_prompts": 0}
    for e in range(episodes):
        skill = z0
        for item in stream.items:
            msgs = _prompt_messages(tokenizer, skill, item, max_prompt_tokens, system)
            if msgs is None:
                stats["skipped_prompts"] += 1
                continue
            (c,) = worker.chat([msgs], temperature=temperature, max_tokens=max_tokens)
            if c.error is not None:
                stats["errors"] += 1
                continue
            p = parse_edit(c.text)
            res = apply_edit(skill, p.action) if p.ok and p.action.action in actions else None
            if res is None or not res.valid:
                stats["invalid"] += 1
                continue
            text = assistant_text(p.action.think or "", p.action)
            out.append({"messages": msgs + [{"role": "assistant", "content": text}],
                        "meta": {"episode": e, "chunk": item.index, "family": item.family,
                                 "action": p.action.action, "teacher": "openai"}})
            stats[p.action.action] = stats.get(p.action.action, 0) + 1
            skill = res.skill
    return out, stats


def make_sft_data(cfg, stream, z0: SkillDoc, tokenizer, max_prompt_tokens: int) -> tuple[list[dict], dict]:
    """The configured teacher's transcripts and stats.

    ``sft.teacher = "rule"`` needs expert trajectories (experience setting); ``"openai"``
    works for every setting. Raises ValueError otherwise."""
    s = cfg.sft
    actions = parse_actions(cfg.unit.get("actions") or None)
    if s.teacher == "rule":
        if not any("| expert]" in u for it in stream.items for u in tuple(it.units) + tuple(it.teacher_units)):
            raise ValueError("the rule teacher needs expert trajectories (setting='experience'); "
                             "use sft.teacher='openai' for document / reasoning")
        rows, stats = rule_transcripts(stream, z0, tokenizer, episodes=int(s.episodes),
                                       max_prompt_tokens=max_prompt_tokens, seed=int(cfg.seed), actions=actions,
                                       noop_covered=bool(s.get("noop_examples", False)),
                                       level=str(s.get("rule_level", "instance")))
    elif s.teacher == "openai":
        from skillax.methods.skill_alpha.setting import _openai

        rows, stats = teacher_transcripts(stream, z0, tokenizer, _openai(s.openai, "sft"), episodes=int(s.episodes),
                                          max_prompt_tokens=max_prompt_tokens, temperature=float(s.temperature),
                                          max_tokens=int(s.max_tokens), actions=actions)
    else:
        raise ValueError(f"sft.teacher must be 'rule' or 'openai', got {s.teacher!r}")
    return rows, stats


def write_sft_data(cfg, stream, z0: SkillDoc, tokenizer, path, max_prompt_tokens: int,
                   rows: Sequence[dict] | None = None, stats: dict | None = None) -> dict:
    """Write transcripts (made here unless given) to ``path`` (JSONL); returns stats."""
    import pathlib

    if rows is None:
        rows, stats = make_sft_data(cfg, stream, z0, tokenizer, max_prompt_tokens)
    path = pathlib.Path(path)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    stats = {"transcripts": len(rows), "path": str(path), **stats}
    print("sft data:", json.dumps(stats))
    return stats


def edit_sft_warmstart(engine, cfg, rows: Sequence[dict]) -> dict:
    """``cfg.sft.steps`` SFT updates of the editor on transcripts (assistant tokens only, via
    ``render_with_masks``; the assistant turn opens with ``<think>\\n`` itself).
    Returns first / last NLL, transcripts and seconds."""
    import numpy as np

    from skillax.rl.data import make_iterator, sft_dataset
    from skillax.tokenizers.chat import render_with_masks

    if not rows:
        return {"skipped": "no transcripts"}
    tok = engine.tokenizer
    s = cfg.sft
    ds = sft_dataset(list(rows), lambda m: render_with_masks(tok, m, enable_thinking=True),
                     batch_size=int(s.batch_size), max_len=min(int(s.max_len), int(cfg.model.max_len)),
                     seed=int(cfg.seed),
                     pad_id=int(tok.pad_token_id or 0), drop_remainder=False)
    it = make_iterator(ds)
    micro = int(cfg.train.micro_batch)

    def batches():
        while True:
            b = {k: np.asarray(v) for k, v in next(it).items()}
            rows_, want = b["tokens"].shape[0], -(-b["tokens"].shape[0] // micro) * micro
            if rows_ < want:  # pad the last partial batch with empty rows (zero loss mask)
                b = {k: np.concatenate([v, np.zeros((want - rows_,) + v.shape[1:], v.dtype)]) for k, v in b.items()}
            yield b

    hist = engine.sft(batches(), lr=float(s.lr), steps=int(s.steps), warmup_ratio=float(s.warmup_ratio))
    return {"transcripts": len(rows), "steps": len(hist), "nll_first": hist[0]["nll"], "nll_last": hist[-1]["nll"],
            "seconds": sum(h["time_s"] for h in hist)}
