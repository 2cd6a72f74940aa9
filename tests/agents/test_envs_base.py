"""Environment protocol helpers: action checks, task grouping, EnvSpec."""
import pytest

from skillax.agents.envs import ENV_REGISTRY, EnvSpec, Task, check_action, env_spec, normalize_action

ADM = ["go to desk 1", "take cd 1 from desk 1", "look"]


def test_normalize_action():
    assert normalize_action("  Go   to Desk 1. ") == "go to desk 1"
    assert normalize_action("look") == "look"
    assert normalize_action("\n\t") == ""


@pytest.mark.parametrize("action,expected", [
    ("go to desk 1", ("go to desk 1", None)),
    ("Go to desk 1.", ("go to desk 1", None)),
    ("", ("", "empty")),
    ("   ", ("", "empty")),
    ("x" * 257, ("", "too_long")),
    ("dance", ("dance", "not_admissible")),
    (None, ("", "not_a_string")),
    (42, ("", "not_a_string")),
])
def test_check_action(action, expected):
    assert check_action(action, ADM) == expected


def test_check_action_without_admissible_list():
    assert check_action("anything at all", None) == ("anything at all", None)
    assert check_action("", None) == ("", "empty")
    assert check_action("abcd", ADM, max_chars=3) == ("", "too_long")


def test_task_group_key():
    t = Task("a", "alfworld", "pick_clean_then_place_in_recep", "put a clean mug in sinkbasin",
             attributes={"objects": ["mug"], "receptacles": ["sinkbasin"]})
    assert t.group_key() == "pick_clean_then_place_in_recep"
    assert t.group_key(("objects",)) == "pick_clean_then_place_in_recep|objects=mug"
    with pytest.raises(KeyError):
        t.group_key(("nope",))


def test_env_spec_errors():
    with pytest.raises(ValueError, match="module:attr"):
        EnvSpec("no_colon").build()
    with pytest.raises(KeyError, match="known"):
        env_spec("not-an-env")
    assert env_spec("textworld", max_steps=7) == EnvSpec(ENV_REGISTRY["textworld"], {"max_steps": 7})
