"""Skill1 end to end on CPU: a tiny random Qwen3 policy (real Qwen3 tokenizer), real
TextWorld games, real MiniLM retrieval and SQLite library: SFT warm start, one RL step of
the default config's 1 task x 2 rollouts x <= 2 turns, checkpoint, eval, export, plot. A
resume from the checkpoint is test_skill1_contract's run 3 (``resumed from checkpoint: next
step 1``, steps [0, 1]; the same ``modes.run`` path on a 49k-vocabulary model) and, state for
state, test_skill1_kill_resume's (a third run here, one more RL step on the 152k vocabulary,
checked the same [0, 1] and was dropped for suite time).

The policy's 152k-token LM head makes every trained row expensive: micro-batches of 4 (the 4
SFT transcripts: 2 expert games + 2 distil demos; the RL step's 8 rows of <= 256 tokens)
instead of the default's 8 (the SFT batch and each length bucket's micro-batch were padded to
8 rows).

The first run also dies for real in RL step 0 (issue 23, item 5; formerly a test of
its own in tests/methods/test_sft_checkpoint.py, with an SFT run of its own):
``model.sampler_memory_gb`` is too small for the first policy sampling call, after the SFT
stage (which samples nothing). Started again on the same workdir with the budget lifted (a key
a resume may change), the run loads ``<workdir>/warmstart/`` (written after the SFT stage,
``DONE.json`` last) instead of repeating the SFT: the SFT summary line is printed once over both
runs."""

import importlib.util
import json

import pytest

from skillax.rl.checkpoint import Checkpointer
from tests.methods._interrupt import TOO_SMALL_GB
from tests.models.hf_fixtures import save_hf_model


def _config(ckpt, steps):
    spec = importlib.util.spec_from_file_location("c", "configs/default.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.model.path = str(ckpt)
    c.model.dtype = "float32"
    c.steps = steps
    c.train.total_steps = 2
    c.train.micro_batch = 4
    c.env.tw_games_per_family = 1
    c.sft.steps = 1
    c.sft.n_tasks = 2
    c.sft.batch_size = 4
    c.sft.distil_demos = True  # the warm start replays the expert episodes with the distil hook
    c.eval.n_tasks = 1
    c.rollout.distil_tokens = 24
    c.rl.skip_no_signal = False   # a tiny random policy wins nothing: keep its updates (the mechanics under test)
    return c


@pytest.mark.slow
def test_skill1_loop_runs_and_restarts_after_a_crash(tmp_path, capsys):
    from skillax import modes

    ckpt = save_hf_model("qwen3_tied_gqa42", tmp_path / "ckpt", vocab_size=151936, layers=2)
    work = tmp_path / "run"
    # the crash in RL step 0, after the SFT stage and its warm start save
    bad = _config(ckpt, 1)
    bad.model.sampler_memory_gb = TOO_SMALL_GB
    with pytest.raises(ValueError, match="sampler memory"):
        modes.run(bad, str(work))
    out = capsys.readouterr().out
    assert out.count("SFT warm start:") == 1 and (work / "warmstart" / "DONE.json").is_file()
    assert not (work / "checkpoints").is_dir() or not any(p.name.isdigit() for p in (work / "checkpoints").iterdir())
    # the restart: the SFT is not repeated; then one RL step, with the held-out curve's point
    # after it (eval.at_steps; methods.skill1.heldout)
    good = _config(ckpt, 1)
    good.eval.at_steps = "0"
    results = modes.run(good, str(work))
    out = capsys.readouterr().out
    assert "SFT warm start:" not in out and f"warm start loaded from {work / 'warmstart'}" in out
    with Checkpointer(work / "checkpoints") as ck:
        assert ck.latest_step() == 0
    lines = [json.loads(x) for x in (work / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [0]
    m = lines[0]
    assert 0.0 <= m["success_rate"] <= 1.0 and m["rows"] >= 4 and m["policy_tokens"] > 0
    assert m["util/tokens"] > 0 and m["distil/tokens"] > 0
    # the step's sampling-program builds: one jsonl line each (shape key + seconds), summed in the metrics
    built = [json.loads(x) for x in (work / "sampler_builds.jsonl").read_text().splitlines()]
    assert m["compile/builds"] == len(built) > 0 and {b["step"] for b in built} == {0}
    assert m["compile/build_s"] == pytest.approx(sum(b["seconds"] for b in built), abs=0.01)
    assert {"batch", "prefill_rows", "chunk", "cache_len", "fresh", "shared"} <= set(built[0])
    # what the policy wrote (methods.skill1.play_log): invalid fractions by reason, sample responses
    assert sum(m[k] for k in m if k.startswith("invalid/")) == pytest.approx(m["invalid_action_rate"])
    (samples,) = [json.loads(x) for x in (work / "play_samples.jsonl").read_text().splitlines()]
    assert samples["step"] == 0 and samples["samples"] and all("response" in s for s in samples["samples"])
    # every task's outcome: the wins add up to the step's success_rate
    outs = samples["outcomes"]
    assert sum(o["won"] for o in outs) / sum(o["of"] for o in outs) == pytest.approx(m["success_rate"])
    assert m["groups_mixed"] == sum(0 < o["won"] < o["of"] for o in outs) / len(outs)
    assert set(results) >= {"with_library", "without_library", "library"}
    (key,) = [k for k in m if k.startswith("heldout/")]           # one eval split
    split = key.split("/", 1)[1]
    held = [json.loads(x) for x in (work / "eval_steps/step_0/eval" / f"without_library__{split}.jsonl")
            .read_text().splitlines()]
    assert len(held) == 1 and m[key] == float(held[0]["won"]) and m["time/heldout_s"] > 0
    # the final evaluation sees the same weights (after step 0) and draws the same keys
    # (PolicySampler.evaluation_stream: common random numbers): the same episode
    final = [json.loads(x) for x in (work / "eval" / f"without_library__{split}.jsonl").read_text().splitlines()]
    same = lambda recs: [(r["task_id"], r["first_response"], r["steps"], r["won"], r["invalid_actions"]) for r in recs]
    assert same(final) == same(held) and held[0]["first_response"]
    # the RL clock's estimate of the next step leaves out this step's jax compile time
    assert 0 < m["time/compile_s"] < m["time/step_s"]
    assert "held-out after RL step 0, without_library" in out
    assert (work / "metrics.png").is_file() and (work / "skills").is_dir()
