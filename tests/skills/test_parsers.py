"""Skill1 parsers: distil JSON, rank permutation, query."""
import json

import pytest

from skillax.skills.parsers import Distil, Subtask, parse_distil, parse_query, parse_rank

DISTIL = {
    "subtasks": [{"name": "find apple", "description": "look on the counter", "status": "completed"},
                 {"name": "heat apple", "description": "use microwave", "status": "Incomplete"}],
    "task_success": True,
    "action_lesson": "Open the microwave before heating.",
    "navigation_lesson": "Apples are usually on the countertop.",
    "description_head": "Heating food in ALFWorld",
}


def test_distil_fenced_block():
    text = f"<think>let me reflect {{not json}}</think>Here:\n```json\n{json.dumps(DISTIL)}\n```\nDone {{x}}"
    p = parse_distil(text)
    assert p.ok and p.reason is None
    assert p.distil == Distil((Subtask("find apple", "look on the counter", "completed"),
                               Subtask("heat apple", "use microwave", "incomplete")), True,
                              "Open the microwave before heating.", "Apples are usually on the countertop.",
                              "Heating food in ALFWorld")
    assert p.distil.strategy_text() == ("Action lesson: Open the microwave before heating.\n"
                                        "Navigation lesson: Apples are usually on the countertop.")


def test_distil_brace_span_and_variants():
    d = dict(DISTIL, task_success="false", navigation_lesson=None, extra="ignored")
    p = parse_distil("Reflection... " + json.dumps(d) + " end")
    assert p.ok and p.distil.task_success is False and p.distil.navigation_lesson == ""


@pytest.mark.parametrize("text,reason", [
    ("nothing here", "no JSON object found"),
    ("```json\n{bad}\n```", "invalid JSON in ```json block"),
    ("{ broken", "no JSON object found"),
    ("{'single': 'quotes'}", "invalid JSON in {...} span"),
    ("[1, 2]", "no JSON object found"),
    (json.dumps({k: v for k, v in DISTIL.items() if k != "action_lesson"}), "missing field(s) ['action_lesson']"),
    (json.dumps(dict(DISTIL, subtasks="x")), "subtasks must be a list"),
    (json.dumps(dict(DISTIL, subtasks=[{"name": "a", "description": "b", "status": "done"}])),
     "subtasks[0].status 'done' not in ('completed', 'incomplete')"),
    (json.dumps(dict(DISTIL, subtasks=[{"name": "a", "status": "completed"}])), "subtasks[0].description must be"),
    (json.dumps(dict(DISTIL, task_success="yes")), "task_success must be a boolean"),
    (json.dumps(dict(DISTIL, action_lesson=3)), "action_lesson must be a string"),
    (json.dumps(dict(DISTIL, action_lesson="x" * 4001)), "action_lesson has 4001 characters"),
    ("```json\n[1, 2]\n```", "distil JSON must be an object, got list"),
])
def test_distil_failures(text, reason):
    p = parse_distil(text)
    assert not p.ok and reason in p.reason, p.reason


@pytest.mark.parametrize("text,n,perm,ok,dropped", [
    ("<rank>3,1,2</rank>", 3, (2, 0, 1), True, 0),
    ("<rank> 2 </rank>", 3, (1, 0, 2), True, 0),              # unranked appended in order
    ("<rank>2, 9, 2, x, 0, 1</rank>", 3, (1, 0, 2), True, 4),  # invalid and duplicate dropped
    ("<rank>3 1</rank>", 4, (2, 0, 1, 3), True, 0),
    ("<RANK>1,2</RANK>", 2, (0, 1), True, 0),
    ("<rank>none</rank>", 1, (0,), True, 0),
    ("<rank>None</rank>", 0, (), True, 0),
    ("<rank>none</rank>", 3, (0, 1, 2), False, 0),
    ("<rank>9,8</rank>", 3, (0, 1, 2), False, 2),
    ("<rank></rank>", 3, (0, 1, 2), False, 0),
    ("3,1,2", 3, (0, 1, 2), False, 0),
    ("<rank>3,1,2", 3, (0, 1, 2), False, 0),
    ("<think><rank>1,2</rank></think><rank>2,1</rank>", 2, (1, 0), True, 0),
    ("<rank>" + "9" * 5000 + ",1</rank>", 2, (0, 1), True, 1),
    ("<rank>１,2</rank>", 2, (1, 0), True, 1),                 # full-width digit is not an id
])
def test_rank(text, n, perm, ok, dropped):
    r = parse_rank(text, n)
    assert (r.permutation, r.parsed_ok, r.n_dropped) == (perm, ok, dropped)
    assert sorted(r.permutation) == list(range(n))
    assert (r.reason is None) == ok


@pytest.mark.parametrize("text,query,closed,ok", [
    ("heat an apple</query>", "heat an apple", True, True),
    ("  heat\n an   apple </query> trailing", "heat an apple", True, True),
    ("<query>cool wine</query>", "cool wine", True, True),
    ("<think>hmm</think>cool wine</query>", "cool wine", True, True),
    ("no closing tag", "no closing tag", False, True),
    ("</query>", "", True, False),
    ("bell\x07char</query>", "bell char", True, True),
])
def test_query(text, query, closed, ok):
    q = parse_query(text)
    assert (q.query, q.closed, q.ok) == (query, closed, ok)
    assert (q.reason is None) == ok


def test_query_length_cap():
    assert len(parse_query("x " * 5000, max_chars=100).query) <= 100
