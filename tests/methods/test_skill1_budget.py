"""Skill1's library budget (``library.token_budget``, issue 22 item 7) through the loop's own
pieces: the play-prompt skill text is what is counted, budget counts reach ``update_library``
and the per-step metrics. No model (the ``skills.budget`` fallback counts)."""
import numpy as np

from skillax.config_defaults import skill1
from skillax.methods.skill1 import prompts
from skillax.methods.skill1.loop import record_token_count, step_metrics
from skillax.methods.skill1.rollout import update_library
from skillax.skills.library import SkillLibrary
from tests.methods.test_skill1_objectives import GOOD, episode


def test_config_default_is_off():
    assert skill1().library.token_budget == 0


def test_record_count_is_the_play_prompt_text():
    lib = SkillLibrary(":memory:", token_count=record_token_count(None))
    a = lib.add("task", "Heat food", "s" * 1000, step=0).id          # play text: head + 400 chars
    assert prompts.skill_text("Heat food", "s" * 1000) == "Heat food\n" + "s" * 400
    assert lib.size_tokens() == lib.record_tokens(lib.get(a)) == 103  # ceil(410 / 4)


def test_update_library_counts_budget_rejections_and_metrics_report_them():
    count = record_token_count(None)
    lib = SkillLibrary(":memory:", token_budget=1, token_count=count)  # any real skill exceeds it
    won = episode(0, 0, True, GOOD)
    won.r = 1.0
    before = lib.state_bytes()
    counts = update_library([won], lib, step=0)
    assert counts == {"admitted": 0, "merged": 0, "rejected": 1, "evicted": 0, "budget_evicted": 0,
                      "budget_rejected": 1}
    assert lib.state_bytes() == before
    times = {"time/step_s": 1.0}
    m = step_metrics([won], counts, lib, [], {"tokens": np.zeros((1, 4), np.int32)}, times)
    assert (m["library_tokens"], m["budget_evictions"], m["budget_rejections"]) == (0, 0, 1)
    # budget off: admitted; the metric is the record's play-text count
    lib2 = SkillLibrary(":memory:", token_count=count)
    counts = update_library([won], lib2, step=0)
    (rec,) = lib2.records()
    want = -(-len(prompts.skill_text(rec.description_head, rec.strategy)) // 4)
    m = step_metrics([won], counts, lib2, [], {"tokens": np.zeros((1, 4), np.int32)}, times)
    assert counts["admitted"] == 1 and m["library_tokens"] == want and m["budget_rejections"] == 0
