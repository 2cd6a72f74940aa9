"""Issue 23, item 4: resuming a workdir with a config that changes the run's meaning is refused
(keys named with both values), harmless changes are allowed; each resume is recorded."""
import json

import jax.numpy as jnp
import pytest

from skillax import config_defaults
from skillax.methods.common import run_dir
from skillax.methods.common.run_dir import ConfigChangedError
from skillax.rl.checkpoint import Checkpointer


def _cfg(**kw):
    c = config_defaults.skill1()
    for k, v in kw.items():
        node = c
        *path, last = k.split(".")
        for p in path:
            node = node[p]
        node[last] = v
    return c


def _checkpoint(work):
    with Checkpointer(work / "checkpoints") as ck:
        ck.save(0, {"w": jnp.zeros(3)}, {"stream": 1})


def test_resume_refuses_meaningful_changes_and_records_allowed_ones(tmp_path):
    work = tmp_path / "run"
    assert run_dir.prepare(_cfg(), work) == {"resume": False, "changed": {}}
    assert json.loads((work / "config.json").read_text())["seed"] == 0
    # no checkpoint yet (the run died before its first): any config starts over, nothing recorded
    assert run_dir.prepare(_cfg(seed=5), work)["resume"] is False
    assert not (work / "resumes.jsonl").exists()
    _checkpoint(work)
    saved = (work / "config.json").read_text()
    with pytest.raises(ConfigChangedError) as err:
        run_dir.prepare(_cfg(seed=0, group_size=4, **{"model.path": "random:qwen3-0.6b"}), work)
    msg = str(err.value)
    assert "seed: 5 -> 0" in msg and "group_size: 8 -> 4" in msg
    assert "model.path: 'smollm2' -> 'random:qwen3-0.6b'" in msg and "allow_config_change=True" in msg
    assert len(msg.splitlines()) == 1
    assert (work / "config.json").read_text() == saved and not (work / "resumes.jsonl").exists()
    # how long, what is evaluated, where it runs: allowed, recorded
    info = run_dir.prepare(_cfg(seed=5, steps=400, **{"eval.n_tasks": 0, "env.workers": 2}), work)
    assert info == {"resume": True, "changed": {"env.workers": [0, 2], "eval.n_tasks": [32, 0], "steps": [100, 400]}}
    assert json.loads((work / "config.json").read_text())["steps"] == 400
    # the override resumes anyway and says so
    run_dir.prepare(_cfg(seed=6, steps=400, allow_config_change=True, **{"eval.n_tasks": 0, "env.workers": 2}), work)
    lines = [json.loads(x) for x in (work / "resumes.jsonl").read_text().splitlines()]
    assert [x["override"] for x in lines] == [[], ["seed"]]
    assert lines[1]["changed"] == {"allow_config_change": [False, True], "seed": [5, 6]}


def test_changed_keys_rules():
    new = {"train.schedule": "constant"}
    assert run_dir.may_change("train.total_steps", new) and not run_dir.may_change("train.total_steps",
                                                                                  {"train.schedule": "cosine"})
    assert run_dir.may_change("eval.splits", new) and not run_dir.may_change("evaluation", new)
    assert not run_dir.may_change("rl.clip_eps", new) and not run_dir.may_change("objective", new)
    # play-throughput keys sample the same episodes: a resume may change them
    assert all(run_dir.may_change(k, new) for k in ("rollout.overlap", "rollout.prefetch_resets",
                                                   "model.batch_buckets", "model.prompt_buckets",
                                                   "model.batch_floor", "model.prefill_floor"))
    assert not run_dir.may_change("rollout.top_k", new)
    # a key on one side only (code gained a setting) is not a change
    assert run_dir.config_changes({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2], "c": 3}) == {}
