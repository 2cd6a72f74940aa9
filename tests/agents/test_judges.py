"""Judges on an OpenAICompatWorker talking to a loopback server with canned judge replies."""
import json

import pytest

from skillax.agents.judges import (CONTENT_CRITERIA, ContentJudge, RubricItem, RubricJudge,
                                   parse_json_object)
from skillax.agents.workers import OpenAICompatWorker
from tests.agents.loopback_servers import FakeOpenAIServer

RUBRICS = ["States the capital is Paris.", "Answers in one sentence.", "Mentions France."]


def rubric_reply(req):
    """Canned judge: the verdict depends on the graded answer's marker word."""
    prompt = req["messages"][0]["content"]
    answer = prompt.split("[Answer to grade]\n", 1)[1].split("\n\nReply with", 1)[0]
    if len(req["messages"]) > 1:  # a re-ask after an unparsable reply
        if "FIXABLE" in answer:
            return json.dumps({"Grading Rationale": "ok", "List of Requirement Satisfaction Status":
                               ["yes", "yes", "yes"], "Overall Score": 1})
    if "GOOD" in answer:
        return ('<think>check each</think>```json\n' + json.dumps(
            {"Grading Rationale": "all met", "List of Requirement Satisfaction Status": ["yes", "yes", "yes"],
             "Overall Score": 1}) + "\n```")
    if "PARTIAL" in answer:
        return "Here is my grading: " + json.dumps(
            {"Grading Rationale": "second unmet", "List of Requirement Satisfaction Status": ["yes", "no", "yes"],
             "Overall Score": 0})
    if "INCONSISTENT" in answer:
        return json.dumps({"List of Requirement Satisfaction Status": ["yes", "yes", "yes"], "Overall Score": 0})
    if "SHORT" in answer:
        return json.dumps({"List of Requirement Satisfaction Status": ["yes", "yes"], "Overall Score": 1})
    return "I think the answer is fine."


def make_worker(srv):
    return OpenAICompatWorker(model="judge", base_url=srv.base_url, api_key_env="NO_SUCH_KEY_VAR",
                              timeout_s=1.0, max_retries=0, max_concurrency=4)


def item(answer):
    return RubricItem("What is the capital of France?", answer, RUBRICS)


def test_rubric_all_met_one_unmet_and_unparsable():
    with FakeOpenAIServer(responder=rubric_reply) as srv:
        judge = RubricJudge(make_worker(srv), max_retries=2)
        v = judge.judge([item("GOOD: Paris is the capital of France."),
                         item("PARTIAL: Paris. It is in France. Yes."),
                         item("GARBAGE answer")])
        assert [x.score for x in v] == [1.0, 0.0, 0.0]
        assert v[0].statuses == (True, True, True) and v[0].rationale == "all met" and v[0].attempts == 1
        assert v[1].statuses == (True, False, True) and v[1].error is None
        assert v[2].statuses == () and v[2].attempts == 3 and "unparsable" in v[2].error
        # 3 first asks + 2 re-asks of the garbage item
        assert srv.request_count == 5
        assert judge.stats.as_dict() == {"items": 3, "requests": 5, "retries": 2, "unparsable": 1,
                                         "worker_errors": 0, "empty": 0}
        # the re-ask carries the bad reply and a correction
        re_ask = json.loads(srv.requests[-1]["body"])["messages"]
        assert [m["role"] for m in re_ask] == ["user", "assistant", "user"]
        assert "no JSON object found" in re_ask[-1]["content"]


def test_rubric_prompt_has_question_answer_and_numbered_rubrics():
    p = RubricJudge.prompt(item("GOOD"))
    assert "What is the capital of France?" in p and "[Answer to grade]\nGOOD" in p
    assert "1. States the capital is Paris.\n2. Answers in one sentence.\n3. Mentions France." in p
    assert "exactly 3 entries" in p


def test_rubric_retry_recovers_and_inconsistent_or_short_is_handled():
    with FakeOpenAIServer(responder=rubric_reply) as srv:
        judge = RubricJudge(make_worker(srv), max_retries=1)
        v = judge.judge([item("FIXABLE"), item("INCONSISTENT"), item("SHORT")])
        assert (v[0].score, v[0].attempts) == (1.0, 2)
        assert v[1].score == 0.0 and v[1].error is None  # all yes but overall 0 -> 0
        assert v[2].score == 0.0 and "2 statuses for 3 rubrics" in v[2].error
        assert judge.stats.unparsable == 1 and judge.stats.retries == 2


def test_empty_answer_scores_zero_without_a_call():
    with FakeOpenAIServer(responder=rubric_reply) as srv:
        judge = RubricJudge(make_worker(srv))
        v = judge.judge([item("   ")])
        assert (v[0].score, v[0].error, v[0].attempts) == (0.0, "empty answer", 0)
        assert srv.request_count == 0 and judge.stats.empty == 1
        with pytest.raises(ValueError, match="rubric"):
            judge.judge([RubricItem("q", "a", [])])


def test_worker_failure_is_retried_then_zero():
    with FakeOpenAIServer(responder=rubric_reply, faults=[("500", "x")] * 2) as srv:
        judge = RubricJudge(make_worker(srv), max_retries=1)
        v = judge.judge([item("GOOD")])
        assert v[0].score == 0.0 and "worker error" in v[0].error
        assert judge.stats.worker_errors == 2 and judge.stats.unparsable == 1
    with FakeOpenAIServer(responder=rubric_reply, faults=[("500", "x")]) as srv:
        judge = RubricJudge(make_worker(srv), max_retries=1)
        assert judge.score("q", "GOOD", RUBRICS) == 1.0


def content_reply(req):
    repo = req["messages"][0]["content"]
    if "### Skill" not in repo:
        return "sorry"
    if "weak" in repo:
        return json.dumps({"specificity": 8, "actionability": {"score": 6, "reason": "ok"},
                           "correctness": 10, "non_redundancy": 4})
    return json.dumps({"specificity": 11, "actionability": 6, "correctness": 10, "non_redundancy": 4})


def test_content_judge_averages_criteria():
    with FakeOpenAIServer(responder=content_reply) as srv:
        judge = ContentJudge(make_worker(srv), max_retries=1)
        v = judge.judge([["---\nname: a\n---\nweak skill", "---\nname: b\n---\nanother"], [],
                         ["out of range skill"], "plain text repo"])
        assert v[0].score == pytest.approx((0.8 + 0.6 + 1.0 + 0.4) / 4) == pytest.approx(0.7)
        assert v[0].criteria == pytest.approx(dict(zip(CONTENT_CRITERIA, [0.8, 0.6, 1.0, 0.4])))
        assert (v[1].score, v[1].error) == (0.0, "empty repository")
        assert v[2].score == 0.0 and "outside 0..10" in v[2].error and v[2].attempts == 2
        assert v[3].score == 0.0 and "no JSON" in v[3].error
        assert srv.request_count == 5  # 3 asks + 2 re-asks
        assert judge.stats.as_dict() == {"items": 4, "requests": 5, "retries": 2, "unparsable": 2,
                                         "worker_errors": 0, "empty": 1}


def test_parse_json_object():
    assert parse_json_object('x {"a": 1} y {"b": {"c": 2}} z') == {"b": {"c": 2}}
    assert parse_json_object("<think>{\"no\": 1}</think> {\"yes\": 2}") == {"yes": 2}
    assert parse_json_object("[1, 2]") is None and parse_json_object("") is None
