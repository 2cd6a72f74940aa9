"""Verifiers: math-verify equivalence, answer extraction, reasoning-gym scorer, env success."""
import threading

import pytest

from skillax.agents.verifiers import (env_success, extract_answer, last_boxed, math_equal,
                                      math_score, reasoning_gym_score)


@pytest.mark.parametrize("gold,pred", [
    ("33", r"\boxed{033}"),
    ("33", "33"),
    ("33", r"Thus the total is $\boxed{33}$."),
    ("33", "<answer>033</answer>"),
    ("\\frac{1}{2}", r"\boxed{0.5}"),
    ("0.5", r"\boxed{\frac{1}{2}}"),
    ("x^2+2x", r"\boxed{2x+x^2}"),
])
def test_equivalent_forms(gold, pred):
    assert math_equal(gold, pred)
    assert math_score(gold, pred) == 1.0


@pytest.mark.parametrize("gold,pred", [
    ("33", r"\boxed{34}"),
    ("33", ""),
    ("33", "I do not know."),
    ("33", r"first \boxed{33} but finally \boxed{34}"),  # the last boxed answer counts
])
def test_not_equivalent(gold, pred):
    assert not math_equal(gold, pred)
    assert math_score(gold, pred) == 0.0


def test_math_equal_works_off_the_main_thread():
    out = []
    t = threading.Thread(target=lambda: out.append(math_equal("25", r"\boxed{025}")))
    t.start()
    t.join()
    assert out == [True]


def test_math_equal_type_error():
    with pytest.raises(TypeError):
        math_equal(33, "33")


def test_extract_answer():
    assert extract_answer(r"a \boxed{\frac{1}{2}} then \boxed{3}") == "3"
    assert last_boxed(r"\boxed{\{1,2\}}") == r"\{1,2\}"
    assert extract_answer("<answer> [1, 2] </answer> and \\boxed{9}") == "[1, 2]"
    assert extract_answer(r"<answer>so \boxed{7}</answer>") == "7"
    assert extract_answer("<answer>  </answer>") is None
    assert extract_answer(r"\boxed{unterminated") is None
    assert extract_answer("plain text") is None


def test_reasoning_gym_score_wrapper():
    import reasoning_gym

    ds = reasoning_gym.create_dataset("basic_arithmetic", size=3, seed=1)
    e = ds[0]
    assert reasoning_gym_score(ds, e, e["answer"]) == 1.0
    assert reasoning_gym_score(ds, e, "wrong") == 0.0
    assert reasoning_gym_score(ds, e, None) == 0.0

    class Broken:
        def score_answer(self, a, e):
            raise RuntimeError("scorer bug")
    assert reasoning_gym_score(Broken(), e, "1") == 0.0


def test_env_success():
    assert env_success({"won": True}) == 1.0 and env_success({"won": False}) == 0.0
    with pytest.raises(KeyError):
        env_success({})
