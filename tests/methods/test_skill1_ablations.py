"""Skill1 ablations on CPU (issue 19): a tiny random policy plays real TextWorld games with the
real MiniLM retriever and SQLite library; a recorder on the policy and the index shows which
calls each ablation makes (w/o Library: play only; w/o Selection: no query, no rerank, the
task text retrieves; w/o Distillation: no distil call, the raw actions are kept)."""

import pytest

from skillax.agents.envs import env_spec
from skillax.agents.envs.runner import EnvPool
from skillax.methods.common import tasks as task_lib
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.play import play_config
from skillax.methods.skill1.loop import rollout_config
from skillax.methods.skill1.rollout import rollout, update_library
from skillax.skills.library import SkillLibrary
from skillax.skills.retrieval import DenseIndex, load_minilm
from tests.methods.test_skill1_contract import skill1_tiny_config
from tests.methods.test_skillos_integration import tiny_model  # noqa: F401 (fixture)


class RecordingIndex(DenseIndex):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.queries = []

    def search_batch(self, queries, k=None, threshold=None):
        self.queries.append(list(queries))
        return super().search_batch(queries, k, threshold)


@pytest.fixture(scope="module")
def setup(tiny_model, tmp_path_factory):  # noqa: F811
    cfg = skill1_tiny_config(tiny_model)
    engine = PolicyEngine.create(cfg, tmp_path_factory.mktemp("abl"))
    policy = engine.policy_sampler(1.0)
    calls = []
    orig = policy.sample

    def recorded(prompts, **kw):
        calls.append((kw["objective"], kw.get("prefix", ""), len(prompts)))
        return orig(prompts, **kw)

    policy.sample = recorded
    tasks = task_lib.load_tasks(cfg.env, "valid_train", 2)
    pool = EnvPool(env_spec("textworld", max_steps=2), n_workers=0, max_steps=2)
    yield cfg, policy, calls, tasks, pool
    pool.close()
    engine.close()


def _run(setup, ablation):
    cfg, policy, calls, tasks, pool = setup
    cfg = cfg.copy_and_resolve_references()
    cfg.ablation = ablation
    enc = load_minilm()
    lib = SkillLibrary(":memory:", embed_fn=enc.encode)
    for strategy in ("Action lesson: open the chest first", "Action lesson: take the key first"):
        lib.add(tasks[0].goal, tasks[0].goal, strategy, step=0)        # heads = task 0's text
    index = RecordingIndex(enc.encode, threshold=0.4, top_k=5)
    index.sync(lib.retrieval_texts())
    calls.clear()
    eps = rollout(tasks, 2, policy, lib, index, pool, play_config(cfg), rollout_config(cfg))
    return eps, lib, index, list(calls)


def test_without_library_plays_only(setup):
    eps, lib, index, calls = _run(setup, "no_library")
    assert {(o, p) for o, p, _ in calls} == {("util", "")}             # play turns only
    assert index.queries == []
    assert all(not ep.retrieval_on and ep.query_gen is None and ep.distil_gen is None and not ep.retrieved_ids
               for ep in eps)
    assert all(ep.trajectory.skills == [] for ep in eps)
    before = [(r.id, r.utility, r.count) for r in lib.records()]
    assert update_library(eps, lib, step=0) == {"admitted": 0, "merged": 0, "rejected": 0, "evicted": 0,
                                                   "budget_evicted": 0, "budget_rejected": 0}
    assert [(r.id, r.utility, r.count) for r in lib.records()] == before


def test_without_selection_retrieves_by_task_text_and_uses_the_top1(setup):
    eps, lib, index, calls = _run(setup, "no_selection")
    kinds = {(o, p) for o, p, _ in calls}
    assert ("util", "<query>") not in kinds and not any(o == "rerank" for o, _, _ in calls)
    assert ("distil", "```json\n") in kinds
    assert index.queries == [[ep.task.goal for ep in eps]]
    for ep in eps[:2]:                                                 # task 0: both skills match (cos 1)
        assert len(ep.retrieved_ids) == 2 and ep.rank is None and ep.chosen_id == ep.retrieved_ids[0]
        assert ep.trajectory.skills and ep.trajectory.skills[0].startswith(ep.task.goal[:40])


def test_without_distillation_keeps_raw_actions_and_full_calls_query(setup):
    eps, _, _, calls = _run(setup, "no_distillation")
    assert not any(o == "distil" for o, _, _ in calls)
    assert ("util", "<query>", 4) in calls                             # the policy still writes queries
    for ep in eps:                                                     # a random policy rarely tags an action
        acts = [s.action for s in ep.trajectory.steps if s.action]
        assert ep.distil is None and ep.raw_skill == ("Actions: " + "; ".join(acts) if acts else "")
    eps, _, _, calls = _run(setup, "none")
    assert [c for c in calls if c[0] != "util" or c[1]] [:1] == [("util", "<query>", 4)]
    assert ("distil", "```json\n", 4) in calls
