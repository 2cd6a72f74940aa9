"""SFT warm-start data for the Skill-alpha editor: chat transcripts of edit decisions.

Paper: SFT on teacher-synthesised edit trajectories (DeepSeek-V4-Pro; 3 epochs, lr 5e-6,
warmup 0.05, cosine). Two teachers, both walking the *same* evidence stream the RL editor
reads and applying their own edits as they go (so every prompt shows the skill the teacher
built so far):

* :class:`RuleTeacher` (embedded default, deterministic): derives each edit from the expert
  trajectories visible in the chunk (the rendered ``... | expert]`` units; steps as the
  editor sees them, instance numbers removed):
    1. PRUNE rules that are not about any task family of the stream (misleading content);
    2. MERGE when two or more rules cover the chunk's family;
    3. CREATE ``"<family>: <expert plan>"`` when no rule covers the family;
    4. UPDATE the family's rule when the chunk's expert plan is not in it yet (the rule keeps
       the two most recent plans, joined by " OR ");
    5. NOOP otherwise.
  To show PRUNE and MERGE, episode e starts from z_0 plus (e % 3 == 1) misleading rules or
  (e % 3 == 2) a duplicated family rule, chosen with ``random.Random(seed + e)``.
* :func:`teacher_transcripts` (OpenAI-compatible teacher when configured): the teacher
  answers the editor prompts; only valid edits are kept (and applied).

Each transcript is ``{"messages": [system, user, assistant], "meta": {...}}`` where system +
user are exactly the RL editor prompt (:func:`prompts.editor_messages` within the same token
budget) and the assistant turn is ``"<think>\\n" + reasoning + "\\n</think>\\n" + JSON`` --
what the editor writes during RL (the default RL prompt has no pre-fill, see ``prompts``).
"""
from __future__ import annotations

import json
import random
import re
from typing import Sequence

from skillax.methods.skill_alpha import prompts
from skillax.skills.edits import EditAction, apply_edit, parse_edit
from skillax.skills.rules import make_rule_body, rules_of, with_rules
from skillax.skills.skill_md import SkillDoc

MISLEADING_RULES = (
    "Always type 'look' five times before any other action.",
    "Never open containers; objects are always in plain sight.",
    "Ignore the task description and explore randomly.",
    "Repeat the last action whenever nothing happens.",
)
_NUM = re.compile(r"\s+\d+\b")
_STEP = re.compile(r"^Step \d+: > (.*)$")
_HEAD = re.compile(r"^Task \[(.+?) \| expert\]: ")


def generalise(action: str) -> str:
    """Instance numbers removed: ``"take egg 1 from countertop 2"`` -> ``"take egg from countertop"``."""
    return " ".join(_NUM.sub("", " " + action).split())


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
    """Deterministic edit teacher over a stream whose families are ``families``."""

    def __init__(self, families: Sequence[str]):
        self.families = tuple(families)

    def family_rules(self, skill: SkillDoc, family: str) -> list:
        return [r for r in rules_of(skill).rules if r.text.startswith(f"{family}: ")]

    def foreign_rules(self, skill: SkillDoc) -> list:
        return [r for r in rules_of(skill).rules if not any(r.text.startswith(f"{f}: ") for f in self.families)]

    def decide(self, skill: SkillDoc, family: str, units: Sequence[str]) -> tuple[str, EditAction]:
        """(reasoning, action) for one chunk (module docstring)."""
        foreign = self.foreign_rules(skill)
        if foreign:
            ids = tuple(r.label for r in foreign)
            return (f"{', '.join(ids)} do not describe any task in the evidence and would mislead the worker.",
                    EditAction("PRUNE", ids))
        mine = self.family_rules(skill, family)
        plans = expert_plans(units)
        if len(mine) >= 2:
            variants = []
            for r in mine:
                for v in r.text[len(family) + 2:].split(" OR "):
                    if v not in variants:
                        variants.append(v)
            ids = tuple(r.label for r in mine)
            return (f"{', '.join(ids)} all cover {family}; one rule is enough.",
                    EditAction("MERGE", ids, f"{family}: {' OR '.join(variants[-2:])}"))
        if not plans:
            return "The evidence has no successful expert run to learn from.", EditAction("NOOP")
        if not mine:
            return (f"No rule covers {family} yet; add the expert's solution.",
                    EditAction("CREATE", (), f"{family}: {plans[0]}"))
        rule = mine[0]
        known = rule.text[len(family) + 2:].split(" OR ")
        new = [p for p in plans if p not in known]
        if new:
            kept = (known + [new[0]])[-2:]
            return (f"{rule.label} misses how the expert solved this {family} task.",
                    EditAction("UPDATE", (rule.label,), f"{family}: {' OR '.join(kept)}"))
        return f"{rule.label} already describes the expert's solution.", EditAction("NOOP")


def assistant_text(think: str, action: EditAction) -> str:
    """Canonical assistant turn: ``<think>\\n``, reasoning, ``</think>``, one JSON object."""
    obj: dict = {"action": action.action}
    if action.target:
        obj["target"] = list(action.target)
    if action.content is not None:
        obj["content"] = action.content
    return f"{prompts.EDITOR_PREFIX}{think.strip()}\n</think>\n{json.dumps(obj, ensure_ascii=False)}"


def _prompt_messages(tokenizer, skill, item, max_prompt_tokens):
    ids, fit = prompts.fit_editor_prompt(tokenizer, skill, item.units, item.kind, max_prompt_tokens)
    if fit.over_budget or fit.truncations.get("prompt"):
        return None
    return prompts.editor_messages(skill, item.units[:fit.n_units], item.kind)


def initial_skill(z0: SkillDoc, episode: int, families: Sequence[str], seed: int) -> SkillDoc:
    """z_0 of teacher episode ``episode`` (module docstring)."""
    rng = random.Random(seed + episode)
    texts = [r.text for r in rules_of(z0).rules]
    if episode % 3 == 1:
        texts += rng.sample(MISLEADING_RULES, 2)
    elif episode % 3 == 2 and families:
        fam = rng.choice(list(families))
        texts += [f"{fam}: look -> inventory", f"{fam}: examine the room first"]
    return with_rules(z0, make_rule_body(texts))


def rule_transcripts(stream, z0: SkillDoc, tokenizer, *, episodes: int = 3, max_prompt_tokens: int = 8192,
                     seed: int = 0) -> tuple[list[dict], dict]:
    """Deterministic-teacher transcripts over ``episodes`` passes of the stream.

    Returns (transcripts, stats) with per-action counts. Raises ValueError if a teacher edit
    does not apply (a teacher bug is never trained on)."""
    families = sorted({it.family for it in stream.items})
    teacher = RuleTeacher(families)
    out, stats = [], {"skipped_prompts": 0}
    for e in range(episodes):
        skill = initial_skill(z0, e, families, seed)
        for item in stream.items:
            think, action = teacher.decide(skill, item.family, item.units)
            msgs = _prompt_messages(tokenizer, skill, item, max_prompt_tokens)
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
                        max_prompt_tokens: int = 8192, temperature: float = 0.7, max_tokens: int = 1024
                        ) -> tuple[list[dict], dict]:
    """Transcripts from an OpenAI-compatible teacher (any ``Worker``): valid edits only."""
    out, stats = [], {"invalid": 0, "errors": 0, "skipped_prompts": 0}
    for e in range(episodes):
        skill = z0
        for item in stream.items:
            msgs = _prompt_messages(tokenizer, skill, item, max_prompt_tokens)
            if msgs is None:
                stats["skipped_prompts"] += 1
                continue
            (c,) = worker.chat([msgs], temperature=temperature, max_tokens=max_tokens)
            if c.error is not None:
                stats["errors"] += 1
                continue
            p = parse_edit(c.text)
            res = apply_edit(skill, p.action) if p.ok else None
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
    if s.teacher == "rule":
        if not any("| expert]" in u for it in stream.items for u in it.units):
            raise ValueError("the rule teacher needs expert trajectories (setting='experience'); "
                             "use sft.teacher='openai' for document / reasoning")
        rows, stats = rule_transcripts(stream, z0, tokenizer, episodes=int(s.episodes),
                                       max_prompt_tokens=max_prompt_tokens, seed=int(cfg.seed))
    elif s.teacher == "openai":
        from skillax.methods.skill_alpha.setting import _openai

        rows, stats = teacher_transcripts(stream, z0, tokenizer, _openai(s.openai), episodes=int(s.episodes),
                                          max_prompt_tokens=max_prompt_tokens, temperature=float(s.temperature),
                                          max_tokens=int(s.max_tokens))
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
