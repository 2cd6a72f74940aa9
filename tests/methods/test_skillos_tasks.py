"""SkillOS task sources: TextWorld family specs, reasoning-gym topic groups, AIME."""
import ml_collections
import pytest

from skillax.methods.skillos.groups import make_groups
from skillax.methods.skillos.tasks import load_tasks, parse_families
from tests.conftest import needs_shared


def test_parse_families():
    assert parse_families("tw-cooking:recipe=1,take=1,open=true;tw-simple") == (
        ("tw-cooking", {"recipe": 1, "take": 1, "open": True}), ("tw-simple", {}))
    assert parse_families("") == ()
    with pytest.raises(ValueError, match="key=value"):
        parse_families("tw-cooking:recipe")


def env(**kw):
    base = dict(name="reasoning", rg_datasets="gcd,lcm,leg_counting", rg_per_dataset=3, aime_dir="")
    return ml_collections.ConfigDict({**base, **kw})


def test_reasoning_tasks_group_by_topic_then_generator():
    tasks = load_tasks(env(), "train")
    assert len(tasks) == 9
    groups = make_groups(tasks, 3, seed=0)
    assert sorted(g.key for g in groups) == ["counting", "number_theory", "number_theory"]
    for g in groups:   # the number-theory topic: gcd and lcm tasks are not mixed (Jaccard on dataset)
        assert len({t.attributes["dataset"] for t in g.tasks}) == 1
    assert load_tasks(env(), "train", limit=4) == load_tasks(env(), "train", limit=4)


@needs_shared
def test_aime_split(shared_dir):
    tasks = load_tasks(env(aime_dir=str(shared_dir / "data" / "aime")), "aime")
    assert len(tasks) == 60 and all(t.family == "aime" for t in tasks)
    assert len(make_groups(tasks, 4, seed=0)) == 15


@pytest.mark.parametrize("loader", ["common", "skillos"])
def test_webshop_is_refused_with_the_reason(loader):
    """issue 19: no WebShop data under ../shared/data, so both method loaders (Skill1 reads the
    common one) refuse env.name='webshop' and say why, instead of loading made-up goals."""
    from skillax.methods.common import tasks as common_tasks

    load = common_tasks.load_tasks if loader == "common" else load_tasks
    env = ml_collections.ConfigDict(dict(name="webshop", data_dir=""))
    with pytest.raises(ValueError, match=r"blocked on data.*\.\./shared/data"):
        load(env, "valid_train")
