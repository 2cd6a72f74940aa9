"""Reasoning env: reasoning-gym generators and AIME 2024/2025 (real data from ../shared)."""
import json

import pytest

from skillax.agents.envs.base import INFO_KEYS, Task
from skillax.agents.envs.reasoning import (RG_TOPICS, ReasoningEnv, load_aime,
                                           reasoning_gym_tasks, split_seed)
from tests.conftest import needs_shared


@needs_shared
def test_aime_answers_verify_against_themselves_and_equivalent_forms(shared_dir):
    tasks = load_aime(shared_dir / "data" / "aime")
    assert len(tasks) == 60
    assert tasks[0].id == "aime/2024-I-1" and tasks[-1].id == "aime/2025-II-15"
    assert {t.family for t in tasks} == {"aime"} and tasks[0].env == "reasoning"
    env = ReasoningEnv()
    for t in tasks:
        a = t.payload["answer"]
        for good in (a, f"\\boxed{{{a}}}", f"The answer is $\\boxed{{{int(a):03d}}}$."):
            obs, info = env.reset(t)
            assert obs.startswith(t.goal) and obs.endswith("\\boxed{}.")
            assert set(INFO_KEYS) <= set(info) and info["step"] == 0
            _, r, done, info = env.step(good)
            assert (r, done, info["won"]) == (1.0, True, True), (t.id, good)
        env.reset(t)
        _, r, _, info = env.step(f"\\boxed{{{int(a) + 1}}}")
        assert (r, info["won"]) == (0.0, False)


@needs_shared
def test_aime_2024_i_2_known_answer(shared_dir):
    t = {x.id: x for x in load_aime(shared_dir / "data" / "aime", years=[2024])}["aime/2024-I-2"]
    assert t.payload["answer"] == "25" and t.attributes["exam"] == "I"
    env = ReasoningEnv()
    env.reset(t)
    assert env.step(r"so $xy=\boxed{025}$")[1] == 1.0


def test_aime_malformed_file_names_file_and_line(tmp_path):
    good = {"id": "2024-I-1", "year": 2024, "exam": "I", "number": 1, "problem": "p", "answer": "5"}
    p = tmp_path / "aime_2024.jsonl"
    p.write_text(json.dumps(good) + "\n" + '{"id": "2024-I-2", "problem": \n')
    with pytest.raises(ValueError, match=r"aime_2024\.jsonl:2: invalid JSON"):
        load_aime(tmp_path, years=[2024])
    bad = dict(good)
    del bad["answer"]
    p.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"aime_2024\.jsonl:3: missing field\(s\) \['answer'\]"):
        load_aime(tmp_path, years=[2024])
    p.write_text(json.dumps(dict(good, answer="x1")) + "\n")
    with pytest.raises(ValueError, match=r":1: answer must be"):
        load_aime(tmp_path, years=[2024])
    p.write_text("[1, 2]\n")
    with pytest.raises(ValueError, match=r":1: expected a JSON object"):
        load_aime(tmp_path, years=[2024])


def test_aime_absent_is_skipped_or_raises(tmp_path):
    assert load_aime(tmp_path / "nope") == []
    with pytest.raises(FileNotFoundError, match="aime_2025.jsonl"):
        load_aime(tmp_path, years=[2025], missing_ok=False)


def test_reasoning_gym_items_score_own_answer_one_and_wrong_zero():
    tasks = reasoning_gym_tasks(n_per_dataset=3, split="test")
    names = [d for ds in RG_TOPICS.values() for d in ds]
    assert len(tasks) == 3 * len(names)
    env = ReasoningEnv(binary_reward=False)
    for t in tasks:
        gold = t.payload["entry"]["answer"]
        obs, _ = env.reset(t)
        assert t.goal in obs
        _, r, done, info = env.step(f"Reasoning...\n<answer>{gold}</answer>")
        assert (r, done, info["won"], info["extracted"]) == (1.0, True, True, gold), t.id
        env.reset(t)
        _, r, _, info = env.step("<answer>wrong</answer>")
        assert (r, info["won"]) == (0.0, False), t.id


def test_reasoning_gym_answer_extraction_and_binary_reward():
    t, = reasoning_gym_tasks(["basic_arithmetic"], n_per_dataset=1, seed=5)
    gold = t.payload["entry"]["answer"]
    env = ReasoningEnv()
    for text in (gold, f"\\boxed{{{gold}}}", f"so the result is \\boxed{{{gold}}}"):
        env.reset(t)
        assert env.step(text)[1] == 1.0, text
    # fraction_simplification gives partial credit (0.05) to a wrong fraction; binary_reward turns it into 0.
    t, = reasoning_gym_tasks(["fraction_simplification"], n_per_dataset=1, seed=5)
    near = "\\frac{1}{7}"
    raw = ReasoningEnv(binary_reward=False)
    raw.reset(t)
    _, r_raw, _, info = raw.step(near)
    env.reset(t)
    _, r_bin, _, _ = env.step(near)
    assert 0.0 < r_raw < 1.0 and info["score"] == r_raw and r_bin == 0.0
    env.reset(t)
    _, r, _, info = env.step("   ")
    assert (r, info["invalid"]) == (0.0, True)


def test_reasoning_gym_tasks_are_seeded_and_grouped():
    a = reasoning_gym_tasks(["leg_counting", "gcd"], n_per_dataset=2, split="train")
    b = reasoning_gym_tasks(["leg_counting", "gcd"], n_per_dataset=2, split="train")
    c = reasoning_gym_tasks(["leg_counting", "gcd"], n_per_dataset=2, split="test")
    assert [t.goal for t in a] == [t.goal for t in b] and [t.goal for t in a] != [t.goal for t in c]
    assert a[0].id == f"rg/leg_counting/{split_seed('train')}/0"
    assert [t.family for t in a] == ["counting", "counting", "number_theory", "number_theory"]
    d = reasoning_gym_tasks(["gcd"], n_per_dataset=1, family_by="dataset")
    assert d[0].family == "gcd" and d[0].attributes == {"topic": "number_theory", "dataset": "gcd"}
    with pytest.raises(ValueError, match="family_by"):
        reasoning_gym_tasks(["gcd"], family_by="x")


def test_env_protocol_errors():
    env = ReasoningEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step("1")
    with pytest.raises(ValueError, match="payload.source"):
        env.reset(Task(id="x", env="reasoning", family="f", goal="g", payload={}))
    t, = reasoning_gym_tasks(["gcd"], n_per_dataset=1)
    env.reset(t)
    env.step("1")
    with pytest.raises(RuntimeError):
        env.step("1")


def test_registry_builds_env_and_tasks_pickle():
    import pickle

    from skillax.agents.envs import Env, env_spec

    env = env_spec("reasoning", binary_reward=False).build()
    assert isinstance(env, ReasoningEnv) and isinstance(env, Env) and env.binary_reward is False
    tasks = reasoning_gym_tasks(n_per_dataset=1)
    back = pickle.loads(pickle.dumps(tasks))
    env.reset(back[0])
    assert env.step(f"\\boxed{{{back[0].payload['entry']['answer']}}}")[1] == 1.0
