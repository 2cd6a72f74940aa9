"""The methods' fast play path (issue 17). Skill1: the rollout submits the games' resets
before the query stage and plays through ``TurnSampler`` keys, so overlapped play
(``rollout.overlap = 2``, the workers stepping some episodes while the policy samples for
others) gives the same episodes as lock-step play (``overlap = 1``) for the same seed: a tiny
random policy at temperature 1 on one real TextWorld game x a group of 2 in 2 worker
processes, the library seeded with the hand-written skills (w/o Selection, so the task text
retrieves one into every play prompt). SkillOS's executor and Skill-alpha's anchored play: the
same claim on the toy game."""

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


def test_skillos_executor_and_skill_alpha_scorer_overlap_equals_lock_step(tiny_model, tmp_path):  # noqa: F811
    """The same claim for the other two methods' play (issue 17): SkillOS's frozen executor
    (``Executor`` over ``PolicyChat``, keys reserved per play call) and Skill-alpha's anchored
    games (``EnvScorer`` over ``setting.build_worker``'s ``LocalWorker``), tiny policy at
    temperature 1, the toy game in 2 worker processes with uneven step times so overlapped
    calls really are partial."""
    from skillax.agents.agent_loop import PlayConfig
    from skillax.agents.envs.base import EnvSpec, Task
    from skillax.methods.skill_alpha.anchors import EnvScorer
    from skillax.methods.skill_alpha.config import skill_alpha
    from skillax.methods.skill_alpha.setting import build_worker
    from skillax.methods.skillos.executor import Executor, PolicyChat
    from tests.agents._toy_env import ToyEnv

    cfg = skill1_tiny_config(tiny_model)
    engine = PolicyEngine.create(cfg, tmp_path / "w")
    acfg = skill_alpha("experience")
    acfg.model.max_len = cfg.model.max_len
    acfg.worker.temperature, acfg.worker.action_tokens = 1.0, 8
    tasks = [Task(f"t{i}", "toy", "toy", "win the game", payload={"delay": [0.0, 0.05 * (i % 2)]})
             for i in range(3)]
    pcfg = PlayConfig(max_admissible=8, max_obs_chars=200, max_skill_chars=200)
    pool = EnvPool(EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 3}), n_workers=2, max_steps=3)
    ex = Executor(PolicyChat(engine.policy_sampler(1.0), max_len=int(cfg.model.max_len)), pcfg,
                  action_tokens=8, max_steps=3, self_judge="env")
    worker = build_worker(acfg, engine)
    scorer = EnvScorer(worker, "toy", play_cfg=pcfg, max_steps=3, temperature=1.0, max_tokens=8)
    scorer._pool = pool                        # the toy game is not a registered environment
    skills = [["go-first: Go where the task says first."], [], []]
    runs = {}
    try:
        for overlap in (1, 2):
            ex.overlap = scorer.overlap = overlap
            ex.backend.policy.calls = worker.reserve_calls.__self__.calls = 0     # same keys
            calls0 = (ex.stats["calls"], worker.usage.requests)
            sig = []
            for trajs in (ex.play(pool, tasks, skills), scorer.play([(s[0] if s else "", t) for s, t in zip(skills, tasks)])):
                sig.append([[(s.observation, s.response, s.action, s.reward, s.done) for s in tr.steps]
                            + [tr.won, tr.failed] for tr in trajs])
            runs[overlap] = (sig, (ex.stats["calls"] - calls0[0], worker.usage.requests - calls0[1]))
    finally:
        pool.close()
        engine.close()
    (lock, lock_calls), (over, over_calls) = runs[1], runs[2]
    assert over == lock
    assert all(len(tr) == 3 + 2 for sig in lock for tr in sig)        # 3 turns each (no win)
    assert len({tr[0][1] for tr in lock[0]}) > 1                      # temperature 1 really samples
    assert over_calls[0] > lock_calls[0] == 3 and over_calls[1] > lock_calls[1] == 3   # calls were split


def test_task_stream_peek_take_and_checkpoint_state():
    """TaskStream.peek shows the next tasks without consuming them; take returns them next; a
    state saved while tasks are peeked resumes at the first unconsumed one (a Skill1 checkpoint
    is written after the next step's tasks were peeked for their resets)."""
    from skillax.agents.envs.base import Task

    ts = [Task(f"t{i}", "x", "f", "g") for i in range(7)]
    ref = [t.id for t in task_lib.TaskStream(ts, seed=3).take(12)]
    s = task_lib.TaskStream(ts, seed=3)
    assert [t.id for t in s.take(2)] == ref[:2]
    before = s.get_state()
    assert [t.id for t in s.peek(3)] == ref[2:5] == [t.id for t in s.peek(3)]
    assert s.get_state() == before                    # peeking moves no checkpointed position
    assert [t.id for t in s.take(2)] == ref[2:4]
    mid = s.get_state()                               # one peeked task left unconsumed
    assert [t.id for t in s.take(3)] == ref[4:7]
    r = task_lib.TaskStream(ts, seed=3)
    r.set_state(mid)
    assert [t.id for t in r.take(8)] == ref[4:12]
    r.peek(2)
    r.set_state(before)                               # a restore drops what was peeked
    assert [t.id for t in r.take(3)] == ref[2:5]


def test_prefetched_resets_give_the_same_episodes(tiny_model, tmp_path):  # noqa: F811
    """rollout(started=True) after pool.start_batch(episode_tasks(...)) -- the Skill1 loop's
    rollout.prefetch_resets, the resets submitted behind the previous update -- plays the same
    episodes as a rollout that submits them itself; a batch for other tasks is refused."""
    from skillax.methods.skill1.rollout import episode_tasks

    cfg = skill1_tiny_config(tiny_model)
    cfg.env.max_steps = 3
    cfg.ablation = "no_library"
    engine = PolicyEngine.create(cfg, tmp_path / "w")
    lib = SkillLibrary(":memory:", embed_fn=lambda xs: [[1.0] for _ in xs])
    index = DenseIndex(lambda xs: [[1.0] for _ in xs], threshold=0.4, top_k=3)
    tasks = task_lib.load_tasks(cfg.env, "valid_train", 2)
    pool = EnvPool(env_spec("textworld", max_steps=3), n_workers=2, max_steps=3)
    policy = engine.policy_sampler(1.0)
    rcfg = rollout_config(cfg, distil="off")
    runs = []
    try:
        for prefetch in (False, True):
            policy.calls = 0
            if prefetch:
                pool.start_batch(episode_tasks(tasks, 2))
                assert pool.started_for(episode_tasks(tasks, 2)) and not pool.started_for(episode_tasks(tasks[:1], 4))
            runs.append(_episodes(rollout(tasks, 2, policy, lib, index, pool, play_config(cfg), rcfg, started=prefetch)))
            assert not pool.started_for(episode_tasks(tasks, 2))      # played: nothing left to consume
        pool.start_batch(episode_tasks(tasks[::-1], 2))
        with pytest.raises(RuntimeError, match="not for this step's episodes"):
            rollout(tasks, 2, policy, lib, index, pool, play_config(cfg), rcfg, started=True)
    finally:
        pool.close()
        engine.close()
    assert len(runs[0]) == 4 and all(len(e[6]) >= 1 for e in runs[0])
    assert runs[0] == runs[1]
