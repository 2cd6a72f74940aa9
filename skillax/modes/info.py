"""``mode=info``: print the parsed model config and the parameter count."""

from __future__ import annotations

import dataclasses
import json

from skillax.models.registry import load_policy


def run(cfg, workdir=None):
    params, mcfg, tokenizer = load_policy(cfg.model.path, cfg.model.param_dtype, seed=cfg.seed)
    from skillax.models.params import count_params

    info = dict(model_path=cfg.model.path, config=dataclasses.asdict(mcfg),
                num_params=count_params(params), num_params_formula=mcfg.num_params(),
                tokenizer_vocab=len(tokenizer))
    print(json.dumps(info, indent=2, default=str))
    return info
