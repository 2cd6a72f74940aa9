"""Issue 23, item 5: a run that dies in RL step 0 does not repeat its SFT when started again.

(Skill1's case is part of tests/methods/test_skill1_integration.py, whose run has the SFT stage
anyway.) Each method's tiny run (tiny random model, SmolLM2 tokenizer, real TextWorld games) runs its
SFT stages and then fails for real in RL step 0: ``model.sampler_memory_gb`` is too small for
the first policy sampling call (the sampler raises "... alone needs X GiB of sampler memory";
nothing before RL samples with the policy at that size). Started again on the same workdir with
the budget lifted (a key a resume may change), the run loads ``<workdir>/warmstart/`` (written
after the SFT stages, ``DONE.json`` last) instead of repeating the SFT -- the SFT summary line is
printed once over both runs -- and (Skill-alpha; SkillOS checks the restart's checkpoint only,
for the suite's time) its final parameters equal an uninterrupted run's bit for bit.
Before the fix the restart printed the SFT summary again (and the SFT result was nowhere saved).
"""

import numpy as np
import pytest

from skillax.rl.checkpoint import Checkpointer
from tests.methods._interrupt import TOO_SMALL_GB
from tests.methods.test_skill1_kill_resume import _flatten
from tests.methods.test_skillos_integration import tiny_model  # noqa: F401 (fixture)



def _params(work):
    with Checkpointer(work / "checkpoints") as ck:
        step = ck.latest_step()
        state, _, _ = ck.restore_arrays()
    return step, _flatten(state["params"])


def _crash_restart_compare(run, make_cfg, tmp_path, capsys, sft_marker: str, crash=None, reference=True):
    """Reference run (``reference``); crashed run (``model.sampler_memory_gb`` too small:
    raises in RL step 0 after its SFT; or ``crash(cfg, workdir)``, which must raise there);
    restart. Without the reference the restart's RL checkpoint is checked to exist (step 0)
    and no params are compared (the suite's time budget: Skill-alpha's test compares them,
    through the same ``warmstart.plan`` path). Returns the runs' stdout."""
    out_ref = ""
    if reference:
        run(make_cfg(), str(tmp_path / "ref"))
        out_ref = capsys.readouterr().out
        assert out_ref.count(sft_marker) == 1

    work = tmp_path / "run"
    if crash is None:
        bad = make_cfg()
        bad.model.sampler_memory_gb = TOO_SMALL_GB
        with pytest.raises(ValueError, match="sampler memory"):
            run(bad, str(work))
    else:
        crash(make_cfg(), str(work))
    out_crash = capsys.readouterr().out
    assert out_crash.count(sft_marker) == 1 and (work / "warmstart" / "DONE.json").is_file()
    assert not (work / "checkpoints").is_dir() or not any(p.name.isdigit() for p in (work / "checkpoints").iterdir())

    run(make_cfg(), str(work))
    out_restart = capsys.readouterr().out
    assert sft_marker not in out_restart                                   # SFT not repeated
    assert f"warm start loaded from {work / 'warmstart'}" in out_restart

    s_got, p_got = _params(work)
    if not reference:
        assert s_got == 0 and p_got
        return out_ref, out_crash, out_restart
    s_ref, p_ref = _params(tmp_path / "ref")
    assert s_ref == s_got == 0 and sorted(p_ref) == sorted(p_got)
    for k in p_ref:
        np.testing.assert_array_equal(p_ref[k], p_got[k], err_msg=k)
    return out_ref, out_crash, out_restart


@pytest.mark.slow
def test_skillos_crash_in_rl_step0_skips_sft_on_restart(tiny_model, tmp_path, capsys):  # noqa: F811
    from skillax.methods.skillos import run
    from tests.methods.test_skillos_integration import tiny_config

    def make_cfg():
        c = tiny_config(tiny_model, steps=1)
        c.sft.steps, c.sft.n_tasks, c.sft.batch_size, c.sft.max_len = 1, 3, 2, 1280
        c.eval.conditions = "none"
        return c
    _crash_restart_compare(run, make_cfg, tmp_path, capsys, "curator SFT warm start:", reference=False)


@pytest.mark.slow
def test_skill_alpha_crash_in_rl_step0_skips_sft_on_restart(tiny_model, tmp_path, capsys, monkeypatch):  # noqa: F811
    """Skill-alpha's frozen worker samples before RL (evidence stream) with prompts as long as
    the editor's, so no sampler budget fails in RL step 0 only: the crash is a simulated kill
    (``tests.methods._interrupt.Killed``) at the start of RL step 0's units."""
    from skillax.methods.skill_alpha import loop
    from tests.methods._interrupt import Killed, run_killed
    from tests.methods.test_skill_alpha_campaign import arm_config

    def make_cfg():
        c = arm_config(tiny_model, steps=1)
        c.eval.conditions = "none"
        c.infer.enabled = False
        return c

    def crash(cfg, work):
        def killed(*a, **k):
            raise Killed("killed in RL step 0")
        with monkeypatch.context() as mp:
            mp.setattr(loop, "run_units", killed)
            assert isinstance(run_killed(loop.run, cfg, work), Killed)
    _crash_restart_compare(loop.run, make_cfg, tmp_path, capsys, "edit SFT:", crash=crash)
