"""Skill-alpha evidence preprocessing: paragraphs, trajectory views, limits, prompt budget."""
import collections

import pytest

from skillax.skills.evidence import (
    MARKER, EvidenceConfig, TrajStep, Trajectory, chunk_document, chunk_trajectories, fit_prompt,
    format_units, render_trajectory, split_paragraphs, truncate_middle,
)


def test_split_paragraphs():
    doc = "Title\r\n\r\nPara one\nline two.\n\n\n  \nPara two.\n\n" + "word " * 10
    assert split_paragraphs(doc) == ["Title", "Para one\nline two.", "Para two.", ("word " * 10).strip()]
    long = "abcd " * 20  # 100 chars
    parts = split_paragraphs(long, max_chars=30)
    assert all(len(p) <= 30 for p in parts) and " ".join(parts) == long.strip()


def test_chunk_document_units_knob():
    doc = "\n\n".join(f"P{i}" for i in range(9))
    chunks = chunk_document(doc)
    assert [c.units for c in chunks] == [("P0", "P1", "P2", "P3"), ("P4", "P5", "P6", "P7"), ("P8",)]
    assert [c.index for c in chunks] == [0, 1, 2] and chunks[0].kind == "document"
    assert len(chunk_document(doc, EvidenceConfig(units_per_chunk=2))) == 5
    assert chunks[2].text == "### Evidence 1\nP8"
    with pytest.raises(ValueError, match="units_per_chunk must be >= 1"):
        EvidenceConfig(units_per_chunk=0)


def traj(n_steps, obs="You see a fridge.", outcome="success (reward 1)"):
    return Trajectory("t-7", "put a cool apple in the microwave",
                      tuple(TrajStep(f"go to place {i + 1}", obs) for i in range(n_steps)), outcome)


def test_render_short_trajectory_exact():
    t = Trajectory("pick-3", "put a  mug\nin the sink", (TrajStep("open fridge", "The fridge\nis open."),
                                                        TrajStep("look", "")), "failure (reward 0)")
    assert render_trajectory(t) == ("Task [pick-3]: put a mug in the sink\n"
                                    "Step 1: > open fridge\n  The fridge is open.\n"
                                    "Step 2: > look\n"
                                    "Outcome: failure (reward 0)")


def test_step_limit_keeps_beginning_and_outcome():
    c = collections.Counter()
    text = render_trajectory(traj(12), counter=c)
    lines = text.split("\n")
    steps = [ln for ln in lines if ln.startswith("Step ")]
    assert steps == [f"Step {i}: > go to place {i}" for i in (1, 2, 3, 4, 5, 6, 7, 12)]
    assert "[... 4 steps omitted ...]" in lines and lines[-1] == "Outcome: success (reward 1)"
    assert c == {"steps": 1}
    assert render_trajectory(traj(8), counter=c).count("Step ") == 8 and c == {"steps": 1}


def test_char_limit_keeps_beginning_and_outcome():
    c = collections.Counter()
    text = render_trajectory(traj(8, obs="x" * 1000), counter=c)
    assert len(text) <= 3000 and c == {"chars": 1}
    assert text.startswith("Task [t-7]: put a cool apple") and text.endswith("\nOutcome: success (reward 1)")
    assert MARKER in text
    small = render_trajectory(traj(3, obs="y" * 50), EvidenceConfig(max_traj_chars=60), c)
    assert len(small) <= 60 and c["chars"] == 2


def test_chunk_trajectories_four_per_chunk():
    c = collections.Counter()
    chunks = chunk_trajectories([traj(2)] * 9 + [traj(10)], counter=c)
    assert [len(ch.units) for ch in chunks] == [4, 4, 2] and chunks[0].kind == "trajectory"
    assert c == {"steps": 1}
    assert chunks[1].text.startswith("### Evidence 1\nTask [t-7]") and "### Evidence 4" in chunks[1].text


def test_truncate_middle():
    s = "".join(chr(97 + i % 26) for i in range(200))
    t = truncate_middle(s, 100)
    assert len(t) == 100 and t.startswith(s[:60]) and t.endswith(s[-19:]) and MARKER in t
    assert truncate_middle("short", 100) == "short" and truncate_middle(s, 5) == s[:5]


def test_fit_prompt_drops_then_truncates():
    words = lambda t: len(t.split())
    build = lambda units: "Instructions here.\n" + format_units(units)
    units = [" ".join(f"u{j}w{i}" for i in range(100)) for j in range(4)]
    r = fit_prompt(build, units, words, max_tokens=250)
    assert r.n_units == 2 and r.n_tokens <= 250 and not r.over_budget
    assert r.truncations == {"units_dropped": 2}
    r = fit_prompt(build, units, words, max_tokens=60)
    assert r.n_units == 1 and r.n_tokens <= 60 and r.truncations == {"units_dropped": 3, "prompt": 1}
    assert "u0w0" in r.prompt and "u0w99" in r.prompt     # beginning and end kept
    r = fit_prompt(build, units, words, max_tokens=2)
    assert r.over_budget and r.truncations["prompt"] == 1
    r = fit_prompt(build, units[:1], words, max_tokens=10_000)
    assert r.truncations == {} and r.prompt == build(units[:1])
