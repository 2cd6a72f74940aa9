"""The Python API for notebooks (issue 23 item 10; Colab is one of the three entry points).

Thin functions over the CLI's pieces, re-exported lazily by ``skillax/__init__.py``::

    import skillax
    policy = skillax.load_policy("smollm2")                    # models.registry.load_policy
    skillax.chat(policy, "Name three fruits.")                # engine.Sampler + chat template
    cfg = skillax.configs.get("default", {"steps": 1})         # configs/<name>.py, by name
    skillax.run(cfg, "runs/nb")                                # = modes.run (the CLI's run)
    trained = skillax.restore("runs/nb")                       # latest policy params of a run
    skillax.export_skills("runs/nb", "my_skills")              # skills.spec export gate
    skillax.export_policy("runs/nb", "hf/nb")                  # modes.export (HF folder)

Every function loads what it needs on first call, so ``import skillax`` stays cheap.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from typing import Any, Mapping, Sequence


@dataclasses.dataclass
class Policy:
    """A loaded policy: params, model config, tokenizer, and the sampler built for them.

    Attributes:
      params: the params tree (stored in ``dtype``).
      config: ``skillax.models.config.ModelConfig``.
      tokenizer: the model's tokenizer (HF fast tokenizer API).
      path: what was loaded (``smollm2``, an HF folder, ``random:<shape>``).
      max_len: the longest prompt + completion the sampler accepts (tokens).
      dtype: params / compute dtype name ("float32", "bfloat16"; "auto" = bfloat16).
      step: the run's checkpoint step when restored from a run, else None.
    """

    params: Any
    config: Any
    tokenizer: Any
    path: str
    max_len: int = 1024
    dtype: str = "float32"
    step: int | None = None
    _sampler: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def sampler(self):
        """The ``engine.Sampler`` of this policy (built once; its compiled programs are reused
        by every later ``chat`` / ``sample`` call)."""
        if self._sampler is None:
            from skillax.engine.sampler import Sampler
            from skillax.models.registry import resolve_dtype

            self._sampler = Sampler(self.config, self.tokenizer, max_len=int(self.max_len),
                                    dtype=resolve_dtype(self.dtype))
        return self._sampler


def load_policy(path: str = "smollm2", *, dtype: str = "float32", max_len: int = 1024, seed: int = 0,
                checkpoint: str | os.PathLike | None = None) -> Policy:
    """Load a policy for ``chat`` / ``sample`` (``models.registry.load_policy``).

    Args:
      path: ``smollm2`` (embedded SmolLM2-135M-Instruct), ``qwen2.5-coder-0.5b``, an HF
        checkpoint folder, or ``random:<shape>``.
      dtype: params and compute dtype ("float32" is exact on CPU; "bfloat16" halves memory).
      max_len: prompt + completion budget in tokens (checked against the model's positions).
      seed: init seed for ``random:`` shapes.
      checkpoint: a run's workdir (or its ``checkpoints/``): use its latest policy params
        (``modes.serve.restore_policy_params``); ``path`` must be the run's base model.
    Raises:
      FileNotFoundError / ValueError / ConfigError as ``load_policy`` and
      ``restore_policy_params`` raise them (unknown model, no checkpoint, another model).

    >>> policy = skillax.load_policy("smollm2")
    >>> policy.config.num_layers
    30
    """
    import jax

    from skillax.models.registry import load_policy as _load, resolve_dtype

    params, mcfg, tokenizer = _load(str(path), "float32", seed=int(seed), max_len=int(max_len))
    step = None
    if checkpoint is not None:
        from skillax.modes.serve import restore_policy_params

        params, step = restore_policy_params(checkpoint, mcfg)
        step = int(step)
    target = resolve_dtype(dtype)
    params = jax.tree.map(lambda x: x.astype(target), params)
    return Policy(params, mcfg, tokenizer, str(path), int(max_len), str(dtype), step)


def restore(workdir: str | os.PathLike, model: str | None = None, **kw) -> Policy:
    """The policy of a run: its base model with the latest checkpoint's policy params.

    Args:
      workdir: the run folder (``skillax.run(cfg, workdir)`` / ``--workdir``).
      model: the run's base model; default: ``model.path`` of ``<workdir>/config.json``.
      kw: ``dtype``, ``max_len`` (default: the run's ``model.max_len``), ``seed`` as in
        :func:`load_policy`.
    Raises:
      FileNotFoundError: no checkpoint; ValueError: no model known, or a different model.

    >>> trained = skillax.restore("runs/nb")    # after skillax.run(..., {"steps": 1}): step 0
    >>> trained.step
    0
    """
    run_cfg = _run_config(workdir)
    model = model or (run_cfg.get("model") or {}).get("path")
    if not model:
        raise ValueError(f"{workdir} has no config.json naming model.path; pass model=...")
    if "max_len" not in kw and (run_cfg.get("model") or {}).get("max_len"):
        kw["max_len"] = int(run_cfg["model"]["max_len"])
    return load_policy(model, checkpoint=workdir, **kw)


def _run_config(workdir) -> dict:
    f = pathlib.Path(workdir) / "config.json"
    try:
        return json.loads(f.read_text())
    except (OSError, ValueError):
        return {}


def _sampling(max_new_tokens, temperature, top_p, top_k, n, stop):
    from skillax.engine.sampling import SamplingParams

    return SamplingParams(temperature=float(temperature), top_k=int(top_k), top_p=float(top_p),
                          max_new_tokens=int(max_new_tokens), n=int(n),
                          stop_strings=tuple([stop] if isinstance(stop, str) else stop or ()))


def chat(policy: Policy, messages: str | Sequence[Mapping] | Sequence[Sequence[Mapping]], *,
         max_new_tokens: int = 64, temperature: float = 0.0, top_p: float = 1.0, top_k: int = 0,
         n: int = 1, stop: str | Sequence[str] = (), seed: int = 0, step: int = 0,
         enable_thinking: bool = False) -> str | list[str]:
    """Reply to a conversation with the model's chat template (``Sampler.generate_text``).

    Args:
      messages: a user message (str), one conversation (``[{"role", "content"}, ...]``), or a
        list of conversations (sampled in one batched call).
      max_new_tokens, temperature (0 = greedy), top_p, top_k, n (samples per conversation),
        stop (strings ending a reply), seed / step (the sample keys): ``SamplingParams``.
    Returns:
      one conversation and ``n == 1``: the reply (str); else a list of replies, prompt-major
      (conversation i's sample g at ``i * n + g``). Special tokens are skipped.
    Raises:
      ValueError: a prompt + ``max_new_tokens`` over ``policy.max_len``, bad sampling values.

    >>> skillax.chat(policy, "What is the capital of France?", max_new_tokens=16)
    'The capital of France is Paris.'
    """
    single = isinstance(messages, str) or (len(messages) > 0 and isinstance(messages[0], Mapping))
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    convs = [list(messages)] if single else [list(c) for c in messages]
    out = policy.sampler.generate_text(policy.params, None, convs,
                                       _sampling(max_new_tokens, temperature, top_p, top_k, n, stop),
                                       seed=int(seed), step=int(step), enable_thinking=enable_thinking)
    return out.texts[0] if single and n == 1 else list(out.texts)


def sample(policy: Policy, prompts: str | Sequence[str] | Sequence[Sequence[int]], *,
           max_new_tokens: int = 64, temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
           n: int = 1, stop: str | Sequence[str] = (), seed: int = 0, step: int = 0) -> str | list[str]:
    """Continue raw text (no chat template) or token-id prompts (``Sampler.generate``).

    Args:
      prompts: a str, a list of str, or a list of token-id lists.
      other arguments: as :func:`chat` (``temperature`` defaults to 1 here: sampling).
    Returns:
      one str prompt and ``n == 1``: the completion (str); else a list, prompt-major.

    >>> skillax.sample(policy, "Once upon a time", max_new_tokens=8, temperature=0)
    ', the city of Nova Haven was a'
    """
    single = isinstance(prompts, str)
    items = [prompts] if single else list(prompts)
    ids = [list(policy.tokenizer.encode(p, add_special_tokens=False)) if isinstance(p, str) else list(p)
           for p in items]
    out = policy.sampler.generate(policy.params, ids,
                                  _sampling(max_new_tokens, temperature, top_p, top_k, n, stop),
                                  seed=int(seed), step=int(step))
    return out.texts[0] if single and n == 1 else list(out.texts)


def run(config, workdir: str | os.PathLike | None = None, overrides: Mapping[str, Any] | None = None):
    """Run a config exactly as ``python -m skillax.main --config ... --workdir ...`` does
    (``modes.run``: a method, ``sft``, ``generate``, ``library``, ...). One process only;
    multi-host runs use the CLI (``config.distributed``).

    Args:
      config: a ``ConfigDict`` (e.g. from ``skillax.configs.get``) or a config name / path.
      workdir: the output folder (checkpoints, metrics, skills); a workdir with a checkpoint
        is resumed.
      overrides: dotted keys applied to a copy of ``config`` (``{"steps": 1}``).
    Returns:
      what the mode returns (methods: their summary dict).

    >>> result = skillax.run("default", "runs/nb", {"steps": 1})   # 182 s on 2 CPU cores
    """
    from skillax import configs, modes

    if isinstance(config, (str, os.PathLike)):
        cfg = configs.get(str(config), overrides)
    else:
        cfg = config
        if overrides:
            cfg = config.copy_and_resolve_references()
            cfg.lock()
            from skillax.config_keys import apply_overrides

            apply_overrides(cfg, overrides)
    return modes.run(cfg, None if workdir is None else str(workdir))


def export_skills(source, directory: str | os.PathLike, *, step: int = -1):
    """Write skills as an Agent Skills folder (``<directory>/<name>/SKILL.md``) through the
    export gate (``skills.spec.export_skills``: each file spec-valid, or skipped with its reason).

    Args:
      source: a run's workdir (the skills of checkpoint ``step``, -1 = latest, any method, with
        provenance: method, run id, step), a ``{name: SKILL.md text}`` mapping, or ``SkillDoc``s.
    Returns:
      ``skills.spec.ExportReport`` (``.written``, ``.skipped``, ``.directory``).

    >>> skillax.export_skills("runs/nb", "my_skills").written
    ('short-notes-kinds-example-objective-retrieve',)
    """
    from skillax.skills import spec

    if isinstance(source, (str, os.PathLike)):
        from skillax.modes.library import skill_set

        wd = pathlib.Path(source)
        cur = skill_set(wd, int(step))
        return spec.export_skills(cur["docs"], directory,
                                  provenance=spec.provenance(cur["method"], run_id=wd.name, step=cur["step"]))
    texts = dict(source) if isinstance(source, Mapping) else None
    return spec.export_skills(spec.docs_of(source), directory, texts=texts)


def export_policy(workdir: str | os.PathLike, directory: str | os.PathLike, *, model: str | None = None,
                  dtype: str = "float32") -> dict:
    """A run's latest policy as a Hugging Face folder (``modes.export``: ``config.json``,
    ``model.safetensors``, ``generation_config.json``, tokenizer files) that
    ``transformers.AutoModelForCausalLM.from_pretrained(directory)`` reloads.

    Args:
      workdir: the run folder; model: its base model (default: ``model.path`` of its
        ``config.json``); dtype: "float32" | "bfloat16".
    Returns:
      {"dir", "step", "dtype", "files"}.
    Raises:
      FileNotFoundError: no checkpoint; ValueError: no model known, a different model, bad dtype.

    >>> skillax.export_policy("runs/nb", "hf/nb")["files"]
    ['chat_template.jinja', 'config.json', 'generation_config.json', 'model.safetensors', ...]
    """
    from skillax import configs, modes

    run_model = _run_config(workdir).get("model") or {}
    model = model or run_model.get("path")
    if not model:
        raise ValueError(f"{workdir} has no config.json naming model.path; pass model=...")
    over = {"model.path": str(model), "export.dir": str(directory), "export.dtype": str(dtype)}
    if run_model.get("max_len"):   # the run's length, checked against the model's positions
        over["model.max_len"] = int(run_model["max_len"])
    cfg = configs.get("export", over)
    return modes.run(cfg, str(workdir))
