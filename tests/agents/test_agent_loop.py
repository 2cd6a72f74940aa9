"""Agent loop host side: action parsing, prompt content, lock-step play with a scripted policy."""
import pytest

from skillax.agents.agent_loop import (PlayConfig, Trajectory, build_play_prompt, format_admissible,
                                       parse_action, play_episodes)
from skillax.agents.envs import EnvSpec, Task
from skillax.agents.envs.runner import EnvPool

from ._toy_env import ToyEnv


@pytest.mark.parametrize("text,expected", [
    ("<think>the desk is near</think><action>go to desk 1</action>", ("go to desk 1", None)),
    ("<think>a</think>\n<action>  take   mug 1\nfrom desk 1 </action>", ("take mug 1 from desk 1", None)),
    ("Sure! <think>x</think> ok <action>look</action> and then I will win.", ("look", None)),
    ("<think>x</think><action>look</action><action>go north</action>", ("look", None)),
    ("<think>no action here</think>", (None, "missing_action_tag")),
    ("<think>x</think><action>look", (None, "missing_action_tag")),
    ("go to desk 1", (None, "missing_action_tag")),
    ("<think>x</think><action>   </action>", (None, "empty_action")),
    ("<think>x</think><action></action>", (None, "empty_action")),
    ("<action>look</action>", ("look", "missing_think")),
    ("<think>unclosed <action>look</action>", ("look", "missing_think")),
    ("<think>x</think><action>" + "a" * 201 + "</action>", (None, "action_too_long")),
    (None, (None, "missing_action_tag")),
])
def test_parse_action(text, expected):
    assert parse_action(text) == expected


def test_parse_action_without_think_requirement():
    assert parse_action("<action>look</action>", require_think=False) == ("look", None)


def test_prompt_contains_exactly_last_k_history():
    history = [(f"obs-{i}", f"act-{i}") for i in range(5)]
    cfg = PlayConfig(history_k=2)
    sys_msg, user = build_play_prompt("find the coin", "obs-now", history, ["go north", "look"],
                                      skills=["Always look first."], step=5, cfg=cfg)
    assert sys_msg["role"] == "system" and "<think>" in sys_msg["content"] and "<action>" in sys_msg["content"]
    text = user["content"]
    assert [f"obs-{i}" in text for i in range(5)] == [False, False, False, True, True]
    assert [f"act-{i}" in text for i in range(5)] == [False, False, False, True, True]
    assert "[4] Obs: obs-3\nAction: act-3\n[5] Obs: obs-4\nAction: act-4" in text
    assert "Task: find the coin" in text and "Skills:\n[1] Always look first." in text
    assert "Step 6. Observation: obs-now" in text and "Admissible actions: go north; look" in text
    none = build_play_prompt("g", "o", history, ["look"], cfg=PlayConfig(history_k=0))[1]["content"]
    assert "Recent steps" not in none and "Skills" not in none
    short = build_play_prompt("g", "o", history[:1], ["look"], cfg=cfg)[1]["content"]
    assert "[1] Obs: obs-0\nAction: act-0" in short


def test_caps_keep_prompt_compact():
    cfg = PlayConfig(max_admissible=3, max_obs_chars=20, max_skill_chars=20, max_skills=1)
    assert format_admissible(["a", "b", "help", "c", "d"], cfg) == "a; b; c; (+1 more)"
    assert format_admissible(["a", "help"], cfg) == "a; help"
    user = build_play_prompt("g", "x" * 100, [], [], skills=["s" * 100, "second"], cfg=cfg)[1]["content"]
    assert "x" * 17 + "..." in user and "x" * 18 not in user
    assert "s" * 17 + "..." in user and "second" not in user and "Admissible" not in user


def _tasks(n):
    return [Task(f"t{i}", "toy", "toy", "win the game") for i in range(n)]


def test_play_episodes_with_scripted_policy():
    """t0 wins at step 2; t1 answers badly (no tags, then no think) and times out at 5."""
    calls = []

    def generate(prompts):
        calls.append(len(prompts))
        out = []
        for p in prompts:
            u = p[1]["content"]
            if u.startswith("Task: win the game") and "t0:" in u:
                out.append({"text": "<think>ok</think><action>go</action>" if "Step 1." in u
                            else "<think>now</think><action>win</action>", "ids": [1, 2]})
            elif "Step 1." in u:
                out.append("I refuse to use tags")
            else:
                out.append("<action>go</action>")
        return out

    spec = EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 5})
    with EnvPool(spec, n_workers=0) as pool:
        trajs = play_episodes(pool, _tasks(2), generate, skills=[["skill A"], []],
                              cfg=PlayConfig(invalid_penalty=0.1))
    t0, t1 = trajs
    assert calls == [2, 2, 1, 1, 1]
    assert (t0.won, t0.n_steps, t0.reward, t0.penalty, t0.score) == (True, 2, 1.0, 0.0, 1.0)
    assert [s.action for s in t0.steps] == ["go", "win"] and t0.steps[0].gen == {"ids": [1, 2]}
    assert "Skills:\n[1] skill A" in t0.steps[0].prompt[1]["content"]
    assert (t1.won, t1.n_steps, t1.reward) == (False, 5, 0.0)
    assert [s.invalid_reason for s in t1.steps] == ["missing_action_tag"] + ["missing_think"] * 4
    assert t1.steps[0].action is None and t1.steps[0].env_invalid  # empty action played
    assert t1.penalty == pytest.approx(0.5) and t1.n_invalid == 5
    assert t1.steps[1].observation == "t1: t=1 trace=" and t1.final_observation == "t1: t=5 trace=,go,go,go,go"
    d = t0.to_dict()
    assert d["n_steps"] == 2 and d["reward"] == 1.0 and d["token_ids"] is None


def test_play_episodes_checks_response_count():
    spec = EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {})
    with EnvPool(spec, n_workers=0) as pool, pytest.raises(ValueError, match="1 responses for 2 prompts"):
        play_episodes(pool, _tasks(2), lambda prompts: ["<think></think><action>go</action>"])


def test_trajectory_defaults():
    t = Trajectory("id", "goal")
    assert (t.n_steps, t.reward, t.n_invalid, t.history()) == (0, 0.0, 0, [])


def test_observation_repeating_the_goal_is_shortened():
    user = build_play_prompt("Find the coin.", "Find the coin.\n\n-= Attic =-\nDusty.", [], ["look"])[1]["content"]
    assert "Step 1. Observation: -= Attic =-\nDusty." in user and user.count("Find the coin.") == 1


def test_play_real_textworld_games_with_walkthrough_policy():
    """End to end on real games: a policy answering with the walkthrough wins every game."""
    import re

    from skillax.agents.envs import env_spec
    from skillax.agents.envs.textworld_env import default_textworld_tasks

    tasks = default_textworld_tasks(1)
    walks = {t.id: t.payload["walkthrough"] for t in tasks}

    def generate(prompts):
        out = []
        for _, user in prompts:  # the task id travels in the injected skills block
            tid = re.search(r"\[1\] id=(\S+)", user["content"]).group(1)
            step = int(re.search(r"Step (\d+)\. Observation", user["content"]).group(1)) - 1
            out.append(f"<think>step {step}</think><action>{walks[tid][step]}</action>")
        return out

    with EnvPool(env_spec("textworld"), n_workers=0) as pool:
        trajs = play_episodes(pool, tasks, generate, skills=[[f"id={t.id}"] for t in tasks])
    assert [(t.won, t.n_steps, t.n_invalid) for t in trajs] == [(True, len(walks[t.task_id]), 0) for t in trajs]
    assert all(s.valid and not s.env_invalid for t in trajs for s in t.steps)


def _keyed_policy(calls):
    """A scripted policy keyed on (episode, turn) only: what a TurnSampler guarantees."""
    import random

    def generate(prompts, ids):
        calls.append([e for e, _ in ids])
        out = []
        for (e, t), p in zip(ids, prompts):
            r = random.Random(f"{e}-{t}").random()
            assert f"Step {t + 1}." in p[1]["content"]
            text = ("<think>w</think><action>win</action>" if r < 0.15 else
                    "no tags" if r < 0.3 else f"<think>{e},{t}</think><action>go</action>")
            out.append({"text": text, "ids": (e, t)})
        return out

    generate.takes_ids = True
    return generate


def _signature(trajs):
    return [(t.task_id, t.won, t.truncated, t.failed, t.penalty, t.score, t.final_observation,
             [(s.observation, s.response, s.action, s.reward, s.done, s.gen["ids"]) for s in t.steps])
            for t in trajs]


@pytest.mark.parametrize("workers,overlap", [(0, 2), (2, 2), (3, 3), (2, "auto")])
def test_overlapped_play_equals_lock_step(workers, overlap):
    """Same episodes (prompts, responses, actions, rewards) as lock-step, with uneven step
    times making results arrive out of order; the overlapped calls really were partial."""
    tasks = [Task(f"t{i}", "toy", "toy", "win the game",
                  payload={"delay": [0.0, 0.03 * (i % 3), 0.01]}) for i in range(7)]
    spec = EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 6})
    runs = {}
    for k in (1, overlap):
        calls = []
        with EnvPool(spec, n_workers=workers) as pool:
            runs[k] = (_signature(play_episodes(pool, tasks, _keyed_policy(calls), max_steps=5,
                                                overlap=k)), calls)
    (lock, lock_calls), (over, over_calls) = runs[1], runs[overlap]
    assert over == lock
    assert sum(map(len, over_calls)) == sum(map(len, lock_calls))  # one row per played turn
    assert any(t[2] for t in lock) and any(t[1] for t in lock)     # capped and won episodes
    if workers and overlap != "auto":
        assert len(over_calls) > len(lock_calls)   # turns of different episodes were split


def test_overlapped_play_worker_crash_ends_only_its_episode():
    tasks = [Task(f"t{i}", "toy", "toy", "win the game", payload={"delay": 0.02}) for i in range(4)]
    spec = EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 4})

    def generate(prompts, ids):
        return [f"<think>x</think><action>{'crash' if (e, t) == (1, 1) else 'go'}</action>"
                for e, t in ids]

    generate.takes_ids = True
    with EnvPool(spec, n_workers=2, step_timeout_s=30) as pool:
        trajs = play_episodes(pool, tasks, generate, overlap=2)
        assert pool.restarts == 1 and pool.failed_episodes == 1
    assert [t.failed for t in trajs] == [False, True, False, False]
    assert "worker process died" in trajs[1].fail_reason and trajs[1].n_steps == 2
    # the episode sharing the crashed worker (slot 3) was replayed and played on to the cap
    assert [t.n_steps for t in trajs] == [4, 2, 4, 4]
    assert trajs[3].final_observation == "t3: t=4 trace=go,go,go,go"


def test_overlap_must_be_positive():
    with EnvPool(EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {}), n_workers=0) as pool, \
            pytest.raises(ValueError, match="overlap"):
        play_episodes(pool, _tasks(1), lambda p: [], overlap=0)


@pytest.mark.parametrize("delay,latency,split", [(0.0, 0.05, False), (0.04, 0.0, True)])
def test_auto_overlap_splits_only_when_the_environment_is_slower(delay, latency, split):
    """overlap="auto": with environment steps far cheaper than a generate call it plays in
    lock-step (one call per turn after the first); with steps far dearer it splits."""
    import time

    calls = []

    def generate(prompts, ids):
        time.sleep(latency)
        calls.append(len(ids))
        return ["<think>x</think><action>go</action>"] * len(ids)

    generate.takes_ids = True
    tasks = [Task(f"t{i}", "toy", "toy", "g", payload={"delay": delay}) for i in range(6)]
    with EnvPool(EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 100}), n_workers=2) as pool:
        trajs = play_episodes(pool, tasks, generate, max_steps=4, overlap="auto")
    assert [t.n_steps for t in trajs] == [4] * 6 and sum(calls) == 24
    if split:
        assert len(calls) >= 7, calls
    else:
        # before anything is timed the first turn may split (overlapping the resets); once
        # timed, full calls: at most one call more than lock-step's 4
        assert len(calls) <= 5 and calls.count(6) >= 3, calls


@pytest.mark.parametrize("overlap", [1, 2])
def test_play_after_early_start_batch(overlap):
    """started=True: the caller submitted the resets earlier (they ran meanwhile)."""
    tasks = _tasks(3)
    with EnvPool(EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 3}), n_workers=2) as pool:
        pool.start_batch(tasks)
        trajs = play_episodes(pool, tasks, lambda p: ["<think>x</think><action>go</action>"] * len(p),
                              overlap=overlap, started=True)
    assert [t.n_steps for t in trajs] == [3, 3, 3] and trajs[0].steps[0].observation == "t0: start"


def test_action_only_format_prompt_and_refusal():
    """PlayConfig(think=False): the prompt asks for <action> alone, the default system prompt
    drops the think instruction (a custom one is kept), and require_think must be off."""
    from skillax.agents.agent_loop import ACTION_ONLY_SYSTEM_PROMPT

    cfg = PlayConfig(think=False, require_think=False)
    sys_msg, user = build_play_prompt("g", "o", [], ["look"], cfg=cfg)
    assert sys_msg["content"] == ACTION_ONLY_SYSTEM_PROMPT and "<think>" not in sys_msg["content"]
    assert user["content"].endswith("Answer: <action>...</action>")
    assert build_play_prompt("g", "o", [], ["look"])[1]["content"].endswith(
        "Answer: <think>...</think><action>...</action>")
    assert PlayConfig(think=False, require_think=False, system_prompt="mine").system_prompt == "mine"
    with pytest.raises(ValueError, match="require_think=False"):
        PlayConfig(think=False)
