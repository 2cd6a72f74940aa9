"""Overlapped play with a real sampler: per-(episode, turn) keys make the episodes of
overlapped play (timing-dependent batches) equal to lock-step play's, sampled at T = 1."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from skillax.agents.agent_loop import PlayConfig, play_episodes
from skillax.agents.envs import EnvSpec, Task
from skillax.agents.envs.runner import EnvPool
from skillax.engine import Buckets, Sampler
from skillax.methods.common.policy import PolicySampler, TurnSampler

from tests.agents._toy_env import ToyEnv


@pytest.fixture(scope="module")
def policy(qwen3, tokenizer):
    _, params, cfg = qwen3
    # one shape for every call of the test: batch 4, chunk 384, 8 new tokens, 512 slots
    sampler = Sampler(cfg, tokenizer, max_len=512, dtype=jnp.float32,
                      buckets=Buckets(batch=(4,), prompt=(384,), new_tokens=(8,), cache=(512,)))
    return PolicySampler(sampler, tokenizer, lambda: params, seed=11, temperature=1.0)


def _play(policy, overlap, workers):
    # placement "group" puts t0, t1 on worker 0 and t2, t3 (slow) on worker 1
    tasks = [Task(f"t{i}", "toy", "toy", "win", payload={"delay": 0.1 * (i >= 2)}) for i in range(4)]
    turns = TurnSampler(policy, max_turns=4, max_new_tokens=8)

    def generate(prompts, ids):  # the action follows the sampled tokens: lengths vary
        out = turns(prompts, ids)
        for r in out:
            g = r["generation"]
            r["text"] = f"<think>x</think><action>{'win' if g.completion_ids[0] % 3 == 0 else 'go'}</action>"
        return out

    generate.takes_ids = True
    cfg = PlayConfig(max_admissible=2, max_obs_chars=40, max_history_obs_chars=20)
    with EnvPool(EnvSpec(f"{ToyEnv.__module__}:ToyEnv", {"max_steps": 4}), n_workers=workers) as pool:
        trajs = play_episodes(pool, tasks, generate, cfg=cfg, max_steps=4, overlap=overlap)
    return trajs, turns


def test_turn_sampler_overlapped_equals_lock_step(policy):
    base = policy.calls
    n0 = policy.n_calls
    lock, t1 = _play(policy, 1, 2)
    n_lock = policy.n_calls - n0
    assert t1.base == base and policy.calls == base + 4   # 4 turns reserved, whatever is played
    policy.calls = base                                   # same reserved key words again
    n0 = policy.n_calls
    over, t2 = _play(policy, 2, 2)
    assert t2.base == base and policy.n_calls - n0 > n_lock   # the overlapped calls were split
    lens = [t.n_steps for t in lock]
    assert len(set(lens)) > 1, lens                       # some episodes won early
    assert [t.n_steps for t in over] == lens and [t.won for t in over] == [t.won for t in lock]
    for a, b in zip(lock, over):
        for sa, sb in zip(a.steps, b.steps):
            ga, gb = sa.gen["generation"], sb.gen["generation"]
            assert (sa.prompt, sa.action, sa.reward) == (sb.prompt, sb.action, sb.reward)
            assert ga.completion_ids == gb.completion_ids and ga.prompt_ids == gb.prompt_ids
            assert ga.episode == gb.episode == int(a.task_id[1:])
            np.testing.assert_allclose(ga.logprobs, gb.logprobs, atol=1e-5, rtol=0)
    assert policy.sampler.programs.counts["run"] == 1   # one shape bucket, one sampling mode


def test_prompt_over_budget_names_row_episode_and_budget(policy):
    before = policy.sampler.compile_count
    with pytest.raises(ValueError, match=r"util row 1 \(episode 7\) has a prompt of 600 tokens but the "
                                         r"cache budget is 504 \(model.max_len 512 - max_new_tokens 8\)"):
        policy.sample([[3] * 10, [3] * 600], objective="util", episodes=[6, 7], max_new_tokens=8)
    assert policy.sampler.compile_count == before


def test_evaluation_stream_gives_every_pass_the_same_keys(policy):
    """Held-out evaluation on common random numbers (PolicySampler.evaluation_stream): two passes
    with the training counter at different values (RL steps in between) sample the same tokens,
    and neither moves the training counter; the training counter's own keys differ."""
    from skillax.methods.common.policy import EVAL_CALL_OFFSET

    ev1 = policy.evaluation_stream()
    assert ev1.calls == EVAL_CALL_OFFSET and (ev1.seed, ev1.temperature) == (policy.seed, policy.temperature)
    before = policy.calls
    a, t_a = _play(ev1, 1, 2)
    assert policy.calls == before and t_a.base == EVAL_CALL_OFFSET
    policy.reserve_calls(37)                              # training moved on (an RL step's words)
    b, t_b = _play(policy.evaluation_stream(), 1, 2)
    assert t_b.base == EVAL_CALL_OFFSET
    c, _ = _play(policy, 1, 2)                            # the training counter: other keys
    ids = lambda trajs: [[s.gen["generation"].completion_ids for s in t.steps] for t in trajs]
    assert ids(a) == ids(b) and [t.won for t in a] == [t.won for t in b]
    assert ids(c) != ids(a)
