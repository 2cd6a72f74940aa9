"""Positive control for Skill1's RL update chain (issue 18): a two-turn bandit that the real chain
must learn, and unlearn with the reward flipped.

Why: across the learning campaigns' Skill1 runs (SmolLM2-135M and Qwen2.5-Coder-0.5B, 25-30 RL
steps of 32 ALFWorld episodes) training success stayed flat from the first 10 steps to the last
10. This test separates "the chain is wrong" from "the runs are too short or too noisy": the same
code a Skill1 step runs after its rollout -- the engine's sampler (sampled tokens and their
logprobs), ``methods.skill1.objectives.training_rows`` (both objectives), ``methods.common.rows.
build_batch`` and ``PolicyEngine.train`` with ``objective_configs`` (PPO clip, the k3 KL to the
weights before the first update, the entropy bonus) -- on a tiny random transformer (CPU, fp32).

The bandit: turn 1 samples one token after a fixed 6-token prompt; turn 2 samples one token after
(prompt, turn-1 token, SEP), as a multi-turn episode re-encodes its history; the episode is won
when the turn-2 token is one of 16 target ids (of 64). Both turns are the episode's play
generations (every step format-valid), as a Skill1 play episode's are. The reading is exact, not
sampled: the expected reward sum_a p(a | prompt) p(target | prompt, a, SEP), averaged over the 4
prompts, from the model's softmax after every update.

Measured on this machine (lr 1e-3, 8 steps of 4 prompts x G = 8): 0.237 -> 0.573 (released code),
0.237 -> 0.573 (paper, util only: here the released code's advantages are the paper's times
sqrt(15/14), its GRPO std being over a group's 16 step samples instead of its 8 episodes, a
scale Adam nearly cancels), 0.237 -> 0.130 with the reward flipped.
"""
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.agents.agent_loop import Step, Trajectory
from skillax.agents.envs.base import Task
from skillax.engine.sampling import SamplingParams
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.rows import Generation, build_batch
from skillax.methods.skill1 import objectives as s1obj
from skillax.methods.skill1.rollout import Episode
from skillax.models import transformer
from tests.methods.test_engine_updates import CFG, _config, _params

TARGET = np.arange(1, 17)          # 16 of 64 ids
SEP = 63                           # the turn separator (never a prompt token)
G, STEPS, LR = 8, 8, 1e-3


def _bandit_config(objective: str):
    c = _config(lr=LR)                                     # test_engine_updates' tiny fp32 engine, one padded update
    c.objective = objective
    c.rl.kl_coef, c.rl.kl_estimator = 0.01, "k3"          # the released code's KL (and the rc arms')
    return c


@jax.jit
def _last_logprobs(params, tokens):
    """(B, T) int32 -> (B, V) fp32 next-token log-probabilities after the last position."""
    B, T = tokens.shape
    h, _ = transformer.forward(params, CFG, tokens, jnp.broadcast_to(jnp.arange(T), (B, T)), jnp.ones((B, T), bool))
    return jax.nn.log_softmax(transformer.logits(params, CFG, h)[:, -1].astype(jnp.float32))


def expected_reward(params, prompts) -> float:
    """Exact P(won) under the current weights, averaged over ``prompts`` (module docstring)."""
    p1 = np.exp(np.asarray(_last_logprobs(params, jnp.asarray(prompts, jnp.int32))))          # (P, V)
    V = CFG.vocab_size
    second = [p + [a, SEP] for p in prompts for a in range(V)]
    p2 = np.exp(np.asarray(_last_logprobs(params, jnp.asarray(second, jnp.int32))))[:, TARGET].sum(-1)
    return float((p1 * p2.reshape(len(prompts), V)).sum(-1).mean())


def _gen(out, i: int, prompt) -> Generation:
    n = int(out.lengths[i])
    return Generation(list(prompt), out.tokens[i, :n].tolist(), out.logprobs[i, :n].tolist(), "util", i)


def train_bandit(tmp_path: pathlib.Path, objective: str, flip: bool = False) -> list[float]:
    """STEPS Skill1-style RL steps on the bandit; returns the expected reward before each step
    and after the last (STEPS + 1 values)."""
    rng = np.random.default_rng(0)
    prompts = [[int(x) for x in rng.integers(17, SEP, 6)] for _ in range(4)]
    cfg = _bandit_config(objective)
    eng = PolicyEngine(_params(), CFG, None, cfg, tmp_path / f"{objective}_{flip}")
    objs = {"util": s1obj.objective_configs(cfg)["util"]}   # the play objective (no rerank / distil rows here)
    one = SamplingParams(n=1, temperature=1.0, max_new_tokens=1)
    curve = [expected_reward(eng.state["params"], prompts)]
    for t in range(STEPS):
        o1 = eng.sampler.generate(eng.sampler_params, prompts, SamplingParams(n=G, temperature=1.0, max_new_tokens=1),
                                  seed=0, step=2 * t)
        p2 = [prompts[o1.group[i]] + [int(o1.tokens[i, 0]), SEP] for i in range(len(o1.group))]
        o2 = eng.sampler.generate(eng.sampler_params, p2, one, seed=0, step=2 * t + 1)
        eps = []
        for i, grp in enumerate(o1.group):
            won = bool(np.isin(o2.tokens[i, 0], TARGET)) != flip
            steps = [Step("", [], "", "a", True), Step("", [], "", "a", True)]
            eps.append(Episode(index=i, group=int(grp), task=Task(f"t{grp}", "bandit", "bandit", "g"),
                               trajectory=Trajectory(f"t{grp}", "g", steps=steps, won=won),
                               play_gens=[_gen(o1, i, prompts[grp]), _gen(o2, i, p2[i])],
                               retrieval_on=False, r=float(won)))
        gens, advs = s1obj.training_rows(eps, objective, ("util",))
        assert len(gens) == 2 * len(eps)                      # both turns of every episode are trained
        m = eng.train(build_batch(gens, advs, ["util"], length_buckets=(16,), rows_multiple=8), objs)
        assert m.get("updates", 1.0) == 1.0
        curve.append(expected_reward(eng.state["params"], prompts))
    eng.close()
    return curve


@pytest.mark.parametrize("objective", ["released_code", "paper"])
def test_skill1_update_chain_learns_a_two_turn_bandit(tmp_path, objective):
    curve = train_bandit(tmp_path, objective)
    assert curve[0] == pytest.approx(0.237, abs=0.005)       # the fixture's random init (exact, as read above)
    assert curve[-1] > curve[0] + 0.25, curve                  # measured +0.336
    assert sum(b > a for a, b in zip(curve, curve[1:])) >= STEPS - 1, curve   # it climbs step after step


def test_flipped_reward_unlearns(tmp_path):
    """The sign check: the same run rewarded for a non-target turn-2 token lowers P(target)."""
    curve = train_bandit(tmp_path, "released_code", flip=True)
    assert curve[-1] < curve[0] - 0.07, curve                  # measured -0.107
