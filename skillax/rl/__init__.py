"""skillax.rl: the RL and SFT math core, train steps, checkpoints, metrics and input pipelines.

Modules (one idea each; import from them directly -- this package namespace is lazy, so
``from skillax.rl.ndcg import ndcg`` pulls in numpy only, never jax/orbax/grain):

===================  ======================================================================
``advantages``       GRPO (ddof stated), mean-only (SkillOS), Dr.GRPO, raw; explicit group ids
``ndcg``             Skill1 rerank reward: NDCG with raw utility gains
``logprobs``         chunked fp32 logprobs + entropy from hidden states (never full logits)
``losses``           per-token PPO clip (clip-higher, dual clip), REINFORCE, entropy bonus
``kl``               k1 / k2 / k3 KL estimators to a reference policy
``aggregation``      token_mean / seq_mean_token_mean / seq_mean_token_sum(_norm) as (sum, den)
``objectives``       ObjectiveConfig, the batch format, J = sum_k lambda_k J_k
``masks``            overlong filter, zero-variance drop, policy-token counts, DAPO penalty
``sft``              assistant-only NLL, example building, packing
``optim``            AdamW + warmup/cosine + global-norm clip (fp32 master params)
``train_step``       jitted sharded RL / SFT steps with micro-batch accumulation
``checkpoint``       orbax: state + host JSON + host files; keep-last-k; restore resharded
``metrics``, ``plot``  JSONL metrics + tqdm; learning-curve PNGs
``data``             grain pipelines: SFT transcripts, task streams; checkpointable iterators
===================  ======================================================================

Batch format of the RL train step (one token batch, one mask per objective; numpy or jax,
right-padded, ``logprobs[:, t] = log p(tokens[:, t] | tokens[:, :t])``, position 0 unused)::

    batch = {
      "tokens":       (B, T) int32,
      "positions":    (B, T) int32,
      "valid":        (B, T) bool,          # False on padding
      "old_logprobs": (B, T) float32,       # sampler logprobs (same temperature / truncation)
      "ref_logprobs": (B, T) float32,       # optional; else pass ref_params to the step
      "objectives": {
        "<name>": {"loss_mask":  (B, T) float32,      # 1 on this objective's policy tokens
                   "advantages": (B,) or (B, T) float32},
        ...
      },
    }

Skill1 example: objectives ``util`` (GRPO advantages on the query + play tokens),
``rerank`` (REINFORCE on the raw NDCG, rank tokens, weight 0.3, aggregation
``seq_mean_token_sum``) and ``distil`` (GRPO on r - max U with its own normalisation, distil
tokens, weight 0.3); each row carries tokens for the objectives it belongs to and zeros in
the other masks. Validate on the host with ``objectives.validate_batch``.

Typical RL update::

    tcfg = TrainConfig(objectives=(("util", ObjectiveConfig()),
                                   ("rerank", ObjectiveConfig(weight=0.3, loss="reinforce",
                                                              aggregation="seq_mean_token_sum"))),
                       temperature=1.0, num_micro_batches=4, compute_dtype="bfloat16")
    opt = make_optimizer(lr=1e-6, total_steps=N, warmup_steps=10)
    step = make_train_step(model_cfg, opt, tcfg, mesh=mesh)
    state = init_train_state(params, opt)
    state, metrics = step(state, batch, None)        # or ref_params for KL
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "advantages": ("group_advantages", "grpo_advantages", "mean_advantages", "multi_objective_advantages",
                   "group_advantages_jnp", "validate_rewards", "zero_variance_groups"),
    "ndcg": ("complete_ranking",),  # the function ndcg: skillax.rl.ndcg.ndcg (module name)
    "logprobs": ("token_logprobs", "truncation_mask", "logprobs_from_logits"),
    "losses": ("ppo_clip_loss", "reinforce_loss", "entropy_bonus", "importance_ratio"),
    "kl": ("kl_penalty",),
    "aggregation": ("aggregate", "numerator", "denominator", "safe_ratio"),
    "objectives": ("ObjectiveConfig", "objectives_loss", "denominators", "finalize_metrics", "validate_batch"),
    "masks": ("overlong_filter", "drop_zero_variance", "policy_token_counts", "soft_overlong_penalty"),
    "sft": ("sft_loss", "make_example", "pack_examples", "collate"),
    "optim": ("make_optimizer", "make_schedule"),
    "train_step": ("TrainConfig", "make_train_step", "make_sft_step", "make_logprob_fn", "init_train_state",
                   "state_shardings", "shard_batch"),
    "checkpoint": ("Checkpointer", "pack_dir", "unpack_dir"),
    "metrics": ("MetricsWriter", "read_jsonl"),
    # plotting: skillax.rl.plot.plot (module name)
    "data": ("task_dataset", "sft_dataset", "make_iterator"),
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"skillax.rl.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'skillax.rl' has no attribute {name!r}")
