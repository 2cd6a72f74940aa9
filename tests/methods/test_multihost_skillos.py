"""SkillOS as 2 cooperating processes x 4 fake CPU devices (issue 21) equals the 1-process
8-device run with the same seed: a tiny random Qwen3 (SmolLM2 tokenizer) as curator and frozen
executor on real TextWorld games, 1 RL step of 2 groups (one per process) x 2 rollouts x 2
tasks, every repo seeded with the 6 hand-written skills (``init_skills``: BM25 retrieval and the
executor's skills in context from the first task), a real update (``rl.skip_no_signal = False``),
checkpoint, evaluation of ``no_memory``
(2 games: one per process) and ``curated`` (1 group: process 1 runs none).

Same: every metric but timings and ``executor/calls`` (each process batches its own episodes:
the sum of both processes' calls), ``eval.json`` (but seconds), the per-game records, the
curated repos, ``skills/``, the checkpoint's host payload (stream, best repo, every rollout's
repo) and the parameters (within 1e-6).
"""
import json

import numpy as np
import pytest

from tests.methods._multihost_worker import skillos_config as run_config
from tests.methods.test_multihost_skill1 import checkpoint
from tests.methods.test_multihost_train import finish, launch, needs_8, tiny_model  # noqa: F401 (fixture)

SKIP = ("time", "elapsed", "rl_minutes", "executor/calls")


def metrics(work):
    lines = [json.loads(x) for x in (work / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in m.items() if not k.startswith(SKIP)} for m in lines]


def tree(folder):
    """{relative path: bytes} of the files under ``folder`` but the repos' changelogs (wall-clock times)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".changelog.jsonl"}


def eval_json(work):
    e = json.loads((work / "eval.json").read_text())
    e.pop("seconds")
    return e


@needs_8
@pytest.mark.slow
def test_two_process_skillos_equals_one_process(tiny_model, tmp_path):  # noqa: F811
    from skillax import modes

    procs = launch(tmp_path / "two", "skillos", tiny_model)
    try:
        modes.run(run_config(tiny_model), str(tmp_path / "one" / "run"))
    finally:
        results = finish(procs, timeout=600)
    for rc, out, err in results:
        assert rc == 0, err[-4000:]
    one, two = tmp_path / "one" / "run", tmp_path / "two" / "run"
    m1, m2 = metrics(one), metrics(two)
    assert [m["step"] for m in m1] == [0] and all(m["rows"] == 8 for m in m1)
    assert all(m["grad_norm"] > 0 and m["update_skipped"] == 0 for m in m1)          # a real update
    for a, b in zip(m1, m2, strict=True):
        assert set(a) == set(b)
        for k in a:
            assert b[k] == (a[k] if isinstance(a[k], str) else pytest.approx(a[k], rel=1e-5, abs=1e-6)), k
    e1, e2 = eval_json(one), eval_json(two)
    assert e1 == e2 and e1["n_games"] == {"valid_train": 2}
    for name in ("no_memory__valid_train.jsonl", "curated__valid_train.jsonl"):
        r1 = (one / "eval" / name).read_text()
        assert r1 == (two / "eval" / name).read_text() and r1.count("\n") == 2, name
    repos = tree(one / "eval_repos")
    assert repos == tree(two / "eval_repos") and sum(k.endswith("SKILL.md") for k in repos) >= 6
    assert tree(one / "skills") == tree(two / "skills")
    assert not (two / "rollouts").exists() and not (two / "rollouts-p1").exists()
    s1, p1, h1 = checkpoint(one)
    s2, p2, h2 = checkpoint(two)
    assert s1 == s2 == 0 and h1 == h2 and len(h1["repos"]) == 4 and len(h1["best_repo"]["skills"]) >= 6
    diffs = {k: float(np.abs(p2[k] - v).max()) for k, v in p1.items()}
    print("max |2-process - 1-process| over params:", max(diffs.values()))
    assert set(p1) == set(p2) and all(d <= 1e-6 for d in diffs.values()), diffs
