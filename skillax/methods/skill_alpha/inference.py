"""Skill-alpha inference: read an evidence stream, edit step by step, write z_T as a SKILL.md
folder with its edit history (Skill-alpha paper: "推理时...顺序读证据、逐步编辑、最后输出 z_T").

No reward and no worker here: one editor sample per chunk, applied to the current skill
(``skillax.skills.edits.edit_skill``). An invalid output leaves the skill unchanged and is
recorded as such. A chunk whose prompt cannot fit (the skill alone exceeds the budget) is
recorded as skipped.

Output folder ``<out>/<name>/``:

* ``SKILL.md`` -- z_T through the Agent Skills export gate (``skills.spec.export_skills``:
  spec-valid, a flat string ``metadata`` with the run's provenance and, per rule, the evidence
  chunk and edit action that last wrote it: ``rule-R3: chunk 5 UPDATE (step 5)``, ``z0`` for a
  rule that came with z_0; ``skills.spec.rule_provenance``);
* ``changelog.jsonl`` -- one record per chunk: ``step``, ``chunk``, ``family``, ``action``
  (or null), ``target``, ``before`` ({rule id: text before the edit} for the targets),
  ``after`` ({rule id: text after} for the created / updated / merged rule), ``valid``,
  ``reason`` (why invalid / skipped), ``output`` (the editor's raw text);
* ``CHANGELOG.md`` -- the same history, human-readable.
"""
from __future__ import annotations

import collections
import json
import pathlib
from typing import Sequence

from skillax.methods.skill_alpha import prompts
from skillax.methods.skill_alpha.action_space import edit_in_space
from skillax.skills.edits import ACTIONS
from skillax.skills.repo import atomic_write_text
from skillax.skills.rules import rules_of
from skillax.skills.skill_md import SkillDoc


def edit_record(step: int, item, before: SkillDoc, res, output: str) -> dict:
    """Changelog record of one edit (module docstring) from the skill before and the EditResult."""
    old = {r.label: r.text for r in rules_of(before).rules}
    new = {r.label: r.text for r in rules_of(res.skill).rules}
    act = res.action
    targets = list(act.target) if act else []
    after = {k: v for k, v in new.items() if old.get(k) != v} if res.valid else {}
    return {"step": step, "chunk": item.index, "family": item.family, "action": res.kind,
            "target": targets, "before": {t: old.get(t) for t in targets}, "after": after,
            "valid": bool(res.valid), "reason": res.reason, "output": output}


def infer(stream, editor, z0: SkillDoc, *, temperature: float = 0.0, max_new_tokens: int = 256,
          max_prompt_tokens: int = 8192, prefix: str = "",
          items: Sequence | None = None, actions: Sequence[str] = ACTIONS, token_budget: int = 0,
          count_tokens=None) -> tuple[SkillDoc, list[dict], collections.Counter]:
    """Edit z0 through the stream's chunks in order.

    Args:
      stream: :class:`~skillax.methods.skill_alpha.evidence_stream.EvidenceStream`.
      editor: a ``PolicySampler`` (the trained editor).
      z0: initial skill. temperature: editor sampling temperature (0 = greedy).
      items: a subset / order of ``stream.items`` (default all).
      actions: the action space (``config.unit.actions``): the prompt offers only these and
        any other action is recorded as invalid (skill unchanged).
      token_budget / count_tokens: the skill's token budget (``skill.token_budget``; 0 = off):
        an edit that would push z over it is recorded as invalid (``action_space.restrict_budget``).
    Returns (z_T, changelog records, truncation counter).
    """
    z = z0
    history: list[dict] = []
    trunc: collections.Counter = collections.Counter()
    for step, item in enumerate(items if items is not None else stream.items):
        ids, fit = prompts.fit_editor_prompt(editor.tokenizer, z, item.units, item.kind, max_prompt_tokens,
                                             trunc, prefix, prompts.editor_system(actions))
        if fit.over_budget:
            history.append({"step": step, "chunk": item.index, "family": item.family, "action": None,
                            "target": [], "before": {}, "after": {}, "valid": False,
                            "reason": "skipped: prompt over budget", "output": ""})
            continue
        (gen,) = editor.sample([ids], objective="edit", episodes=[0], max_new_tokens=max_new_tokens,
                               prefix=prefix, temperature=temperature)
        res = edit_in_space(z, gen.text, actions, token_budget=token_budget, count_tokens=count_tokens)
        history.append(edit_record(step, item, z, res, gen.text))
        z = res.skill
    return z, history, trunc


def action_histogram(history: Sequence[dict]) -> dict[str, int]:
    """Counts of valid CREATE/UPDATE/MERGE/PRUNE/NOOP edits plus ``invalid`` and ``skipped``."""
    h = collections.Counter({a: 0 for a in ACTIONS})
    h.update(invalid=0, skipped=0)
    for rec in history:
        if rec["valid"]:
            h[rec["action"]] += 1
        elif str(rec.get("reason") or "").startswith("skipped"):
            h["skipped"] += 1
        else:
            h["invalid"] += 1
    return dict(h)


def _md(history: Sequence[dict], skill: SkillDoc) -> str:
    lines = [f"# Changelog of skill '{skill.name}'", "",
             f"{len(history)} evidence chunks; actions: {json.dumps(action_histogram(history))}", ""]
    for rec in history:
        head = f"## Step {rec['step']} (chunk {rec['chunk']}, {rec['family']}): "
        if not rec["valid"]:
            lines += [head + f"no change -- {rec['reason']}", ""]
            continue
        lines.append(head + f"{rec['action']} {', '.join(rec['target'])}".rstrip())
        for rid, text in rec["before"].items():
            lines.append(f"- before [{rid}]: {text}")
        for rid, text in rec["after"].items():
            lines.append(f"- after  [{rid}]: {text}")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_skill_folder(out_dir: str | pathlib.Path, skill: SkillDoc, history: Sequence[dict], *,
                       provenance: dict | None = None) -> pathlib.Path:
    """Write ``<out_dir>/<name>/{SKILL.md, changelog.jsonl, CHANGELOG.md}`` (module docstring;
    ``provenance``: run-level strings, ``skills.spec.provenance("skill_alpha", ...)``); returns
    the folder. ``<name>`` is the gate's name for the skill (``skill.name`` when valid).
    Raises ValueError when the gate cannot make z_T spec-valid (nothing is written then)."""
    from skillax.skills.spec import export_skills, rule_provenance

    per_rule = rule_provenance(history, [r.label for r in rules_of(skill).rules])
    rep = export_skills([skill], out_dir, provenance=provenance, per_skill={skill.name: per_rule}, quiet=True)
    if not rep.written:
        raise ValueError(f"z_T {skill.name!r} cannot be exported as a valid skill: {rep.skipped}")
    folder = pathlib.Path(out_dir) / rep.written[0]
    atomic_write_text(folder / "changelog.jsonl", "".join(json.dumps(r) + "\n" for r in history), durable=False)
    atomic_write_text(folder / "CHANGELOG.md", _md(history, skill), durable=False)
    return folder
