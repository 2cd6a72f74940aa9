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

    ckpt = save_hf_model("qwen3_tied_gqa42", tmp_path / "ckpt", vocab_size=151936)
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
    cfg.sft.max_len = 64
    cfg.export_dir = str(tmp_path / "hf")
    hist = modes.run(cfg, str(tmp_path / "run"))
    assert hist[-1]["nll"] < hist[0]["nll"]
    transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf"))
