"""Seeded fuzz: hostile model outputs through every parser, the repo and the library.

No exception may escape; every failure carries a non-empty reason; the repo stays valid (every
file on disk parses strictly and nothing is written outside the repository).
"""
import json
import random

import pytest

from skillax.skills.edits import edit_skill
from skillax.skills.evidence import TrajStep, Trajectory, render_trajectory, split_paragraphs
from skillax.skills.lenient import read_skill_md
from skillax.skills.library import SkillLibrary
from skillax.skills.parsers import parse_distil, parse_query, parse_rank
from skillax.skills.repo import SkillRepo, SkillRepoError
from skillax.skills.skill_md import SkillDoc, SkillFormatError, parse_skill_md, render_skill_md
from skillax.skills.tool_calls import apply_tool_calls, parse_tool_calls

N_CASES = 600
NAMES = ["../../etc/passwd", "a/b", "..", ".", "/abs", "C:\\x", "con", "-rf", "name\n", "x" * 65,
         "UPPER", "a--b", "~", "ok-name", "技能", "a b", "", "a\x00b", "skill-1", "\u2028", "nul\x7f"]
TAGS = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<rank>", "</rank>", "</query>",
        "<query>", "```json", "```", "---", "\n---\n", "{", "}", "[", "]", '"', "\\", ":"]
TEXTS = ["", " ", "Use the fridge.", "技能：先打开冰箱。", "🧪🔥", "\x00\x01\x1b[31m", "\ud800", "\r\n",
         "\u2028\u2029\ufeff", "- [R1] rule", "!!python/object/apply:os.system ['x']", "&a [*a]", "null"]


def huge(rng):
    return rng.choice(["A", "中", "\x07", "{", "<tool_call>"]) * rng.choice([5_000, 70_000, 300_000])


def text(rng):
    r = rng.random()
    if r < 0.05:
        return huge(rng)
    if r < 0.2:
        return "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randrange(0, 40)))
    return "".join(rng.choice(TEXTS + TAGS) for _ in range(rng.randrange(0, 5)))


def name(rng):
    return rng.choice(NAMES) if rng.random() < 0.7 else text(rng)[:70]


def tool_call(rng):
    fn = rng.choice(["insert_skill", "update_skill", "delete_skill", "drop_table", 3, None])
    args = {k: rng.choice([name(rng), text(rng), 5, None, [], {}]) for k in
            rng.sample(["name", "description", "body", "extra"], rng.randrange(0, 4))}
    if rng.random() < 0.5:
        args["name"] = name(rng)
    body = json.dumps({"name": fn, "arguments": args if rng.random() < 0.9 else json.dumps(args)})
    if rng.random() < 0.2:
        body = body[: rng.randrange(len(body) + 1)]
    return "<tool_call>" + body + ("</tool_call>" if rng.random() < 0.85 else "")


def edit(rng):
    obj = {"action": rng.choice(["CREATE", "UPDATE", "MERGE", "PRUNE", "NOOP", "noop", "DROP", 1])}
    if rng.random() < 0.7:
        obj["target"] = [rng.choice(["R1", "R2", "R3", "R9", "r2", "[R1]", "X", 1, None, "R0"])
                         for _ in range(rng.randrange(0, 4))]
    if rng.random() < 0.7:
        obj["content"] = rng.choice([text(rng), None, 3])
    s = json.dumps(obj)
    if rng.random() < 0.2:
        s = s[: rng.randrange(len(s) + 1)]
    return rng.choice(["", "<think>x</think>", "<think>", "</think>"]) + s + rng.choice(["", "", " tail", "}"])


def distil(rng):
    obj = {"subtasks": rng.choice([[{"name": text(rng), "description": "d", "status": rng.choice(
        ["completed", "incomplete", "done", None])}], "x", []]),
        "task_success": rng.choice([True, False, "true", "maybe"]),
        "action_lesson": rng.choice(["Open the fridge before looking for cold items.", text(rng), None]),
        "navigation_lesson": text(rng), "description_head": text(rng)}
    for k in rng.sample(list(obj), rng.randrange(0, 2)):
        del obj[k]
    s = json.dumps(obj)
    return rng.choice([s, f"```json\n{s}\n```", s[: len(s) // 2], "think " + s + " done"])


def skill_md(rng):
    fm = rng.choice([
        f"name: {json.dumps(name(rng))}\ndescription: {json.dumps(text(rng))}\n",
        f"name: {name(rng)}\ndescription: {text(rng)}\n",
        "name: a\ndescription: !!python/object/apply:os.system ['echo x']\n",
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\nname: a\ndescription: d\n",
        "name: a\ndescription: " + "[" * 20_000 + "\n",
        "name: a\ndescription: d\nmetadata: {k: " + text(rng)[:200] + "}\n",
        text(rng)])
    return rng.choice(["---\n", "\ufeff---\r\n", "", "--- \n"]) + fm + rng.choice(["---\n", "", "--\n"]) + text(rng)


def deep_json(rng):
    d = rng.choice([1_000, 100_000])
    return rng.choice(["<tool_call>", "", "```json\n", "<rank>"]) + "[" * d + "{" + '"a":' * 10


RULES = ["Open the fridge first.", "Heat food in the microwave, never on the stove.", "技能：先检查台面。",
         "Check the drawer\nthen the shelf.", "- [R4] copied tag"]
GOOD_NAMES = ["cool-items", "heat-food", "skill-1", "ok-name", "clean-x"]


def good_edit(rng):
    """Well-formed edits (targets may or may not exist by the time they are applied)."""
    act = rng.choice(["CREATE", "UPDATE", "MERGE", "PRUNE", "NOOP"])
    ids = [f"R{i}" for i in range(1, 9)]
    obj = {"action": act, "target": {"CREATE": [], "NOOP": [], "UPDATE": [rng.choice(ids)],
                                     "MERGE": rng.sample(ids, 2), "PRUNE": [rng.choice(ids)]}[act]}
    if act in ("CREATE", "UPDATE", "MERGE"):
        obj["content"] = rng.choice(RULES)
    return f"<think>{rng.choice(TEXTS)}</think>\n" + json.dumps(obj, ensure_ascii=rng.random() < 0.5)


def good_tool_call(rng):
    fn = rng.choice(["insert_skill", "insert_skill", "update_skill", "delete_skill"])
    args = {"name": rng.choice(GOOD_NAMES)}
    if fn != "delete_skill":
        args["description"] = rng.choice(RULES)
        args["body"] = "\n".join(rng.sample(RULES, 2))
    return "<tool_call>\n" + json.dumps({"name": fn, "arguments": args}) + "\n</tool_call>"


def good_skill_md(rng):
    return (f"---\nname: {rng.choice(GOOD_NAMES + ['Title Case Name'])}\ndescription: "
            f"{rng.choice(RULES[:3])}\nlicense: MIT\n---\n{text(rng)}")


GENERATORS = [tool_call, edit, distil, skill_md, deep_json, text, good_edit, good_tool_call,
              good_skill_md,
              lambda rng: "".join(rng.choice([tool_call, edit, text])(rng) for _ in range(3))]


def _reason(x):
    assert isinstance(x, str) and x.strip(), x


@pytest.fixture(scope="module")
def outputs():
    rng = random.Random(20240601)
    outs = [rng.choice(GENERATORS)(rng) for _ in range(N_CASES)]
    assert len(outs) >= 500
    return outs


def test_fuzz_everything(outputs, tmp_path):
    rng = random.Random(7)
    root = tmp_path / "repo"
    repo = SkillRepo(root, durable=False)
    lib = SkillLibrary(tmp_path / "lib.db", capacity=50)
    skill = SkillDoc("fuzz-skill", "Rules under fuzz.", "- [R1] a\n- [R2] b\n- [R3] c\n")
    counts = {"edit_valid": 0, "tool_applied": 0, "lenient_ok": 0, "admitted": 0}
    for step, out in enumerate(outputs):
        # SKILL.md strict + lenient
        try:
            parse_skill_md(out)
        except SkillFormatError as e:
            _reason(e.reason)
        r = read_skill_md(out, dirname=rng.choice(NAMES))
        if r.ok:
            counts["lenient_ok"] += 1
            assert parse_skill_md(render_skill_md(r.doc)) == r.doc
        else:
            _reason(r.error)
        # Skill-alpha edits
        res = edit_skill(skill, out)
        if res.valid:
            counts["edit_valid"] += 1
            assert parse_skill_md(render_skill_md(res.skill)) == res.skill
            skill = res.skill
        else:
            _reason(res.reason)
            assert res.skill is skill
        # SkillOS tool calls + direct repo calls
        rep = apply_tool_calls(repo, out, step=step)
        assert rep.n_total == len(parse_tool_calls(out))
        assert 0.0 <= rep.r_fc() <= 1.0
        counts["tool_applied"] += rep.n_applied
        for c in rep.calls:
            if not c.applied:
                _reason(c.error)
        try:
            repo.insert(name(rng), out[:1100], out, step=step)
        except SkillRepoError as e:
            _reason(e.reason)
        # Skill1 parsers + library
        d = parse_distil(out)
        if not d.ok:
            _reason(d.reason)
        n = rng.randrange(0, 6)
        rk = parse_rank(out, n)
        assert sorted(rk.permutation) == list(range(n))
        if not rk.parsed_ok:
            _reason(rk.reason)
        q = parse_query(out)
        assert q.ok == bool(q.query) and (q.ok or q.reason)
        adm = lib.admit(d, rng.choice([0.0, 1.0]), q.query or "s", step=step)
        assert adm.status in ("inserted", "merged", "rejected")
        if adm.status == "rejected":
            _reason(adm.reason)
        counts["admitted"] += adm.admitted
        # evidence
        render_trajectory(Trajectory(out[:50], out, (TrajStep(out, out),) * 3, out[:100]))
        split_paragraphs(out[:10_000])
    # the repo is valid: in memory == on disk, every file strict, nothing outside
    assert repo.verify() == []
    reopened = SkillRepo(root)
    assert reopened.names() == repo.names()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lib.db", "lib.db-shm", "lib.db-wal", "repo"] \
        or sorted(p.name for p in tmp_path.iterdir()) == ["lib.db", "repo"]
    for p in root.rglob("*"):
        assert p.resolve().is_relative_to(root.resolve())
        if p.name == "SKILL.md":
            parse_skill_md(p.read_text(encoding="utf-8"))
    log = repo.read_changelog()
    assert all(e["applied"] or e["error"] for e in log)
    lib.export_skill_md(tmp_path / "export")
    for p in (tmp_path / "export").glob("*/SKILL.md"):
        parse_skill_md(p.read_text(encoding="utf-8"))
    # the generator reached the success paths too, not only rejections
    assert counts["edit_valid"] > 10 and counts["tool_applied"] > 5 and counts["lenient_ok"] > 10 \
        and counts["admitted"] >= 1, counts
