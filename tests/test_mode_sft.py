"""mode=sft end to end on a tiny random Qwen3 checkpoint: the assistant NLL falls, and the
exported HF folder reloads in transformers."""

import json

import pytest

from tests.models.hf_fixtures import save_hf_model


@pytest.mark.slow
def test_sft_mode_lowers_nll_and_exports(tmp_path):
    import importlib.util

    import transformers

    from skillax import modes

    ckpt = save_hf_model("qwen3_tied_gqa42", tmp_path / "ckpt", vocab_size=151936, layers=2)
    data = tmp_path / "t.jsonl"
    with open(data, "w") as f:
        for i in range(8):
            f.write(json.dumps({"messages": [{"role": "user", "content": f"Say {i}."},
                                             {"role": "assistant", "content": f"{i} {i} {i}"}]}) + "\n")
    spec = importlib.util.spec_from_file_location("c", "configs/sft.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cfg = mod.get_config()
    cfg.model.path = str(ckpt)
    cfg.model.dtype = "float32"
    cfg.sft.data = str(data)
    cfg.sft.steps = 6
    cfg.sft.lr = 3e-3
    cfg.sft.batch_size = 8
    cfg.sft.max_len = 32        # each transcript is 23 tokens in the Qwen3 template (was 64: 8 x 152k-vocab rows)
    cfg.export_dir = str(tmp_path / "hf")
    hist = modes.run(cfg, str(tmp_path / "run"))
    assert hist[-1]["nll"] < hist[0]["nll"]
    transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf"))


def _transcripts(path):
    with open(path, "w") as f:
        for i in range(4):
            f.write(json.dumps({"messages": [{"role": "user", "content": f"Say {i}."},
                                             {"role": "assistant", "content": f"{i} {i} {i}"}]}) + "\n")
    return path


def test_sft_restart_restores_the_completed_sft_instead_of_repeating_it(tmp_path, monkeypatch):
    """Issue 23 item 5 for mode=sft: a run that dies after its SFT (here: in the export) and is
    started again on the same workdir restores the SFT checkpoint -- no second SFT, the same
    weights exported -- and a restart with other SFT settings is refused."""
    import jax
    import numpy as np

    import skillax
    from skillax import modes
    from skillax.methods.common.engine import PolicyEngine
    from skillax.methods.common.run_dir import ConfigChangedError
    from tests.models.hf_fixtures import save_tiny_chat_model

    model = save_tiny_chat_model(tmp_path / "tiny")
    calls = []
    sft = PolicyEngine.sft

    def counted(self, *a, **kw):   # the real SFT, counted
        calls.append(kw["steps"])
        return sft(self, *a, **kw)

    monkeypatch.setattr(PolicyEngine, "sft", counted)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the export folder's parent should be")
    over = {"model.path": str(model), "model.dtype": "float32", "model.max_len": 64,
            "sft.data": str(_transcripts(tmp_path / "t.jsonl")), "sft.steps": 2, "sft.lr": 3e-3,
            "sft.batch_size": 2, "sft.max_len": 32, "train.micro_batch": 2, "train.remat": False,
            "export_dir": str(blocker / "hf")}
    work = tmp_path / "run"
    with pytest.raises(OSError):   # the run dies after its SFT, in the export
        modes.run(skillax.configs.get("sft", over), str(work))
    assert calls == [2] and sorted(p.name for p in (work / "checkpoints").iterdir()) == ["1"]
    logged = [json.loads(x) for x in (work / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged] == [0, 1]

    (work / "metrics.jsonl").write_text((work / "metrics.jsonl").read_text().splitlines()[0] + "\n")
    hist = modes.run(skillax.configs.get("sft", {**over, "export_dir": str(tmp_path / "hf")}), str(work))
    assert calls == [2]                                      # restored, not repeated
    assert [m["nll"] for m in hist] == [r["nll"] for r in logged] and hist[-1]["nll"] < hist[0]["nll"]
    assert [json.loads(x)["step"] for x in (work / "metrics.jsonl").read_text().splitlines()] == [0, 1]
    # the exported weights are the SFT's (not the base model's)
    trained = skillax.restore(work, max_len=64).params
    exported = skillax.load_policy(str(tmp_path / "hf"), max_len=64).params
    base = skillax.load_policy(str(model), max_len=64).params
    for a, b, c in zip(jax.tree.leaves(exported), jax.tree.leaves(trained), jax.tree.leaves(base)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert any(not np.array_equal(np.asarray(a), np.asarray(c))
               for a, c in zip(jax.tree.leaves(exported), jax.tree.leaves(base)))

    with pytest.raises(ConfigChangedError, match=r"sft\.lr: 0\.003 -> 0\.001"):
        modes.run(skillax.configs.get("sft", {**over, "sft.lr": 1e-3}), str(work))
    assert calls == [2]
