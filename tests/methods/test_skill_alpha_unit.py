"""A Skill-alpha unit on hand-written candidate edits with a real worker (OpenAI-compatible
client against a loopback HTTP server) and a real verifier (reasoning-gym's scorer).

The server answers a question correctly iff the prompt's skill block contains the rule
"carry the one", so which edits beat the control is known by construction; worker calls are
counted from the server's request counter."""
import json

import pytest

from skillax.methods.skill_alpha.anchors import ReasoningScorer, RubricScorer
from skillax.methods.skill_alpha.objectives import training_rows
from skillax.methods.skill_alpha.unit import UnitConfig, UnitInput, score_candidates
from skillax.skills.rules import make_rule_body, with_rules
from skillax.skills.skill_md import make_skill
from tests.agents.loopback_servers import FakeOpenAIServer

MAGIC = "carry the one"


@pytest.fixture(scope="module")
def tasks():
    from skillax.agents.envs.reasoning import reasoning_gym_tasks

    return reasoning_gym_tasks(["basic_arithmetic"], n_per_dataset=2, split="train")


def responder_for(tasks):
    gold = {t.goal: t.payload["entry"]["answer"] for t in tasks}

    def respond(req):
        user = req["messages"][-1]["content"]
        q = next(g for g in gold if g in user)
        ok = MAGIC in user.split(q)[0]
        return f"\\boxed{{{gold[q] if ok else '-12345'}}}"
    return respond


def worker(srv, **kw):
    from skillax.agents.workers import OpenAICompatWorker

    return OpenAICompatWorker(model="w", base_url=srv.base_url, api_key_env="NO_SUCH_KEY_VAR",
                              max_retries=kw.pop("max_retries", 0), backoff_base_s=0.0, **kw)


def skill0():
    return with_rules(make_skill("arith", "Arithmetic tips."), make_rule_body(["Read the question twice."]))


def edit(action, target=None, content=None):
    obj = {"action": action}
    if target is not None:
        obj["target"] = target
    if content is not None:
        obj["content"] = content
    return "<think>\nok</think>\n" + json.dumps(obj)


GROUP = [edit("NOOP"),                              # 0: no worker call
         edit("CREATE", content=f"Always {MAGIC}."),  # 1: beats control -> 1
         "<think>\nhmm</think> {not json",           # 2: failed parse -> 0, no call
         edit("UPDATE", ["R9"], "x"),               # 3: missing target -> invalid, no call
         edit("PRUNE", ["R1"]),                      # 4: valid, worse/tie -> 0
         edit("CREATE", content=f"Always {MAGIC}."),  # 5: identical to 1 -> shares its run
         edit("UPDATE", ["R1"], "Read the question twice.")]  # 6: same context as control -> tie, no call


def test_unit_rewards_and_worker_calls(tasks):
    with FakeOpenAIServer(responder_for(tasks)) as srv:
        scorer = ReasoningScorer(worker(srv), max_tokens=32)
        inp = UnitInput(skill0(), ("evidence",), (tasks[0],), kind="reasoning")
        (res,) = score_candidates([inp], [GROUP], scorer, UnitConfig(group_size=len(GROUP)))
        assert srv.request_count == 3          # control, candidate 1 (shared by 5), candidate 4
    assert res.worker_jobs == 3 and res.skipped is None
    assert res.r_ctrl == 0.0
    assert [c.valid for c in res.candidates] == [True, True, False, False, True, True, True]
    assert res.rewards == [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert [c.r_edit for c in res.candidates] == [0.0, 1.0, None, None, 0.0, 1.0, 0.0]
    assert res.carry_index == 1 and "carry the one" in res.carry.body


def test_noop_rewarded_when_nothing_beats_control(tasks):
    good = with_rules(make_skill("arith", "Arithmetic tips."), make_rule_body([f"Always {MAGIC}."]))
    with FakeOpenAIServer(responder_for(tasks)) as srv:
        scorer = ReasoningScorer(worker(srv), max_tokens=32)
        inp = UnitInput(good, ("e",), (tasks[0], tasks[1]), kind="reasoning")   # k = 2 anchors
        group = [edit("NOOP"), edit("PRUNE", ["R1"]), edit("CREATE", content="Be brief.")]
        (res,) = score_candidates([inp], [group], scorer, UnitConfig(group_size=3, anchors_k=2))
        assert srv.request_count == 6          # 3 skills x 2 anchors
    assert res.r_ctrl == 1.0 and res.rewards == [1.0, 0.0, 0.0]
    assert res.carry_index is None and res.carry is good
    with pytest.raises(ValueError, match="generations"):
        training_rows([res])                 # hand-written texts have no sampler record to train on


def test_worker_failure_skips_unit(tasks):
    with FakeOpenAIServer(responder_for(tasks), faults=[("400", "boom")]) as srv:
        scorer = ReasoningScorer(worker(srv), max_tokens=32)
        inp = UnitInput(skill0(), ("e",), (tasks[0],), kind="reasoning")
        (res,) = score_candidates([inp], [GROUP[:2]], scorer, UnitConfig(group_size=2))
    assert res.skipped and "worker error" in res.skipped
    assert res.r_ctrl is None and res.rewards == [0.0, 0.0] and res.carry_index is None
    gens, adv, stats = training_rows([res])
    assert gens == [] and stats["rows"] == 0


def test_judge_failure_skips_unit_not_zero():
    from skillax.agents.envs.base import Task
    from skillax.agents.judges import RubricJudge

    task = Task("doc/q1", "document", "doc", "What command shows the goal?", payload={"rubrics": ["Says 'goal'."]})

    def respond(req):
        if "strict grader" in req["messages"][0]["content"]:
            return "I refuse to grade."      # never parsable
        return "Type goal."

    with FakeOpenAIServer(respond) as srv:
        w = worker(srv)
        scorer = RubricScorer(w, RubricJudge(w, max_retries=1), max_tokens=16)
        inp = UnitInput(skill0(), ("e",), (task,), kind="document")
        (res,) = score_candidates([inp], [[edit("CREATE", content="Use goal.")]], scorer, UnitConfig(group_size=1))
    assert res.skipped and "judge failure" in res.skipped and res.r_ctrl is None


def test_reasoning_and_document_settings_with_loopback_worker(tmp_path, tasks):
    """build_setting for reasoning (worker traces -> stream) and document (TextWorld docs), and
    the held-out evaluation z_T vs no skill, all through the loopback worker / judge."""
    from skillax.methods.skill_alpha.config import skill_alpha
    from skillax.methods.skill_alpha.evaluate import evaluate_skill
    from skillax.methods.skill_alpha.setting import build_setting, initial_skill

    def respond(req):
        first, user = req["messages"][0]["content"], req["messages"][-1]["content"]
        if "strict grader" in user or "strict grader" in first:
            n = user.count("\n", user.index("[Rubrics]"), user.index("[Answer to grade]")) - 2
            ok = "yes" if "inventory" in user.split("[Answer to grade]")[1] else "no"
            return json.dumps({"Grading Rationale": "-", "List of Requirement Satisfaction Status": [ok] * n,
                               "Overall Score": int(ok == "yes")})
        return "Use inventory." if MAGIC in user else "\\boxed{7}"

    c = skill_alpha("reasoning")
    c.reasoning.datasets = ("basic_arithmetic",)
    c.reasoning.n_per_dataset = 6
    c.reasoning.eval_per_dataset = 2
    c.evidence.n_evidence_per_family, c.evidence.n_anchor_per_family = 4, 2
    with FakeOpenAIServer(respond) as srv:
        w = worker(srv)
        st = build_setting(c, w, initial_skill(c), tmp_path)
        assert len(st.stream) == 1 and len(st.stream.items[0].units) == 4 and len(st.eval_tasks) == 2
        assert "reference answer" in st.stream.items[0].units[0] and st.info["evidence_tasks"] == 4
        assert (tmp_path / "evidence_stream.json").exists()
        d = skill_alpha("document")
        st = build_setting(d, w, initial_skill(d), None)
        assert st.info["source"] == "textworld-docs" and len(st.eval_tasks) == 6
        skill = with_rules(initial_skill(d), make_rule_body([f"Always {MAGIC}."]))
        ev = evaluate_skill(st.scorer, st.eval_tasks[:2], skill)
    assert ev["with_skill"] == 1.0 and ev["no_skill"] == 0.0 and ev["delta"] == 1.0 and ev["n"] == 2
