"""Skill1 configuration: the learning config's three arms parse with the launcher's overrides
and mean what the campaign needs; ``play_config`` lives in ``methods.common`` so the shared SFT
warm start no longer imports the Skill1 loop (the old cycle)."""

import subprocess
import sys

import pytest
from absl import flags
from ml_collections import ConfigDict, config_flags

from skillax.methods.common.play import play_config

ARMS = {
    "sft": ["--config.steps=0", "--config.warmstart.save_dir=/tmp/ws"],
    "grpo": ["--config.ablation=no_library", "--config.warmstart.load_dir=/tmp/ws", "--config.warmstart.wait_s=900"],
    "full": ["--config.warmstart.load_dir=/tmp/ws", "--config.warmstart.wait_s=900"],
}
RL_EXTRA = ["--config.train_until_file=/tmp/deadline", "--config.max_train_minutes=20"]


def _parse(argv):
    """As ``skillax.main`` parses (override flags come from the argv list)."""
    argv = ["prog", "--config=configs/skill1_alfworld_learning.py"] + argv
    fv = flags.FlagValues()
    holder = config_flags.DEFINE_config_file("config", None, "cfg", flag_values=fv, lock_config=True, sys_argv=argv)
    fv(argv)
    return holder.value


@pytest.mark.parametrize("arm", sorted(ARMS))
def test_learning_config_arms_with_launcher_overrides(arm):
    from skillax.methods.common.eval_io import eval_splits
    from skillax.methods.skill1.loop import eval_conditions, rollout_config

    c = _parse(ARMS[arm] + (RL_EXTRA if arm != "sft" else []))
    assert (c.model.path, c.model.dtype, c.tasks_per_step * c.group_size, c.env.max_steps) == \
        ("smollm2", "bfloat16", 32, 30)
    assert eval_splits(c) == ("valid_unseen", "valid_seen") and c.eval.n_tasks == 0 and c.eval.batch_size == 140
    assert (c.sft.n_tasks, c.sft.skill_fraction, c.sft.distil_demos, c.sft.query_demos) == (200, 0.5, True, True)
    r = rollout_config(c)
    never = c.ablation == "no_library" or c.steps == 0
    if arm == "sft":
        assert c.steps == 0 and c.warmstart.save_dir == "/tmp/ws" and not c.warmstart.load_dir
    else:
        assert c.warmstart.load_dir == "/tmp/ws" and c.warmstart.wait_s == 900
        assert c.train_until_file == "/tmp/deadline" and c.max_train_minutes == 20
    assert r.use_retrieval == (arm != "grpo") and r.distil == ("off" if arm == "grpo" else "policy")
    assert eval_conditions(c, never) == (("without_library",) if arm != "full" else
                                         ("with_library", "without_library"))


def test_play_config_from_config_and_no_import_cycle():
    c = ConfigDict(dict(play=dict(history_k=2, max_admissible=40, max_obs_chars=600, max_skill_chars=500,
                                  require_think=False, invalid_penalty=0.25)))
    p = play_config(c)
    assert (p.history_k, p.max_admissible, p.max_obs_chars, p.max_skill_chars, p.max_skills) == (2, 40, 600, 500, 1)
    assert (p.require_think, p.invalid_penalty, p.max_action_chars) == (False, 0.25, 200)
    code = ("import sys, skillax.methods.common.sft_warmstart; "
            "print(any(m.startswith('skillax.methods.skill1') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_campaign9_overrides_and_the_bound_arm(tmp_path):
    """learning.sh ARMSET=skill1's campaign-9 extras (KL anchor) and SKILL1_BOUND's skill1_hw arm:
    the KL reaches the util objective only, and the bound arm's library is seeded with the six
    Skill1-format hand-written skills and evaluated with and without them. Campaign 12 on, the
    learning config also puts the KL on distil (``rl.kl_objectives``) and the generic distil level."""
    from skillax.methods.skill1.loop import eval_conditions, seed_from_config
    from skillax.methods.skill1.objectives import objective_configs
    from skillax.rl.objectives import needs_reference
    from skillax.skills.library import SkillLibrary

    kl = ["--config.train.lr=1e-5", "--config.rl.mini_batches=1", "--config.rl.kl_coef=0.05",
          "--config.rl.kl_estimator=k3"]
    c = _parse(ARMS["full"] + RL_EXTRA + kl + ["--config.seed=1"])
    objs = objective_configs(c)
    assert (objs["util"].kl_coef, objs["util"].kl_estimator) == (0.05, "k3") and needs_reference(objs)
    assert objs["rerank"].kl_coef == 0.0 and objs["distil"].kl_coef == 0.05 and c.seed == 1
    assert c.sft.distil_level == "generic"
    # campaign 14 on: a parse failure scores the distil reward's floor (-1) in the learning runs
    from skillax.methods.skill1.loop import rollout_config
    assert rollout_config(c).distil_parse_fail == "floor"
    with pytest.raises(ValueError, match="distil_parse_fail"):
        rollout_config(_parse(ARMS["full"] + RL_EXTRA + ["--config.rl.distil_parse_fail=never"]))
    hw = _parse(["--config.steps=0", "--config.init_skills=benchmarks/learning/handwritten_skills_skill1",
                 "--config.warmstart.load_dir=/tmp/ws", "--config.warmstart.wait_s=900"] + kl)
    lib = SkillLibrary(tmp_path / "library.sqlite")
    assert seed_from_config(hw, lib) == 6
    assert all(r.description_head.startswith("Use for ") and r.attempt_type == "imported" for r in lib.records())
    assert eval_conditions(hw, never_had_library=False) == ("with_library", "without_library")
    # campaign 10 on: learning.sh's bound arm evaluates with its library only (paired with the SFT
    # arm's without_library eval of the same weights) under its own 4 GB sampler budget
    hw = _parse(["--config.steps=0", "--config.init_skills=benchmarks/learning/handwritten_skills_skill1",
                 "--config.eval.ablate_retrieval=False", "--config.model.sampler_memory_gb=4"] + kl)
    assert eval_conditions(hw, never_had_library=False) == ("with_library",) and hw.model.sampler_memory_gb == 4
    assert hw.sft.rerank_demos                     # campaign 10's fix is in the warm start the arms share


def test_eval_at_steps_parses_from_the_command_line_and_refuses_bad_entries():
    """eval.at_steps (methods.skill1.heldout): "12" or "10,20" from the launcher's override, a
    tuple from Python; a negative, fractional or non-numeric entry is refused with its name."""
    from skillax.methods.skill1 import heldout

    assert heldout.at_steps(_parse([])) == frozenset()
    assert heldout.at_steps(_parse(["--config.eval.at_steps=12"])) == {12}
    assert heldout.at_steps(_parse(["--config.eval.at_steps=10, 20"])) == {10, 20}
    assert heldout.at_steps(ConfigDict(dict(eval=dict(at_steps=(3, 0))))) == {0, 3}
    for bad in ("-1", "2.5", "ten", "1,,x"):
        with pytest.raises(ValueError, match="eval.at_steps entry"):
            heldout.at_steps(ConfigDict(dict(eval=dict(at_steps=bad))))
    assert str(heldout.step_dir("/w", 12)) == "/w/eval_steps/step_12"
