"""Issue 23 items 7 and 5: --config.mode=show, one-line errors for misspelt override keys,
and the whole-config check before any model loads (real CLI subprocesses, real configs)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import time

import pytest

from skillax import config_help
from skillax.config_check import ConfigError, check_buckets, check_config
from skillax.config_keys import closest, load_config_file, unknown_override, walk
from skillax.modes import show

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args, env=None):
    t = time.time()
    p = subprocess.run([sys.executable, "-m", "skillax.main", *args], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, timeout=120)
    return p, time.time() - t


def test_misspelt_key_is_one_line_with_the_closest_key():
    p, _ = cli("--config", "configs/default.py", "--config.trian.lr=1")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "skillax: unknown config key 'trian.lr' (no 'trian' in configs/default.py); closest: train.lr, ")
    assert "Traceback" not in p.stderr


def test_unknown_override_leaf_and_no_match():
    argv = ["main", "--config=configs/default.py", "--config.train.lrr", "3", "--config.steps=1"]
    assert unknown_override(argv).startswith("unknown config key 'train.lrr' (not in configs/default.py); "
                                             "closest: train.lr")
    assert "--config.mode=show lists every key" in unknown_override(["m", "--config", "configs/default.py",
                                                                      "--config.zzzqqq=1"])
    assert unknown_override(["m", "--config", "configs/default.py", "--config.train.lr=2"]) is None
    assert closest(load_config_file("configs/default.py"), "rollout.topk")[0] == "rollout.top_k"


@pytest.mark.parametrize("override, needle", [
    ("--config.train.length_buckets=128", "the largest bucket 128 is shorter than the longest rollout row (1024"),
    ("--config.ablation=no_selectoin", "ablation must be one of ('none', 'no_selection', 'no_distillation', "
                                       "'no_library'), got 'no_selectoin'"),
    ("--config.train.update_layout=pad", "train.update_layout must be one of ('buckets', 'padded'), got 'pad'"),
])
def test_bad_setting_fails_before_any_model_load(override, needle):
    p, dt = cli("--config", "configs/default.py", override, "--workdir", "/nonexistent/never_written")
    assert p.returncode == 2, p.stderr[-2000:]
    assert needle in p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""     # no SFT line, no progress bar
    assert dt < 60


def test_mesh_vs_devices_on_two_fake_devices():
    p, _ = cli("--config", "configs/default.py", "--config.mesh.enabled=true", "--config.mesh.shape=(3,1,1)",
               env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert p.returncode == 2 and "mesh shape (3, 1, 1) needs 3 devices, have 2" in p.stderr


def test_all_problems_listed_and_every_shipped_config_passes():
    cfg = load_config_file("configs/default.py")
    with cfg.unlocked():
        cfg.ablation, cfg.train.update_layout = "x", "y"
    with pytest.raises(ConfigError, match=r"2 setting\(s\) cannot run:\n  - ablation .*\n  - train.update_layout"):
        check_config(cfg)
    for path in sorted(glob.glob(os.path.join(ROOT, "configs", "*.py"))):
        check_config(load_config_file(path))


def test_check_buckets_edges():
    check_buckets((128, 256), 256, "x")
    with pytest.raises(ValueError, match="largest bucket 256 is shorter than the longest rollout row \\(257"):
        check_buckets((128, 256), 257, "x")
    with pytest.raises(ValueError, match="ascending"):
        check_buckets((256, 128), 10, "x")


def test_show_mode_prints_every_key_sorted_with_the_file_mode():
    p, dt = cli("--config", "configs/skill1_alfworld_learning.py", "--config.mode=show", "--config.train.lr=2e-5")
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    cfg = load_config_file("configs/skill1_alfworld_learning.py")
    keys = [k for k, _ in walk(cfg)]
    assert lines[0].startswith("# configs/skill1_alfworld_learning.py: mode 'skill1' (shown with --config.mode=show); "
                               f"{len(keys)} keys")
    assert [ln.split(" = ")[0] for ln in lines[1:]] == sorted(keys)
    assert "mode = 'skill1'  # -" in lines                     # the file's mode, not 'show'
    assert "train.lr = 2e-05  # campaign 2 lever (docstring); campaign 1: 5e-6" in lines   # override shown
    assert "warmstart.wait_s = 0.0  # wait this long for load_dir to complete." in lines
    assert "train.micro_batch = 32  # rows per micro-batch (gradient accumulation over the rest of the batch)." in lines
    assert "rl.epochs = 1  # passes over the rollout batch (verl's ppo_epochs)." in lines
    assert "seed = 0  # -" in lines
    assert dt < 30


def test_skill1_batch_floor_follows_a_command_line_step_size():
    """model.batch_floor (tasks_per_step x group_size, a reference) after --config overrides."""
    p, _ = cli("--config", "configs/skill1_alfworld_gpu.py", "--config.mode=show", "--config.tasks_per_step=2")
    assert p.returncode == 0, p.stderr[-2000:]
    shown = {ln.split(" = ")[0]: ln.split(" = ")[1].split("  #")[0] for ln in p.stdout.splitlines()[1:]}
    assert (shown["tasks_per_step"], shown["group_size"], shown["model.batch_floor"]) == ("2", "4", "8")
    assert shown["model.prefill_floor"] == "2"
    # overriding a floor sets the floor, never the step size it refers to (session 28: a bare
    # reference made `model.prefill_floor=0` set tasks_per_step to 0)
    p, _ = cli("--config", "configs/skill1_alfworld_gpu.py", "--config.mode=show",
               "--config.model.prefill_floor=0", "--config.model.batch_floor=0")
    assert p.returncode == 0, p.stderr[-2000:]
    shown = {ln.split(" = ")[0]: ln.split(" = ")[1].split("  #")[0] for ln in p.stdout.splitlines()[1:]}
    assert (shown["tasks_per_step"], shown["group_size"]) == ("8", "4")
    assert (shown["model.batch_floor"], shown["model.prefill_floor"]) == ("0", "0")


def test_show_applies_the_released_code_preset():
    """--config.mode=show prints what a released_code run uses: the preset where the config
    leaves Skill1's default, an explicit override where one is given."""
    p, _ = cli("--config", "configs/skill1_alfworld_learning.py", "--config.mode=show",
               "--config.objective=released_code", "--config.rl.kl_coef=0.05")
    assert p.returncode == 0, p.stderr[-2000:]
    shown = {ln.split(" = ")[0]: ln.split(" = ")[1].split("  #")[0] for ln in p.stdout.splitlines()[1:]}
    assert (shown["rl.kl_coef"], shown["rollout.top_k"], shown["play.invalid_penalty"]) == ("0.05", "3", "0.1")


def test_show_help_from_method_docstrings():
    cfg = load_config_file("configs/skillos_tiny.py")
    out = show.lines(cfg, "configs/skillos_tiny.py")
    assert "grouping = 'attributes'  # \"attributes\" | \"random\" (the paper's w/o-grouping ablation)" in out
    cfg = load_config_file("configs/skill_alpha_tiny.py")
    helps = config_help.key_help(cfg, "configs/skill_alpha_tiny.py", "skill_alpha")
    assert helps["lanes"] == ("units per step (independent skills editing the stream from staggered offsets; "
                              "the paper's batch of 8 units)")


def test_docstring_help_forms():
    doc = """Knobs.

    a: first thing. b: second (with x: inside).
    c.d    table text
    * ``sec``: ``e`` (mentioned in a bullet), ``f``
    """
    got = config_help.docstring_help(doc, {"a", "b", "c.d", "sec.e", "sec.f"}, {"sec"})
    assert got == {"a": "first thing.", "b": "second (with x: inside).", "c.d": "table text",
                   "sec.e": "(mentioned in a bullet)"}


def test_help_lists_every_mode_and_points_to_show():
    """Issue 23 item 7: ``--help`` listed only --config and --workdir."""
    from skillax.modes import MODE_HELP, MODES

    p, _ = cli("--help")
    assert p.returncode in (0, 1), p.stderr[-1000:]       # absl's --help exits 1 after printing
    out = p.stdout + p.stderr
    assert set(MODE_HELP) == set(MODES)
    for mode in MODES:
        assert f"  {mode} " in out, mode
    assert "--config.mode=show" in out and "--config configs/default.py --config.mode=show" in out


@pytest.mark.parametrize("old, new", [("executor.base_url", "executor.openai.base_url"),
                                      ("judge.model", "judge.openai.model"),
                                      ("executor.max_retries", "executor.openai.max_retries")])
def test_old_endpoint_spelling_is_a_one_line_error_naming_the_new_key(old, new):
    """One spelling for endpoints across methods (``<role>.openai.*``): SkillOS's flat
    ``executor.base_url`` / ``judge.model`` are refused with the new key named, on the command
    line and through the Python API; Skill-alpha and SkillOS configs both carry the section."""
    from skillax import configs
    from skillax.config_keys import renamed_message

    argv = ["m", "--config", "configs/skillos_alfworld.py", f"--config.{old}=x"]
    msg = unknown_override(argv)
    assert msg == (f"config key {old!r} was renamed to {new!r} (one spelling for endpoints across methods: "
                   f"<role>.openai.*); use --config.{new}=...")
    with pytest.raises(KeyError, match=f"renamed to '{new}'"):
        configs.get("skillos_alfworld", {old: "x"})
    assert renamed_message(configs.get("skillos_alfworld"), new) is None       # the new key is fine
    for name, roles in (("skillos_alfworld", ("executor", "judge")), ("skill_alpha_alfworld", ("worker", "judge", "sft"))):
        cfg = configs.get(name)
        for role in roles:
            assert sorted(cfg[role].openai.keys()) == ["api_key_env", "base_url", "cache_path", "max_concurrency",
                                                       "max_retries", "model", "timeout_s"], (name, role)
            assert "base_url" not in cfg[role] and "model" not in cfg[role]


def test_old_endpoint_spelling_on_the_cli_exits_2_in_one_line():
    p, _ = cli("--config", "configs/skillos_alfworld.py", "--config.executor.base_url=http://127.0.0.1:1/v1")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("skillax: config key 'executor.base_url' was renamed to 'executor.openai.base_url'")
