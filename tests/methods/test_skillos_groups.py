"""SkillOS task groups: attribute clustering, determinism by seed, the random-groups ablation."""
import random

import pytest

from skillax.agents.envs.alfworld import record_to_task
from skillax.agents.envs.base import Task
from skillax.methods.skillos.groups import (
    GroupStream, attribute_groups, attribute_set, jaccard, make_groups, random_groups,
)
from tests.conftest import needs_shared


def alf(split, folder, goal):
    """A Task built by the real ALFWorld record parser (goal -> objects / receptacles)."""
    tt = folder.split("-")[0]
    return record_to_task({"split": split, "game_id": f"{folder}/trial_1", "task_type": tt,
                           "goal": goal, "pddl_problem": "(define)"})


TASKS = [
    alf("t", "pick_heat_then_place_in_recep-Egg-None-Fridge-1", "heat some egg and put it in fridge"),
    alf("t", "pick_heat_then_place_in_recep-Egg-None-CounterTop-2", "put a hot egg in countertop"),
    alf("t", "pick_heat_then_place_in_recep-Mug-None-CoffeeMachine-3", "heat some mug and put it in coffeemachine"),
    alf("t", "pick_heat_then_place_in_recep-Egg-None-Fridge-4", "put a hot egg in fridge"),
    alf("t", "pick_heat_then_place_in_recep-Mug-None-Cabinet-5", "put a hot mug in cabinet"),
    alf("t", "pick_cool_then_place_in_recep-Apple-None-Fridge-6", "cool some apple and put it in fridge"),
    alf("t", "pick_cool_then_place_in_recep-Apple-None-Microwave-7", "put a cool apple in microwave"),
    alf("t", "pick_cool_then_place_in_recep-Pan-None-Cabinet-8", "cool some pan and put it in cabinet"),
]


def test_attribute_set_and_jaccard():
    a = attribute_set(TASKS[0])
    assert a == {"task_type=pick_heat_then_place_in_recep", "objects=egg", "receptacles=fridge"}
    assert jaccard(a, attribute_set(TASKS[3])) == 1.0
    assert jaccard(a, attribute_set(TASKS[1])) == pytest.approx(2 / 4)   # same type + object
    assert jaccard(a, attribute_set(TASKS[2])) == pytest.approx(1 / 5)   # same type only
    assert jaccard(frozenset(), frozenset()) == 1.0


def test_attribute_groups_cluster_by_type_and_objects():
    groups = attribute_groups(TASKS, 3, seed=0, min_size=1)
    for g in groups:
        assert len({t.family for t in g.tasks}) == 1                  # never mixes task types
    assert sorted(len(g) for g in groups) == [2, 3, 3]                # cool: 3; heat: 5 -> 3 + 2
    # every task appears exactly once
    assert sorted(t.id for g in groups for t in g.tasks) == sorted(t.id for t in TASKS)
    # the anchor's most similar tasks join it: with an egg/fridge anchor the other egg-fridge
    # game comes next (Jaccard 1), then the other egg game (0.5) before any mug game (0.2)
    for g in groups:
        a = attribute_set(g.tasks[0])
        sims = [jaccard(a, attribute_set(t)) for t in g.tasks[1:]]
        assert sims == sorted(sims, reverse=True)
        if g.tasks[0].id == TASKS[0].id:
            assert [t.id for t in g.tasks] == [TASKS[0].id, TASKS[3].id, TASKS[1].id]


def test_groups_are_deterministic_by_seed_and_input_order():
    shuffled = list(TASKS)
    random.Random(1).shuffle(shuffled)
    a = [g.task_ids for g in attribute_groups(TASKS, 3, seed=7)]
    b = [g.task_ids for g in attribute_groups(shuffled, 3, seed=7)]
    assert a == b
    seeds = {tuple(map(tuple, (g.task_ids for g in attribute_groups(TASKS, 2, seed=s)))) for s in range(6)}
    assert len(seeds) > 1                                              # the seed matters
    with pytest.raises(ValueError, match="duplicate"):
        attribute_groups(TASKS + TASKS[:1], 3)


def test_min_size_drops_small_leftovers():
    assert sorted(len(g) for g in attribute_groups(TASKS, 4, seed=0, min_size=1)) == [1, 3, 4]
    assert sorted(len(g) for g in attribute_groups(TASKS, 4, seed=0, min_size=2)) == [3, 4]  # singleton dropped


def test_random_groups_ablation():
    a = random_groups(TASKS, 4, seed=3)
    assert [g.task_ids for g in a] == [g.task_ids for g in random_groups(list(reversed(TASKS)), 4, seed=3)]
    assert [len(g) for g in a] == [4, 4] and all(g.key == "random" for g in a)
    assert any(len({t.family for t in g.tasks}) > 1 for g in a)        # families mixed
    assert sorted(t.id for g in a for t in g.tasks) == sorted(t.id for t in TASKS)


def test_make_groups_errors():
    with pytest.raises(ValueError, match="grouping"):
        make_groups(TASKS, 3, grouping="kmeans")
    with pytest.raises(ValueError, match="no task group"):
        make_groups(TASKS[:1], 3, min_size=2)
    with pytest.raises(ValueError, match="min_size"):
        make_groups(TASKS, 3, min_size=4)


def test_reasoning_and_textworld_keys():
    r = Task("rg/gcd/1/0", "reasoning", "number_theory", "q", attributes={"topic": "number_theory", "dataset": "gcd"})
    assert attribute_set(r) == {"topic=number_theory", "dataset=gcd"}
    tw = Task("tw#1", "textworld", "tw-cooking/go=6", "g", attributes={"challenge": "tw-cooking", "go": "6"})
    assert attribute_set(tw) == {"challenge=tw-cooking"}


def test_group_stream_state_resumes_exactly():
    groups = attribute_groups(TASKS, 2, seed=0, min_size=1)
    s = GroupStream(groups, seed=5)
    s.take(3)
    state = s.get_state()
    nxt = [g.index for g in s.take(5)]
    s2 = GroupStream(groups, seed=5)
    s2.set_state(state)
    assert [g.index for g in s2.take(5)] == nxt


@needs_shared
def test_real_alfworld_groups():
    from skillax.agents.envs.alfworld import load_alfworld_tasks

    tasks = load_alfworld_tasks(splits=["valid_train"])
    g1 = make_groups(tasks, 8, seed=0)
    g2 = make_groups(list(reversed(tasks)), 8, seed=0)
    assert [g.task_ids for g in g1] == [g.task_ids for g in g2]
    assert all(len({t.family for t in g.tasks}) == 1 for g in g1)
    # clustering beats chance: mean within-group attribute similarity to the anchor
    def sim(groups):
        v = [jaccard(attribute_set(g.tasks[0]), attribute_set(t)) for g in groups for t in g.tasks[1:]]
        return sum(v) / len(v)
    assert sim(g1) > sim(make_groups(tasks, 8, grouping="random", seed=0)) + 0.2
