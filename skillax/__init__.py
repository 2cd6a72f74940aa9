"""skillax: RL for agent skills (Skill-alpha, SkillOS, Skill1) on one JAX core.

See ARCHITECTURE.md for the module map and the contracts between layers.
"""

__version__ = "0.1.0"
