"""skillax: RL for agent skills (Skill-alpha, SkillOS, Skill1) on one JAX core.

See ARCHITECTURE.md for the module map and the contracts between layers. The notebook API
(issue 23 item 10; ``skillax.api``) is imported lazily, so ``import skillax`` loads no JAX::

    import skillax
    policy = skillax.load_policy("smollm2")
    skillax.chat(policy, "Name three fruits.")
    skillax.run(skillax.configs.get("default"), "runs/nb")
"""

__version__ = "0.1.0"

_API = ("Policy", "load_policy", "restore", "chat", "sample", "run", "export_skills", "export_policy")
__all__ = ["configs", *_API]


def __getattr__(name):
    if name in _API:
        from skillax import api

        return getattr(api, name)
    if name == "configs":
        import importlib

        return importlib.import_module("skillax.configs")
    raise AttributeError(f"module 'skillax' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
