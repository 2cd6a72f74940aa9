"""TextWorld: deterministic generation, walkthroughs win, invalid actions continue the game."""
import json
import os
import subprocess
import sys

import pytest

from skillax.agents.envs import Task
from skillax.agents.envs.experts import textworld_expert
from skillax.agents.envs.textworld_env import (DEFAULT_FAMILIES, ONE_STEP_FAMILIES, TextWorldEnv, canonical_settings,
                                               default_textworld_tasks, family_name, make_textworld_tasks,
                                               resolve_families, strip_banner)
from skillax.agents.envs.runner import EnvPool
from skillax.agents.envs import env_spec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PLAY = r"""
import json, sys
from skillax.agents.envs.textworld_env import TextWorldEnv, make_textworld_tasks
out = []
for ch, st, seed in [("tw-cooking", {"recipe": 1, "take": 1, "go": 6}, 3), ("tw-treasure_hunter", {"level": 5}, 11)]:
    task = make_textworld_tasks(ch, st, [seed], root=sys.argv[1])[0]
    env = TextWorldEnv(root=sys.argv[1])
    obs, info = env.reset(task)
    rec = {"goal": task.goal, "walk": task.payload["walkthrough"], "obs": [obs], "adm": [info["admissible_commands"]]}
    for a in task.payload["walkthrough"]:
        obs, r, d, info = env.step(a)
        rec["obs"].append(obs); rec["adm"].append(info["admissible_commands"])
    rec["won"] = info["won"]
    out.append(rec)
print(json.dumps(out))
"""


def test_same_seed_same_game_across_processes(tmp_path):
    """Two fresh generations (separate caches, different hash seeds) give the same game."""
    procs = []
    for run, hashseed in (("a", "1"), ("b", "2")):
        env = {**os.environ, "PYTHONHASHSEED": hashseed, "PYTHONPATH": REPO}
        procs.append(subprocess.Popen([sys.executable, "-c", _PLAY, str(tmp_path / run)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    a, b = outs
    assert a == b
    assert all(r["won"] for r in a) and len(a[0]["walk"]) >= 3


def test_default_tasks_walkthroughs_win():
    tasks = default_textworld_tasks(1)
    assert {t.family for t in tasks} == {"tw-treasure_hunter/level=5", "tw-coin_collector/level=5",
                                         "tw-cooking/open=True,take=1", "tw-cooking/go=6,take=1"}
    env = TextWorldEnv()
    for t in tasks:
        rec = textworld_expert(t, env=env)
        assert rec.won and rec.error is None, (t.id, rec)
        assert 3 <= rec.n_steps <= 10
        assert "$$" not in rec.steps[0][0] and t.goal in rec.steps[0][0]
    # generation is cached: a second call returns the same tasks
    assert [x.payload for x in default_textworld_tasks(1)] == [x.payload for x in tasks]


def _default_config():
    import importlib.util

    spec = importlib.util.spec_from_file_location("default_config", os.path.join(REPO, "configs", "default.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config()


def test_one_step_families_fit_the_default_step_cap():
    """configs/default.py plays the "one_step" families under env.max_steps: the walkthroughs
    of games it trains on (and of a held-out game per family) fit the cap and win within it,
    so its episodes can be won and Skill1 can admit skills (admission needs r = 1)."""
    pytest.importorskip("textworld", reason="textworld is not installed (PyPI textworld[pddl])")
    from skillax.methods.common.tasks import load_tasks

    c = _default_config()
    assert c.env.name == "textworld" and resolve_families(c.env.tw_families) == ONE_STEP_FAMILIES
    cap = int(c.env.max_steps)
    assert c.env.tw_games_per_family >= 2
    c.env.tw_games_per_family = 2  # its first 2 training games per family (cold cache: 1-3 s a game)
    tasks = load_tasks(c.env, c.env.train_split)
    tasks += default_textworld_tasks(1, split="test", families=ONE_STEP_FAMILIES)
    assert len(tasks) == 3 * len(ONE_STEP_FAMILIES)
    assert {t.family for t in tasks} == {family_name(ch, st) for ch, st in ONE_STEP_FAMILIES}
    env = TextWorldEnv(max_steps=cap)
    lengths = {}
    for t in tasks:
        walk = t.payload["walkthrough"]
        lengths.setdefault(t.family, set()).add(len(walk))
        assert 1 <= len(walk) <= cap, (t.id, walk)
        rec = textworld_expert(t, env=env)
        assert rec.won and rec.error is None and rec.n_steps == len(walk), (t.id, rec)
    env.close()
    assert all(v == {1} for v in lengths.values()), lengths   # one action: take the object


def test_load_tasks_limit_generates_only_the_sample(monkeypatch):
    """A limited TextWorld load returns what sampling the full generated list returned before
    (same seeded draw, sorted by id) and generates only the kept games."""
    import random

    import ml_collections

    from skillax.agents.envs import textworld_env
    from skillax.methods.common.tasks import load_tasks

    # the held-out games test_one_step_families_fit_the_default_step_cap generated (cached)
    env = ml_collections.ConfigDict(dict(name="textworld", tw_families="one_step", tw_games_per_family=1))
    full = default_textworld_tasks(1, split="test", families=ONE_STEP_FAMILIES)
    want = sorted(random.Random("valid_unseen-1").sample(full, 1), key=lambda t: t.id)
    made = []
    real = textworld_env.make_textworld_tasks
    monkeypatch.setattr(textworld_env, "make_textworld_tasks", lambda *a, **kw: made.append(a) or real(*a, **kw))
    got = load_tasks(env, "valid_unseen", 1)
    assert [t.id for t in got] == [t.id for t in want] and len(made) == 1
    assert [t.id for t in load_tasks(env, "valid_unseen")] == [t.id for t in full]


def test_resolve_families():
    assert resolve_families("") == resolve_families("default") == DEFAULT_FAMILIES
    assert resolve_families(" one_step ") == ONE_STEP_FAMILIES
    assert resolve_families("tw-coin_collector:level=2;tw-simple") == (
        ("tw-coin_collector", {"level": 2}), ("tw-simple", {}))
    with pytest.raises(ValueError, match="key=value"):
        resolve_families("shortt:x")


@pytest.mark.slow
def test_walkthroughs_win_10_games():
    """2 games of each default family and of tw-simple (was 4 of each: 20 games, ~30 s of the suite)."""
    tasks = default_textworld_tasks(2, split="test")
    tasks += make_textworld_tasks("tw-simple", {"rewards": "dense", "goal": "brief"}, range(2), split="test")
    assert len(tasks) == 10
    env = TextWorldEnv(max_steps=50)
    won = [textworld_expert(t, env=env).won for t in tasks]
    assert all(won), [t.id for t, w in zip(tasks, won) if not w]


def test_invalid_actions_continue_the_game():
    task = default_textworld_tasks(1)[0]  # treasure hunter, 3 steps
    env = TextWorldEnv(max_steps=20)
    obs, info = env.reset(task)
    assert info["step"] == 0 and not info["invalid"] and info["admissible_commands"]
    for action, reason in [("", "empty"), ("x" * 5000, "too_long"), ("dance wildly", "not_admissible")]:
        obs, reward, done, info = env.step(action)
        assert (info["invalid"], info["invalid_reason"], done, reward) == (True, reason, False, 0.0)
    assert info["step"] == 3
    walk = task.payload["walkthrough"]
    for a in walk[:-1]:
        _, _, done, info = env.step(a.upper() + ".")  # case and full stop are normalised
        assert not info["invalid"] and not done
    obs, reward, done, info = env.step(walk[-1])
    assert done and info["won"] and reward == 1.0 and info["step"] == 3 + len(walk)
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step("look")


def test_step_cap():
    task = default_textworld_tasks(1)[1]  # coin collector, 5 steps
    env = TextWorldEnv(max_steps=2)
    env.reset(task)
    assert env.step("look")[2] is False
    _, _, done, info = env.step("look")
    assert done and info["truncated"] and not info["won"]


def test_bad_settings_and_tasks():
    with pytest.raises(ValueError, match="unknown TextWorld challenge"):
        canonical_settings("tw-nope", {})
    with pytest.raises(ValueError, match="unknown setting 'levle'"):
        canonical_settings("tw-coin_collector", {"levle": 3})
    assert family_name("tw-coin_collector", {"level": 1}) == "tw-coin_collector"
    with pytest.raises(ValueError, match="not a TextWorld task"):
        TextWorldEnv().reset(Task("x", "textworld", "f", "g"))
    with pytest.raises(ValueError, match="split must be one of"):
        default_textworld_tasks(1, split="dev")


def test_strip_banner():
    raw = "$$$$$$\\  $$\n \\$$$$$$  |\n\nHello!\n\n\n\n-= Room =-\nText.\n>  -= Room =-0/1\n"
    assert strip_banner(raw) == "Hello!\n\n-= Room =-\nText."


def test_pool_plays_textworld_in_workers():
    tasks = default_textworld_tasks(1)
    with EnvPool(env_spec("textworld"), n_workers=2) as pool:
        pool.reset_batch(tasks)
        walks = [t.payload["walkthrough"] for t in tasks]
        for t in range(max(map(len, walks))):
            res = pool.step_batch([w[t] if t < len(w) else None for w in walks])
        assert all(r[3]["won"] for r in res)


def test_corrupt_cache_files_are_named(tmp_path):
    from skillax.agents.envs.experts import _cache_path, alfworld_expert
    from skillax.agents.envs.textworld_env import _game_paths, generate_game

    settings = canonical_settings("tw-coin_collector", {"level": 2})
    stem = _game_paths("tw-coin_collector", settings, 0, str(tmp_path))
    os.makedirs(os.path.dirname(stem))
    with open(stem + ".meta.json", "w") as f:
        f.write("{oops")
    with pytest.raises(ValueError, match=r"s0\.meta\.json: not valid JSON"):
        generate_game("tw-coin_collector", settings, 0, str(tmp_path))
    with open(stem + ".meta.json", "w") as f:
        json.dump({"game_file": "x"}, f)
    with pytest.raises(ValueError, match=r"meta\.json: missing field\(s\) \['objective'"):
        generate_game("tw-coin_collector", settings, 0, str(tmp_path))
    task = Task("valid_seen/x", "alfworld", "pick_and_place_simple", "put a mug in desk", payload={"pddl_problem": "p"})
    path = _cache_path(task, "planner-wheel", str(tmp_path))
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        json.dump({"task_id": "valid_seen/x", "steps": [{"observation": "o"}]}, f)
    with pytest.raises(ValueError, match=rf"{path}: malformed expert record"):
        alfworld_expert(task, root=str(tmp_path))
