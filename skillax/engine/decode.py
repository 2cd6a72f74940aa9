"""The device program: prefill one (left-padded) chunk into the KV cache, then decode.

One jitted function per shape bucket does both: ``forward`` over the chunk (all rows' last
chunk token sits at the same slot, so one ``hidden[:, -1]`` gives every row's next-token
logits), then a ``lax.while_loop`` whose body samples from the carried logits, records the
token and the stop state, and feeds the token back through ``forward`` for the next logits
(only while some row is still running). The loop exits early when all rows are done, else
after ``n_new`` tokens; there is no Python per token and no ``lax.cond`` (the sampling branch
is static). The cache is donated in and returned.

Slot bookkeeping (``KVCache`` contract): the chunk occupies slots ``base .. base+T-1``;
completion token ``j`` is fed at slot ``base + T + j`` right after it is sampled. The last
token a row samples (its stop token, or the one that hit the length limit) is never fed: it
is the row's *pending* token, which a continuation prefills first. Rows that are done feed
with ``valid=False``, so their slots stay invalid.

Keys: row b uses ``fold_in(fold_in(fold_in(key(seed), step[b]), row_ids[b]), u)`` for
continuation turn u (u = 0 for a fresh call) and ``fold_in(that, t)`` for its token t. The
sampler's default is ``step[b] = `` the call's step and ``row_ids[b] = b`` (the row index);
callers that need a row's randomness to be independent of which other rows share the call
(``Sampler.generate(row_keys=...)``: overlapped play) pass their own (step, row) per row.
"""

from __future__ import annotations

import collections
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from skillax.engine import stops
from skillax.engine.sampling import sample_tokens
from skillax.models.kv_cache import KVCache, init_cache
from skillax.models.transformer import forward, fuse_layers, lm_head_weight, split_layers

#: stop reason codes on device (0 = the row did not run: an inactive / padding row).
EOS, STOP, LENGTH = 1, 2, 3
REASONS = {0: "skipped", EOS: "eos", STOP: "stop", LENGTH: "length"}


class StepInputs(NamedTuple):
    """Per-call arrays of the program (host numpy in, all traced; shapes are the bucket's).

    tokens/valid/positions: (Bp, T) chunk, left-padded (Bp = B, or the distinct prompts of a
    shared prefill); src: (B,) int32 the chunk row each decode row continues (arange(B)
    unless shared); cut_from: (B,) int32, slots >= it are
    invalidated first (host stop-string cuts of the previous turn); active: (B,) bool rows that
    sample; max_new: (B,) int32; next_pos: (B,) int32 position of completion token 0;
    row_ids: (B,) int32 and step (B,) int32: the per-row key words (module docstring); seed ()
    uint32; turn () int32; temperature () f32; top_k () int32;
    top_p () f32; eos_ids, stop_ids (E,) int32 padded -1; pad_id () int32; stop_bytes (NS, M)
    int32; stop_lens (NS,) int32; tok_bytes (V, W) uint8; tok_lens (V,) int32.
    """

    tokens: jax.Array
    valid: jax.Array
    positions: jax.Array
    cut_from: jax.Array
    active: jax.Array
    max_new: jax.Array
    next_pos: jax.Array
    row_ids: jax.Array
    seed: jax.Array
    step: jax.Array
    turn: jax.Array
    temperature: jax.Array
    top_k: jax.Array
    top_p: jax.Array
    eos_ids: jax.Array
    stop_ids: jax.Array
    pad_id: jax.Array
    stop_bytes: jax.Array
    stop_lens: jax.Array
    tok_bytes: jax.Array
    tok_lens: jax.Array
    src: jax.Array


class _Loop(NamedTuple):
    t: jax.Array          # () int32, index of the next token to sample
    done: jax.Array       # (B,) bool
    reason: jax.Array     # (B,) int32 (0 while running)
    length: jax.Array     # (B,) int32 tokens kept so far
    tail: jax.Array       # (B, Lb) int32 last bytes of the completion (stop strings)
    out_tok: jax.Array    # (B, N) int32
    out_lp: jax.Array     # (B, N) fp32
    cache: KVCache
    logits: jax.Array     # (B, V) fp32 next-token logits


def _head_logits(params, cfg, h, dtype):
    """h (B, D) -> (B, V) fp32 with operands in the compute dtype (bf16 x bf16 -> fp32).

    Tied embeddings contract ``embed (V, D)`` on D directly: written as ``embed.T`` the XLA
    CPU backend converts the whole bf16 table to fp32 and runs an fp32 GEMV (measured
    1.6x slower per decode step at SmolLM2's 49152 x 576).
    """
    if cfg.tie_word_embeddings:
        return jnp.einsum("bd,vd->bv", h.astype(dtype), params["embed"].astype(dtype),
                          preferred_element_type=jnp.float32)
    w = lm_head_weight(params, cfg)
    return jnp.einsum("bd,dv->bv", h.astype(dtype), w.astype(dtype),
                      preferred_element_type=jnp.float32)


def _record(x: StepInputs, st: _Loop, tok, lp, use_stop_strings: bool) -> _Loop:
    """Write token ``st.t`` for rows still running and update done / reason / length."""
    t = st.t
    alive = ~st.done
    tok = jnp.where(alive, tok, x.pad_id)
    lp = jnp.where(alive, lp, 0.0)
    out_tok = jax.lax.dynamic_update_index_in_dim(st.out_tok, tok, t, axis=1)
    out_lp = jax.lax.dynamic_update_index_in_dim(st.out_lp, lp, t, axis=1)
    is_eos = jnp.any(tok[:, None] == x.eos_ids[None, :], axis=-1)
    is_stop = jnp.any(tok[:, None] == x.stop_ids[None, :], axis=-1)
    tail = st.tail
    if use_stop_strings:
        nb = x.tok_lens[tok]
        new_tail = stops.append_bytes(tail, x.tok_bytes[tok], nb)
        is_stop = is_stop | stops.match_stops(new_tail, nb, x.stop_bytes, x.stop_lens)
        tail = jnp.where(alive[:, None], new_tail, tail)
    at_limit = t + 1 >= x.max_new
    why = jnp.where(is_eos, EOS, jnp.where(is_stop, STOP, jnp.where(at_limit, LENGTH, 0)))
    return _Loop(
        t=t + 1,
        done=st.done | (alive & (why > 0)),
        reason=jnp.where(alive, why, st.reason),
        length=jnp.where(alive, t + 1, st.length),
        tail=tail, out_tok=out_tok, out_lp=out_lp, cache=st.cache, logits=st.logits)


def prefill(params, layers, cfg, tokens, positions, valid, cache: KVCache, *, dtype,
            cache_attn: str = "xla", fresh: bool = False, chunk: int = 0):
    """Write the chunk ``tokens`` (B, T) into ``cache``; returns (hidden of its last token
    (B, D) in the compute dtype, cache).

    ``chunk`` (static) = 0 or >= T: one ``forward`` over all T tokens (``fresh`` as there).
    Else T must be a multiple of ``chunk``: a ``lax.fori_loop`` feeds the T / chunk pieces
    of ``chunk`` tokens in order, each one a ``forward`` over the cache (unrolled layers
    reading the per-layer ``layers`` of the decode step, each layer's buffer updated in
    place), so the program's working set is that of ``B x chunk`` tokens -- activations and
    the (B, H, chunk, S) fp32 scores of XLA attention -- instead of ``B x T`` with the (B, H,
    T, T) scores and a stacked (L, B, T, KV, Dh) copy of the chunk's K/V of the scanned
    prefill (issue 17 item 3: 12.7-28 GiB single allocations on the H200). Exact: piece i
    sees the slots of pieces < i through the cache, and attention over masked slots adds
    exactly 0 (tests: chunked == unchunked, tokens equal, logprobs within 1e-5 in fp32).
    """
    T = tokens.shape[1]
    if chunk <= 0 or chunk >= T:
        hidden, cache = forward(params, cfg, tokens, positions, valid, cache, dtype=dtype,
                                cache_attn=cache_attn, fresh=fresh)
        return hidden[:, -1], cache
    if T % chunk:
        raise ValueError(f"prefill chunk {chunk} does not divide the chunk length {T}")
    per_layer = dict(params, layers=layers)

    def body(i, carry):
        cache, _ = carry
        piece = lambda a: jax.lax.dynamic_slice_in_dim(a, i * chunk, chunk, axis=1)  # noqa: E731
        hidden, cache = forward(per_layer, cfg, piece(tokens), piece(positions), piece(valid), cache,
                                dtype=dtype, cache_attn=cache_attn, cache_loop="unroll")
        return cache, hidden[:, -1]

    last = jnp.zeros((tokens.shape[0], cfg.hidden_size), dtype)
    cache, last = jax.lax.fori_loop(0, T // chunk, body, (cache, last))
    return last, cache


def run_program(params, cache: KVCache, x: StepInputs, *, cfg, n_new: int, dtype,
                use_stop_strings: bool, mode: str = "auto", fuse: bool = False,
                cache_attn: str = "xla", fresh: bool = False, shared: bool = False,
                prefill_chunk: int = 0):
    """Prefill ``x.tokens`` into ``cache`` and decode up to ``n_new`` tokens per row.

    ``mode`` (static): "greedy", "sample" or "truncate" fixes the sampling branch at trace
    time (``skillax.engine.sampling.sampling_mode``); "auto" picks it on device from the
    traced knobs. ``fuse`` (static): decode with :func:`fuse_layers` weights (the sampler
    passes True unless the params are tensor-sharded). ``cache_attn`` (static): attention
    of the prefill chunk and the decode steps over the cache, "xla" or "pallas"
    (``transformer.forward``). ``fresh`` (static): the cache is new (no valid slot before the
    chunk), so the prefill attends within the chunk (``transformer.forward(fresh=True)``).
    ``shared`` (static; fresh calls only): one prefill per distinct prompt -- the chunk holds
    Bp < B distinct prompts, prefilled into the first Bp cache rows, whose K/V (and last
    hidden state) are then gathered to the B decode rows by ``x.src``: the G samples of a
    prompt (issue 17 item 4) and identical prompts of different episodes share one prefill.
    ``prefill_chunk`` (static): feed the chunk in pieces of that many tokens (:func:`prefill`;
    0 = in one piece).

    Returns (out, cache): out = dict(tokens (B, n_new) int32, logprobs (B, n_new) fp32,
    lengths (B,) int32, reason (B,) int32 codes, steps () int32 tokens sampled by the longest
    row), and the cache with ``index`` after the last fed token.
    """
    B = x.active.shape[0]
    S = cache.max_len
    # per-layer weights for the decode step, materialised once outside the decode loop
    # (skillax.models.kv_cache); the prefill chunk reads the stacked weights (transformer.forward)
    layers = fuse_layers(params["layers"], dtype) if fuse else split_layers(params["layers"])
    split = dict(params, layers=layers)
    cache = cache._replace(
        slot_valid=cache.slot_valid & (jnp.arange(S)[None, :] < x.cut_from[:, None]))
    base = jax.random.key(x.seed)
    row_keys = jax.vmap(lambda s, r: jax.random.fold_in(
        jax.random.fold_in(jax.random.fold_in(base, s), r), x.turn))(x.step, x.row_ids)

    def sample(logits, t):
        keys = jax.vmap(lambda k: jax.random.fold_in(k, t))(row_keys)
        return sample_tokens(keys, logits, x.temperature, x.top_k, x.top_p, mode=mode)

    if shared:
        Bp = x.tokens.shape[0]
        sub = KVCache(k=tuple(a[:Bp] for a in cache.k), v=tuple(a[:Bp] for a in cache.v),
                      slot_valid=cache.slot_valid[:Bp], index=cache.index)
        last, sub = prefill(params, layers, cfg, x.tokens, x.positions, x.valid, sub, dtype=dtype,
                            cache_attn=cache_attn, fresh=fresh, chunk=prefill_chunk)
        cache = KVCache(k=tuple(a[x.src] for a in sub.k), v=tuple(a[x.src] for a in sub.v),
                        slot_valid=sub.slot_valid[x.src], index=sub.index)
        last = last[x.src]
    else:
        last, cache = prefill(params, layers, cfg, x.tokens, x.positions, x.valid, cache, dtype=dtype,
                              cache_attn=cache_attn, fresh=fresh, chunk=prefill_chunk)
    tail = stops.init_tail(B, x.tok_bytes.shape[1], x.stop_bytes.shape[1])
    st = _Loop(t=jnp.zeros((), jnp.int32), done=~x.active,
               reason=jnp.zeros((B,), jnp.int32), length=jnp.zeros((B,), jnp.int32), tail=tail,
               out_tok=jnp.full((B, n_new), x.pad_id, jnp.int32),
               out_lp=jnp.zeros((B, n_new), jnp.float32), cache=cache,
               logits=_head_logits(params, cfg, last, dtype))

    def cond(st: _Loop):
        return (st.t < n_new) & jnp.any(~st.done)

    def feed(st: _Loop):
        """Feed the token just sampled (rows still running) and compute the next logits."""
        tok = jax.lax.dynamic_index_in_dim(st.out_tok, st.t - 1, axis=1, keepdims=False)
        pos = x.next_pos + st.t - 1
        hidden, cache = forward(split, cfg, tok[:, None], pos[:, None], ~st.done[:, None],
                                st.cache, dtype=dtype, cache_attn=cache_attn)
        return st._replace(cache=cache, logits=_head_logits(params, cfg, hidden[:, 0], dtype))

    def sample_and_record(st: _Loop):
        tok, lp = sample(st.logits, st.t)
        return _record(x, st, tok, lp, use_stop_strings)

    # token 0 comes from the prefill's logits; each iteration then feeds the token just
    # sampled and samples the next, so a forward runs only when some row goes on (no
    # lax.cond: on GPU a conditional syncs the host once per step)
    st = sample_and_record(st)
    st = jax.lax.while_loop(cond, lambda st: sample_and_record(feed(st)), st)
    out = dict(tokens=st.out_tok, logprobs=st.out_lp, lengths=st.length, reason=st.reason,
               steps=st.t)
    return out, st.cache


def cache_shardings(cfg, mesh, batch: int) -> KVCache:
    """``NamedSharding`` per cache leaf: batch over ("data", "fsdp") and KV heads over
    "tensor" when the sizes divide, else replicated along that axis."""
    from jax.sharding import NamedSharding, PartitionSpec as P

    from skillax.sharding import BATCH

    nb = 1
    for a in BATCH:
        nb *= mesh.shape[a]
    b = BATCH if batch % nb == 0 else None
    kv = "tensor" if cfg.num_kv_heads % mesh.shape["tensor"] == 0 else None
    kvs = (NamedSharding(mesh, P(b, None, kv, None)),) * cfg.num_layers
    return KVCache(k=kvs, v=kvs, slot_valid=NamedSharding(mesh, P(b, None)),
                   index=NamedSharding(mesh, P()))


class Programs:
    """The jitted functions of one sampler, with a per-function trace (= compile) counter.

    ``counts[name]`` increases each time jax traces ``name`` for a new shape / static
    configuration, i.e. on every jit cache miss (each miss is followed by one compile).
    """

    def __init__(self, cfg, dtype, compiler_options: dict | None = None):
        self.cfg = cfg
        self.dtype = jnp.dtype(dtype)
        self.counts: collections.Counter = collections.Counter()
        self.run = jax.jit(self._run, static_argnames=("n_new", "use_stop_strings", "mode", "fuse",
                                                       "cache_attn", "fresh", "shared",
                                                       "prefill_chunk"),
                           donate_argnames=("cache",), compiler_options=compiler_options or None)
        self._new_cache_fns: dict = {}
        self.grow = jax.jit(self._grow, static_argnames=("length",))  # new shape: no donation

    def new_cache(self, *, batch: int, length: int, mesh=None) -> KVCache:
        """Zeroed cache, created in place: on the default device, or sharded over ``mesh``
        (batch over ("data", "fsdp") and KV heads over "tensor" where they divide)."""
        key = (batch, length, mesh)
        if key not in self._new_cache_fns:
            shard = None if mesh is None else cache_shardings(self.cfg, mesh, batch)
            self._new_cache_fns[key] = jax.jit(
                functools.partial(self._new_cache, batch=batch, length=length), out_shardings=shard)
        return self._new_cache_fns[key]()

    def _run(self, params, cache, x, *, n_new, use_stop_strings, mode="auto", fuse=False,
             cache_attn="xla", fresh=False, shared=False, prefill_chunk=0):
        self.counts["run"] += 1
        return run_program(params, cache, x, cfg=self.cfg, n_new=n_new, dtype=self.dtype,
                           use_stop_strings=use_stop_strings, mode=mode, fuse=fuse,
                           cache_attn=cache_attn, fresh=fresh, shared=shared,
                           prefill_chunk=prefill_chunk)

    def _new_cache(self, *, batch, length):
        self.counts["new_cache"] += 1
        return init_cache(self.cfg, batch, length, self.dtype)

    def _grow(self, cache: KVCache, *, length):
        """Pad the slot axis of ``cache`` to ``length`` (new slots invalid)."""
        self.counts["grow"] += 1
        extra = length - cache.max_len
        pad4 = ((0, 0), (0, extra), (0, 0), (0, 0))
        return KVCache(k=tuple(jnp.pad(a, pad4) for a in cache.k),
                       v=tuple(jnp.pad(a, pad4) for a in cache.v),
                       slot_valid=jnp.pad(cache.slot_valid, ((0, 0), (0, extra))),
                       index=cache.index)

    @property
    def total(self) -> int:
        return sum(self.counts.values())
