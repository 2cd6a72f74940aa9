"""ALFWorld from ../shared/data/alfworld: loading, rebuilding, expert play, bad input."""
import collections
import gzip
import json
import os
import time

import pytest

from skillax.agents.envs.alfworld import (AlfWorldDataError, AlfWorldEnv, TASK_TYPES, build_game_file,
                                          load_alfworld_tasks, parse_goal, read_pack, stratified_sample)
from skillax.agents.envs.experts import ExpertRecord, alfworld_experts
from tests.conftest import SHARED, needs_shared

pytestmark = needs_shared

# Fast games (README verification: ~1 s each), one per split.
FAST = ["valid_seen/look_at_obj_in_light-AlarmClock-None-DeskLamp-323/trial_T20190909_044715_250790",
        "valid_unseen/pick_and_place_simple-Mug-None-Desk-308/trial_T20190909_203041_433487",
        "valid_train/pick_two_obj_and_place-ToiletPaper-None-Cabinet-412/trial_T20190908_141555_713466"]


@pytest.fixture(scope="module")
def tasks():
    return load_alfworld_tasks(str(SHARED / "data" / "alfworld"))


def _by_id(tasks):
    return {t.id: t for t in tasks}


def test_pack_counts_and_attributes(tasks):
    """Counts of the README table; every goal parses into its folder's task type."""
    assert len(tasks) == 474
    assert collections.Counter(t.split for t in tasks) == {"valid_seen": 140, "valid_unseen": 134, "valid_train": 200}
    c = collections.Counter((t.split, t.family) for t in tasks)
    assert c["valid_seen", "pick_and_place_simple"] == 35 and c["valid_train", "pick_two_obj_and_place"] == 45
    assert {t.family for t in tasks} == set(TASK_TYPES)
    for t in tasks:
        p = parse_goal(t.goal)
        assert p is not None and p["task_type"] == t.family, t.goal
    t = _by_id(tasks)[FAST[0]]
    assert t.goal == "look at alarmclock under the desklamp"
    assert t.attributes == {"task_type": "look_at_obj_in_light", "object": "alarmclock", "receptacle": "desklamp",
                            "objects": ["alarmclock"], "receptacles": ["desklamp"], "scene": "323"}
    assert parse_goal("put a clean butterknife in countertop") == {
        "task_type": "pick_clean_then_place_in_recep", "object": "butterknife", "receptacle": "countertop"}
    assert parse_goal("dance") is None


def test_split_and_type_filters(shared_dir):
    d = str(shared_dir / "data" / "alfworld")
    got = load_alfworld_tasks(d, splits=["valid_unseen"], task_types=["pick_heat_then_place_in_recep"])
    assert len(got) == 23
    with pytest.raises(ValueError, match="unknown ALFWorld pack split"):
        load_alfworld_tasks(d, splits=["train"])
    with pytest.raises(ValueError, match="unknown ALFWorld task type"):
        load_alfworld_tasks(d, task_types=["pick_and_place"])


def test_malformed_pack_names_file_and_record(tmp_path, shared_dir):
    good = read_pack(str(shared_dir / "data" / "alfworld" / "games.jsonl.gz"))[0]
    p = tmp_path / "games.jsonl.gz"
    with gzip.open(p, "wt") as f:
        f.write(json.dumps(good) + "\n{not json\n")
    with pytest.raises(AlfWorldDataError, match=rf"{p}: line 2: not valid JSON"):
        read_pack(str(p))
    bad = {k: v for k, v in good.items() if k != "goal"}
    with gzip.open(p, "wt") as f:
        f.write(json.dumps(bad) + "\n")
    with pytest.raises(AlfWorldDataError, match=r"line 1 \(game_id=look_at_obj_in_light-AlarmClock.*\['goal'\]"):
        load_alfworld_tasks(str(tmp_path))
    p.write_bytes(b"not gzip at all")
    with pytest.raises(AlfWorldDataError, match="cannot read as gzip"):
        read_pack(str(p))
    with pytest.raises(FileNotFoundError, match="ALFWorld data not found"):
        load_alfworld_tasks(str(tmp_path / "missing"))


def test_download_layout_same_tasks(tmp_path, tasks, shared_dir):
    """json_2.1.1/<split>/<task>/<trial>/game.tw-pddl gives the same tasks and playable games."""
    logic = shared_dir / "data" / "alfworld" / "domain_json_2.1.1"
    domain, grammar = (logic / "alfred.pddl").read_text(), (logic / "alfred.twl2").read_text()
    picks = [_by_id(tasks)[FAST[0]], _by_id(tasks)[FAST[1]]]
    for t, split in zip(picks, ["valid_seen", "valid_seen"]):
        d = tmp_path / "json_2.1.1" / split / t.payload["game_id"]
        d.mkdir(parents=True)
        (d / "game.tw-pddl").write_text(json.dumps({"pddl_domain": domain, "pddl_problem": t.payload["pddl_problem"],
                                                    "grammar": grammar.replace("UNKNOWN GOAL", t.goal), "solvable": True}))
    skip = tmp_path / "json_2.1.1" / "valid_seen" / "pick_cool_then_place_in_recep-X-None-Y-1" / "trial_1"
    skip.mkdir(parents=True)
    (skip / "game.tw-pddl").write_text(json.dumps({"solvable": False}))
    got = load_alfworld_tasks(str(tmp_path), splits=["valid_seen"])
    assert [(g.goal, g.family, g.attributes, g.payload["pddl_problem"]) for g in got] == \
           [(t.goal, t.family, t.attributes, t.payload["pddl_problem"]) for t in sorted(picks, key=lambda t: t.id)]
    # the wheel rebuild is the same file for both layouts (content-addressed)
    assert build_game_file(got[0]) == build_game_file(sorted(picks, key=lambda t: t.id)[0])
    env = AlfWorldEnv(logic="original")
    obs, info = env.reset(got[0])
    assert f"Your task is to: {got[0].goal}." in obs and info["admissible_commands"]
    env.close()


def test_invalid_actions_and_step_cap(tasks):
    env = AlfWorldEnv(max_steps=6)
    obs, info = env.reset(_by_id(tasks)[FAST[0]])
    assert obs.startswith("You are in the middle of a room") and "Welcome" not in obs
    assert "go to desk 1" in info["admissible_commands"]
    for action, reason in [("", "empty"), ("go to desk 1 " * 100, "too_long"), ("dance", "not_admissible")]:
        obs, reward, done, info = env.step(action)
        assert (obs, reward, done, info["invalid"], info["invalid_reason"]) == ("Nothing happens.", 0.0, False, True, reason)
    obs, _, done, info = env.step("Go to Desk 1.")  # normalised to the admissible spelling
    assert obs.startswith("You arrive at desk 1.") and not info["invalid"] and info["step"] == 4
    obs, _, done, info = env.step("use desklamp 1")
    assert not done
    obs, reward, done, info = env.step("take alarmclock 2 from desk 1")
    assert done and info["won"] and reward == 1.0 and not info["truncated"]
    env.reset(_by_id(tasks)[FAST[0]])  # reused game, fresh episode
    for _ in range(5):
        assert env.step("look")[2] is False
    _, _, done, info = env.step("look")
    assert done and info["truncated"] and not info["won"] and info["step"] == 6


def test_expert_wins_three_games(tasks):
    """Planner expert (the reset's plan, followed) wins one fast game per split."""
    picks = [_by_id(tasks)[i] for i in FAST]
    t0 = time.perf_counter()
    recs = alfworld_experts(picks, n_workers=0, use_cache=False)
    print(f"expert on 3 games: {time.perf_counter() - t0:.1f} s")
    assert [r.won for r in recs] == [True, True, True] and all(r.error is None for r in recs)
    assert recs[0].actions == ["go to desk 1", "use desklamp 1", "take alarmclock 2 from desk 1"]
    assert recs[0].steps[0][0].endswith("Your task is to: look at alarmclock under the desklamp.")
    assert ExpertRecord.from_dict(json.loads(json.dumps(recs[2].to_dict()))) == recs[2]


def test_reset_plan_equals_replanning_after_every_step(tasks):
    """``expert_plan="reset"``: the reset's info holds the plan, steps hold none; following it
    plays the same actions, observations and outcome as re-planning after every step (the
    expert before), on a fast game of each split and a two-object game of 7 steps."""
    from skillax.agents.envs.experts import _play, first_action_of_plan, follow_reset_plan

    games = [_by_id(tasks)[i] for i in FAST]
    games.append(next(t for t in tasks if t.split == "valid_train" and t.family == "pick_cool_then_place_in_recep"))
    once, every = AlfWorldEnv(max_steps=60, expert_plan="reset"), AlfWorldEnv(max_steps=60, expert_plan=True)
    try:
        for t in games:
            a = _play(once, t, follow_reset_plan(), 60, "once")
            b = _play(every, t, first_action_of_plan, 60, "every")
            assert a.won and a.error is None and (a.steps, a.final_observation, a.won) == (b.steps, b.final_observation, b.won)
        _, info = once.reset(games[0])
        assert info["expert_plan"] == ["go to desk 1", "use desklamp 1", "take alarmclock 2 from desk 1"]
        assert "expert_plan" not in once.step("go to desk 1")[3]
        _, info = once.reset(games[0])                     # a re-reset plans again
        assert info["expert_plan"][0] == "go to desk 1"
        every.reset(games[0])
        assert "expert_plan" in every.step("go to desk 1")[3]          # True: a plan after every step
    finally:
        once.close(), every.close()
    with pytest.raises(ValueError, match="expert_plan must be"):
        AlfWorldEnv(expert_plan="always")


@pytest.mark.slow
def test_expert_wins_6_games_across_splits(tasks):
    """A stratified sample (2 games per split; the data README's check played 30), played by
    the planner in 2 workers without the cache (104 s on CI for 30 games, 118 s for 12 on a
    slower 2-core box; 6 keep every split at half the cost of 12)."""
    sample = stratified_sample(tasks, 2)
    assert collections.Counter(t.split for t in sample) == {"valid_seen": 2, "valid_unseen": 2, "valid_train": 2}
    t0 = time.perf_counter()
    recs = alfworld_experts(sample, n_workers=2, use_cache=False)
    print(f"expert on 6 games: {time.perf_counter() - t0:.1f} s")
    assert all(r.won for r in recs), [(r.task_id, r.error) for r in recs if not r.won]
    assert all(3 <= r.n_steps <= 9 for r in recs)


def test_download_layout_bad_game_file(tmp_path):
    d = tmp_path / "json_2.1.1" / "valid_seen" / "pick_and_place_simple-Mug-None-Desk-1" / "trial_1"
    d.mkdir(parents=True)
    (d / "game.tw-pddl").write_text("{truncated")
    with pytest.raises(AlfWorldDataError, match=rf"{d / 'game.tw-pddl'}: not a readable game file"):
        load_alfworld_tasks(str(tmp_path), splits=["valid_seen"])
    (d / "game.tw-pddl").write_text(json.dumps({"solvable": True, "grammar": "grammar :: nothing", "pddl_problem": "p"}))
    with pytest.raises(AlfWorldDataError, match="grammar has no 'task' rule"):
        load_alfworld_tasks(str(tmp_path), splits=["valid_seen"])
    with pytest.raises(AlfWorldDataError, match="no split folder 'valid_unseen'"):
        load_alfworld_tasks(str(tmp_path), splits=["valid_unseen"])


def test_fast_pddl_plays_identically(tasks):
    """pddl_speedups (memoised grammar parses and PDDL->SAS translations, shallow derivation
    contexts) changes nothing a player sees: same observations, admissible commands,
    rewards, won -- over a reset and 12 random admissible actions -- and it is several times
    faster per step."""
    import random

    from skillax.agents.envs import pddl_speedups

    def play(fast):
        (pddl_speedups.install if fast else pddl_speedups.uninstall)()
        assert pddl_speedups.installed() == fast
        env, rng, out, secs, n = AlfWorldEnv(fast_pddl=False), random.Random(3), [], 0.0, 0
        for tid in FAST[1:2]:
            obs, info = env.reset(_by_id(tasks)[tid])
            out.append((obs, info["admissible_commands"]))
            for _ in range(12):
                t0 = time.perf_counter()
                obs, r, done, info = env.step(rng.choice(info["admissible_commands"]))
                secs, n = secs + time.perf_counter() - t0, n + 1
                out.append((obs, r, done, info["won"], info["admissible_commands"]))
        env.close()
        return out, secs / n

    try:
        slow, slow_s = play(False)
        fast, fast_s = play(True)
    finally:
        pddl_speedups.install()
    assert fast == slow and len(slow) == 13
    assert fast_s < slow_s / 2, (fast_s, slow_s)
