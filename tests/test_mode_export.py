"""``mode=export`` (issue 23 item 8): a run's latest policy params -> an HF folder that
transformers reloads with the same greedy text as our sampler on those params."""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import torch

from skillax import modes
from skillax.engine import Sampler, SamplingParams
from skillax.models.hf_io import load_hf_checkpoint
from skillax.rl.checkpoint import Checkpointer


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tests.models.hf_fixtures import save_tiny_chat_model

    return save_tiny_chat_model(tmp_path_factory.mktemp("export") / "tiny-qwen2")


def _config(model_dir, out_dir, dtype="float32"):
    from configs.export import get_config

    c = get_config()
    c.model.path = str(model_dir)
    c.model.max_len = 256
    c.export.dir = str(out_dir)
    c.export.dtype = dtype
    return c


def test_export_reloads_in_transformers_with_identical_greedy_text(model_dir, tmp_path):
    import transformers

    params, cfg = load_hf_checkpoint(model_dir)
    trained = jax.tree.map(lambda x: x * 1.25, params)          # the run's "trained" weights
    run = tmp_path / "run"
    ck = Checkpointer(run / "checkpoints")
    ck.save(4, {"params": trained, "opt_state": optax.adam(1e-3).init(trained), "step": jnp.int32(4)}, {"step": 4})
    ck.close()
    (run / "config.json").write_text(json.dumps({"mode": "skill1", "eval": {"temperature": 0.4}}))

    info = modes.run(_config(model_dir, tmp_path / "hf"), str(run))
    assert info["step"] == 4 and {"config.json", "model.safetensors", "generation_config.json"} <= set(info["files"])
    gen = json.loads((tmp_path / "hf" / "generation_config.json").read_text())
    assert gen["do_sample"] is True and gen["temperature"] == 0.4 and gen["eos_token_id"] == 2

    model = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf")).float().eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    prompt = tok("the cat sat on")["input_ids"]
    with torch.no_grad():
        ref = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False, min_new_tokens=8,
                             eos_token_id=None, pad_token_id=0)[0, len(prompt):].tolist()
    ours = Sampler(cfg, tok, max_len=256, dtype=jnp.float32).generate(
        trained, [prompt], SamplingParams(temperature=0, max_new_tokens=8, eos_ids=())).tokens[0].tolist()
    assert ours == ref
    # the export is the trained policy, not the base model
    base = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir)).float().eval()
    w = dict(model.named_parameters())["model.layers.0.mlp.down_proj.weight"].detach().numpy()
    w0 = dict(base.named_parameters())["model.layers.0.mlp.down_proj.weight"].detach().numpy()
    np.testing.assert_allclose(w, 1.25 * w0, rtol=1e-6)


def test_export_errors(model_dir, tmp_path):
    with pytest.raises(ValueError, match="--workdir"):
        modes.run(_config(model_dir, tmp_path / "hf"), None)
    with pytest.raises(ValueError, match="export.dir"):
        modes.run(_config(model_dir, ""), str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        modes.run(_config(model_dir, tmp_path / "hf"), str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="export.dtype"):
        modes.run(_config(model_dir, tmp_path / "hf", dtype="int8"), str(tmp_path))
    assert not (tmp_path / "hf").exists()
