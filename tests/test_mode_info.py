"""``mode=info`` (issue 23 item 11): the model summary plus the JAX backend and devices, the
check a user runs after installing JAX's GPU / TPU build (README "GPU and TPU hosts")."""
import importlib.util
import json
import pathlib

import jax

from skillax import modes

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_info_reports_model_and_devices(capsys):
    spec = importlib.util.spec_from_file_location("generate_cfg", REPO / "configs" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cfg = mod.get_config()
    cfg.mode = "info"
    info = modes.run(cfg, None)
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(info, default=str))
    # SmolLM2-135M-Instruct: 134,515,008 parameters (tied embeddings), vocabulary 49,152
    assert info["num_params"] == info["num_params_formula"] == 134_515_008
    assert info["tokenizer_vocab"] == 49_152
    assert info["backend"] == jax.default_backend() and info["jax_version"] == jax.__version__
    assert info["devices"] == [str(d) for d in jax.devices()] and info["process_count"] == 1
