"""A tiny causal 'LM' and a step-by-step reference sampler for logprob tests.

hidden[t] = tanh(embed[tokens[t]] + mean(embed[tokens[:t+1]]) @ mix): causal, cheap, and
strongly dependent on the current token, so an off-by-one in alignment is visible. The
sampler runs the model on a fixed-size buffer and reads the logits of the last filled
position each step -- the way an (uncached) sampler computes its logprobs -- so comparing it
with the trainer's teacher-forced, chunked logprobs checks next-token alignment (PITFALLS 4-7).
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

from skillax.rl.logprobs import NEG_LOGIT, truncation_mask


def init(seed, V=37, D=16):
    """Params drawn with numpy (eager jax.random compiles per shape, slow on a busy CPU)."""
    rng = np.random.default_rng(seed)
    n = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return {"embed": jnp.asarray(n(V, D)), "mix": jnp.asarray(n(D, D) / np.sqrt(D)),
            "head": jnp.asarray(2.0 * n(D, V) / np.sqrt(D))}


def prompts(seed, B, P, V=37):
    return jnp.asarray(np.random.default_rng(seed).integers(0, V, (B, P)), jnp.int32)


def hidden(params, tokens):
    e = params["embed"][tokens]                                   # (B, T, D)
    n = jnp.arange(1, tokens.shape[1] + 1, dtype=jnp.float32)[None, :, None]
    return jnp.tanh(e + (jnp.cumsum(e, axis=1) / n) @ params["mix"])  # (B, T, D)


@functools.partial(jax.jit, static_argnames=("n_new", "temperature", "top_k", "top_p", "greedy"))
def sample(params, prompt, n_new, key, *, temperature=1.0, top_k=None, top_p=None, greedy=False):
    """Reference sampler. prompt (B, P) int32 -> tokens (B, P+n_new), sampler logprobs (B, n_new)
    under the distribution sampled from (temperature + truncation renormalised)."""
    B, P = prompt.shape
    buf = jnp.concatenate([prompt, jnp.zeros((B, n_new), prompt.dtype)], axis=1)

    def step(buf, xs):
        t, k = xs                                                   # t: index of the new token
        h = jax.lax.dynamic_index_in_dim(hidden(params, buf), t - 1, axis=1, keepdims=False)
        logits = (h @ params["head"]) / temperature               # (B, V)
        if top_k is not None or top_p is not None:
            logits = jnp.where(truncation_mask(logits, top_k, top_p), logits, NEG_LOGIT)
        logp = jax.nn.log_softmax(logits, axis=-1)
        nxt = jnp.argmax(logits, -1) if greedy else jax.random.categorical(k, logits, axis=-1)
        buf = jax.lax.dynamic_update_slice(buf, nxt[:, None].astype(buf.dtype), (0, t))
        return buf, jnp.take_along_axis(logp, nxt[:, None], -1)[:, 0]

    ts = jnp.arange(P, P + n_new)
    buf, lps = jax.lax.scan(step, buf, (ts, jax.random.split(key, n_new)))
    return buf, lps.T
