"""Skill1's fast play path (issue 17): the rollout submits the games' resets before the query
stage and plays through ``TurnSampler`` keys, so overlapped play (``rollout.overlap = 2``, the
workers stepping some episodes while the policy samples for others) gives the same episodes as
lock-step play (``overlap = 1``) for the same seed: a tiny random policy at temperature 1 on
one real TextWorld game x a group of 2 in 2 worker processes, the library seeded with the hand-written skills
(w/o Selection, so the task text retrieves one into every play prompt)."""

import pytest

from skillax.agents.envs import env_spec
from skillax.agents.envs.runner import EnvPool
from skillax.methods.common import tasks as task_lib
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.play import play_config, play_overlap
from skillax.methods.skill1.loop import rollout_config, seed_from_config
from skillax.methods.skill1.rollout import rollout
from skillax.skills.library import SkillLibrary
from skillax.skills.retrieval import DenseIndex, load_minilm
from tests.methods.test_skill1_contract import skill1_tiny_config
from tests.methods.test_skills_wiring import HANDWRITTEN
from tests.methods.test_skillos_integration import tiny_model  # noqa: F401 (fixture)


def test_play_overlap_values():
    assert [play_overlap(v) for v in (1, 2, -1, "auto", "3")] == [1, 2, "auto", "auto", 3]
    for bad in (0, -2, True, "fast", 1.5):
        with pytest.raises(ValueError, match="overlap"):
            play_overlap(bad)


def _episodes(eps):
    return [(ep.query, ep.retrieved_ids, ep.chosen_id, ep.trajectory.won, ep.trajectory.failed, ep.r,
             [(s.observation, s.response, s.action, s.reward, s.done, tuple(s.gen["generation"].completion_ids))
              for s in ep.trajectory.steps],
             ep.trajectory.final_observation) for ep in eps]


def test_overlapped_rollout_equals_lock_step(tiny_model, tmp_path):  # noqa: F811
    cfg = skill1_tiny_config(tiny_model)
    cfg.env.max_steps = 3
    cfg.init_skills = str(HANDWRITTEN)
    cfg.ablation = "no_selection"     # the task text queries (a random policy writes no parsable query)
    engine = PolicyEngine.create(cfg, tmp_path / "w")
    enc = load_minilm()
    lib = SkillLibrary(":memory:", embed_fn=enc.encode)
    assert seed_from_config(cfg, lib) == 6
    cfg.rollout.threshold = -1.0      # every task retrieves: a skill in every play prompt
    index = DenseIndex(enc.encode, threshold=-1.0, top_k=3)
    index.sync(lib.retrieval_texts())
    tasks = task_lib.load_tasks(cfg.env, "valid_train", 1)
    pool = EnvPool(env_spec("textworld", max_steps=3), n_workers=2, max_steps=3)
    policy = engine.policy_sampler(1.0)
    runs = {}
    try:
        for overlap in (1, 2):
            cfg.rollout.overlap = overlap
            rcfg = rollout_config(cfg, distil="off")           # play is what overlaps
            assert rcfg.overlap == overlap
            policy.calls = 0                                   # same seed, same keys
            calls0 = policy.n_calls
            eps = rollout(tasks, 2, policy, lib, index, pool, play_config(cfg), rcfg)
            runs[overlap] = (_episodes(eps), policy.n_calls - calls0)
    finally:
        pool.close()
        engine.close()
    lock, over = runs[1][0], runs[2][0]
    assert len(lock) == 2 and all(len(e[6]) >= 1 for e in lock)
    assert all(e[2] is not None for e in lock)                 # a retrieved skill conditioned play
    for a, b in zip(lock, over):
        assert a == b
    # temperature 1 really samples: the 2 episodes' first responses are not all one text
    assert len({e[6][0][1] for e in lock}) > 1
    print("sampler calls: lock-step", runs[1][1], "overlapped", runs[2][1])
