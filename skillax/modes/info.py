"""``mode=info``: print the parsed model config, the parameter count, and the JAX backend and
devices this process sees (the check after a GPU / TPU install, README "GPU and TPU hosts")."""

from __future__ import annotations

import dataclasses
import json

import jax

from skillax.models.registry import load_policy


def run(cfg, workdir=None):
    params, mcfg, tokenizer = load_policy(cfg.model.path, cfg.model.param_dtype, seed=cfg.seed)
    from skillax.models.params import count_params

    info = dict(model_path=cfg.model.path, config=dataclasses.asdict(mcfg),
                num_params=count_params(params), num_params_formula=mcfg.num_params(),
                tokenizer_vocab=len(tokenizer), jax_version=jax.__version__,
                backend=jax.default_backend(), devices=[str(d) for d in jax.devices()],
                process_count=jax.process_count())
    print(json.dumps(info, indent=2, default=str))
    return info
