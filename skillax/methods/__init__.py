"""One host loop per paper (Skill1, SkillOS, Skill-alpha) on the shared core."""
