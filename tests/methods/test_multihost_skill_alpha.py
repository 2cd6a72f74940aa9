"""Skill-alpha as 2 cooperating processes x 4 fake CPU devices (issue 21) equals the 1-process
8-device run with the same seed: a tiny random Qwen3 (SmolLM2 tokenizer) as editor and frozen
worker on real TextWorld games (``_multihost_worker.skill_alpha_config``): the evidence games
(one per process), 1 RL step of 2 lanes (each process samples its lane's 2 candidates and plays
its control game), a real update on the 4 rows, inference over the stream and the evaluation of
no_skill / with_skill on 1 game (one episode per process).

Two runs at once: the 1-process reference, which also saves its pre-RL state as a warm start
(``warmstart.save_dir``: no SFT stage, so the initial editor and worker, the evidence stream
and the sampler's call counter), and a 2-process run that waits for and loads that warm start
(``warmstart.load_dir``: the worker restored onto the global mesh, each process sampling with
its replica) and runs the same RL step -- the pod recipe (warm start with one process, then
load it with N). A 2-process run from scratch (the evidence games split across processes) was
a third run here; it passed and was dropped for suite time (one third of the test's CPU): the
evidence games go through the same split scorer call as the control games this run plays.

Same, for the 2-process run: every metric but timings, ``evidence_stream.json``,
``samples.jsonl``, ``eval.json`` (but seconds), the per-game records, z_T's folder
(``skill/``), the checkpoint's host payload (the lanes) and the parameters (within 1e-6). A
random editor writes no valid edit, so the edited skills' games (the dedupe and carry paths)
are not exercised here: the 1-process unit tests cover them, and their jobs go through the same
split scorer call as the control games.

Bad input: an SFT warm start with 2 processes is refused on both, before any SFT or training.
"""
import json

import numpy as np
import pytest

from tests.methods._multihost_worker import skill_alpha_config as run_config
from tests.methods.test_multihost_skill1 import checkpoint
from tests.methods.test_multihost_skillos import eval_json, tree
from tests.methods.test_multihost_train import finish, launch, needs_8, tiny_model  # noqa: F401 (fixture)

SKIP = ("time", "elapsed", "rl_minutes")


def metrics(work):
    lines = [json.loads(x) for x in (work / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in m.items() if not k.startswith(SKIP)} for m in lines]


def assert_same_run(one, two):
    m1, m2 = metrics(one), metrics(two)
    assert [m["step"] for m in m1] == [0] and m1[0]["units"] == 2 and m1[0]["worker_jobs"] == 2
    assert m1[0]["grad_norm"] > 0 and m1[0]["update_skipped"] == 0                    # a real update
    for a, b in zip(m1, m2, strict=True):
        assert set(a) == set(b)
        for k in a:
            assert b[k] == (a[k] if isinstance(a[k], str) else pytest.approx(a[k], rel=1e-5, abs=1e-6)), k
    for name in ("evidence_stream.json", "samples.jsonl"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    e1, e2 = eval_json(one), eval_json(two)
    assert e1 == e2 and set(e1["summaries"]) == {"no_skill__train", "with_skill__train"}
    records = tree(one / "eval")
    assert records == tree(two / "eval") and len(records) == 2 and all(v.count(b"\n") == 1 for v in records.values())
    skill = tree(one / "skill")
    assert skill == tree(two / "skill") and any(k.endswith("SKILL.md") for k in skill)
    s1, p1, h1 = checkpoint(one)
    s2, p2, h2 = checkpoint(two)
    assert s1 == s2 == 0 and h1 == h2 and len(h1["lanes"]) == 2
    diffs = {k: float(np.abs(p2[k] - v).max()) for k, v in p1.items()}
    print(f"{two.parent.name}: max |2-process - 1-process| over params:", max(diffs.values()))
    assert set(p1) == set(p2) and all(d <= 1e-6 for d in diffs.values()), diffs


@needs_8
@pytest.mark.slow
def test_two_process_skill_alpha_equals_one_process(tiny_model, tmp_path):  # noqa: F811
    from skillax import modes

    ws = tmp_path / "ws"
    loaded = launch(tmp_path / "loaded", "skill_alpha", tiny_model,
                    extra=(f"--config.warmstart.load_dir={ws}", "--config.warmstart.wait_s=900"))
    try:
        cfg = run_config(tiny_model)
        cfg.warmstart.save_dir = str(ws)
        modes.run(cfg, str(tmp_path / "one" / "run"))
    finally:
        results = finish(loaded, timeout=900)
    for rc, out, err in results:
        assert rc == 0, err[-4000:]
    assert all("warm start loaded from" in out for _, out, _ in results)
    assert_same_run(tmp_path / "one" / "run", tmp_path / "loaded" / "run")


@needs_8
@pytest.mark.slow
def test_two_process_skill_alpha_refuses_sft_warm_start(tiny_model, tmp_path):  # noqa: F811
    results = finish(launch(tmp_path, "skill_alpha", tiny_model, extra=("--config.sft.steps=1",)), timeout=300)
    for rc, out, err in results:
        assert rc == 3, err[-3000:]
        assert "NotImplementedError: a Skill-alpha warm start -- the SFT stages" in err and "issue 21" in err
        assert "edit SFT" not in out and not (tmp_path / "run" / "metrics.jsonl").exists()
