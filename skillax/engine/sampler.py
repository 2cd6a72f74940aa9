"""Sampler: batched prefill + decode with a KV cache, logprobs, stops and multi-turn continuation.

Host side of the rollout engine (the device program is ``skillax.engine.decode``)::

    sampler = Sampler(cfg, tokenizer, max_len=4096, dtype=jnp.bfloat16)
    out = sampler.generate(params, prompts, SamplingParams(temperature=1.0, n=8), seed=0, step=3)
    out.tokens, out.logprobs, out.mask, out.stop_reason, out.lengths   # numpy, one row per sample

    out, state = sampler.generate(params, prompts, sp, seed, step, return_state=True)
    out2, state = sampler.continue_(state, observation_chunks, params)  # prefills only the new tokens

* Prompts of different lengths are left-padded into one chunk so every row's last prompt token
  sits at the same slot; positions are ``cumsum(valid) - 1`` per row.
* Shapes are bucketed (``skillax.engine.buckets``); ``compile_count`` counts jit cache misses;
  ``precompile`` builds predicted shapes ahead of the calls (``skillax.engine.precompile``).
* ``params`` is an argument of every call (no copy is made; pass the trainer's current tree).
* Rows are prompt-major: row ``i * n + g`` is sample g of prompt i (``SampleOutput.group``).
* Stop handling: ``skillax.engine.stops`` (EOS ids, stop ids, stop strings on device on
  bytes + a host post-check on decoded text).

Device memory (issue 17 item 3): a call holds its KV cache (batch bucket x cache slots) and a
working set that does not grow with T x S: the prefill runs in pieces of at most
``prefill_tokens`` rows x tokens whose fp32 attention scores stay under
``prefill_score_bytes`` (``skillax.engine.decode.prefill``). ``call_bytes`` predicts a call's
bytes from its shapes; with ``memory_budget`` a fresh call predicted above it is split into
row chunks (same samples: each row keeps its (step, row) key words; ``generate``).

Continuation (``continue_``) keeps the cache of the previous call: each row's chunk is
``[pending token] + new tokens`` (the pending token is the last sampled token, never fed),
left-padded inside the chunk; cache slots grow to the next cache bucket when needed. The
result equals re-encoding the whole history from scratch (tested to 1e-5 in fp32).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from skillax.engine import stops
from skillax.engine.buckets import Buckets, chunk_and_new
from skillax.engine.decode import REASONS, Programs, StepInputs
from skillax.engine.precompile import ProgramShape
from skillax.engine.sampling import SamplingParams, sampling_mode
from skillax.models.kv_cache import KVCache, init_cache


@dataclasses.dataclass
class SampleOutput:
    """One row per sample (numpy on host). ARCHITECTURE.md "Sampler output".

    tokens (N, max_new) int32 (pad_id after the stop); logprobs (N, max_new) fp32 under the
    distribution sampled from (0 after the stop); mask (N, max_new) int32, 1 on tokens
    0..length-1 (the stop token included, exactly once); stop_reason: "eos" | "stop" |
    "length" ("skipped" only for rows a continuation was told to skip); lengths (N,) int32;
    group (N,) int32 prompt index of each row; texts: decoded completions (special tokens
    skipped) when the sampler has a tokenizer; stats: shapes, steps and seconds of the call.
    """

    tokens: np.ndarray
    logprobs: np.ndarray
    mask: np.ndarray
    stop_reason: list[str]
    lengths: np.ndarray
    group: np.ndarray
    texts: list[str] | None = None
    stats: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class SamplerState:
    """A multi-turn session: the KV cache and per-row bookkeeping (rows = the bucket's batch).

    cache: device KVCache (donated into the next call; None once consumed); rows: real rows;
    index: host copy of ``cache.index``; next_pos (B,): RoPE position of the next token fed;
    pending (B,) / has_pending (B,): the last sampled token not yet in the cache; cut_from (B,):
    slots >= it get invalidated by the next call; turn: continuation counter (folded into keys);
    key_step (B,) / key_row (B,): each row's key words (``skillax.engine.decode``: the call's
    step and the row index by default, or ``generate(row_keys=...)``).
    """

    cache: KVCache | None
    rows: int
    index: int
    next_pos: np.ndarray
    pending: np.ndarray
    has_pending: np.ndarray
    cut_from: np.ndarray
    turn: int
    seed: int
    step: int
    sampling: SamplingParams
    key_step: np.ndarray | None = None
    key_row: np.ndarray | None = None

    def __post_init__(self):
        B = len(self.next_pos)
        if self.key_step is None:
            self.key_step = np.full(B, self.step, np.int32)
        if self.key_row is None:
            self.key_row = np.arange(B, dtype=np.int32)


def parse_compiler_options(spec: str) -> dict:
    """``"k=v,k=v"`` -> ``{k: v}`` for ``Sampler(compiler_options=...)`` (``model.sampler_xla``,
    ``benchmarks/sampling.py --xla``): "true" / "false" (any case) become booleans, integers
    ints, the rest stays a string; "" gives {}. E.g. ``"xla_gpu_autotune_level=0"``.
    Raises ValueError naming the item without "=" or with an empty name."""
    out: dict = {}
    for item in (x.strip() for x in str(spec or "").split(",")):
        if not item:
            continue
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"compiler option {item!r} is not name=value (in {spec!r})")
        v = v.strip()
        out[k.strip()] = {"true": True, "false": False}.get(v.lower(), int(v) if v.lstrip("-").isdigit() else v)
    return out


def params_mesh(params):
    """The ``Mesh`` of a sharded params tree (its embedding's ``NamedSharding``), else None.

    The sampler creates its KV cache over the same devices, so it decodes with the trainer's
    sharded params as they are (no copy, no gather)."""
    sh = getattr(params["embed"], "sharding", None)
    mesh = getattr(sh, "mesh", None)
    return mesh if mesh is not None and mesh.size > 1 else None


def default_eos_ids(cfg, tokenizer) -> tuple[int, ...]:
    """EOS ids from the model config, the tokenizer, and ``<|im_end|>`` / ``<|endoftext|>``."""
    ids = set(getattr(cfg, "eos_token_id", ()) or ())
    if tokenizer is not None:
        if tokenizer.eos_token_id is not None:
            ids.add(int(tokenizer.eos_token_id))
        vocab = tokenizer.get_vocab()
        for tok in ("<|im_end|>", "<|endoftext|>"):
            if tok in vocab:
                ids.add(int(vocab[tok]))
    return tuple(sorted(ids))


class Sampler:
    """Rollout engine for one model config (see module docstring).

    Args:
      cfg: ``ModelConfig``.
      tokenizer: optional HF tokenizer (needed for stop strings, texts and ``generate_text``).
      max_len: the most cache slots a call or session may use (prompt + completion(s)).
      dtype: compute and KV-cache dtype (pass params already in it: on CPU a per-step cast of
        the weights costs more than the step).
      buckets: shape buckets.
      max_ids: capacity of the EOS and stop-token id lists; max_stop_strings / max_stop_bytes:
        capacity of the stop-string table.
      fuse_weights: decode with q|k|v and gate|up concatenated (2 GEMMs per layer where 5
        ran; materialised once per call, in place of the per-layer copy); off on
        tensor-sharded params.
      compiler_options: XLA options for the sampling program only (``jax.jit``'s
        ``compiler_options``), e.g. ``{"xla_gpu_enable_triton_gemm": False}``.
      cache_attention: attention of prefill chunks and decode steps over the KV cache:
        "pallas" (one flash kernel per layer over the slots in use only, no scores in memory;
        ``skillax.models.cache_attention``), "xla" (masked softmax over every cache slot), or
        "auto" (pallas on a GPU with unsharded params, else xla).
      share_prefill: a fresh call whose rows repeat prompts (``n > 1``, or equal prompts in
        the list) prefills each distinct prompt once and copies its K/V to its rows
        (``skillax.engine.decode``, ``shared``) when that shrinks the batch bucket; same
        samples under the same keys (tokens equal, logprobs within 1e-5 in fp32). Off on
        sharded params.
      prefill_tokens: the most rows x tokens one prefill piece feeds (0 = the whole chunk
        in one piece, the old behaviour); a longer chunk is fed in pieces whose length
        divides it (``skillax.engine.decode.prefill``; exact).
      prefill_score_bytes: the most bytes of one layer's fp32 attention scores (rows x heads
        x piece x cache slots x 4) of a piece that XLA attention runs (the Pallas kernel keeps
        no scores); bounds the piece length with ``prefill_tokens``.
      memory_budget: bytes (0 = off). A ``generate`` call (without ``return_state``) whose
        :meth:`call_bytes` exceed it runs as several calls over consecutive prompt chunks,
        each predicted within it; tokens and logprobs are those of the single call (each row
        keeps its key words), only ``stats`` shows the split. A single prompt over it raises
        ValueError before anything runs.

    Attributes:
      builds: one dict per call that built (traced and compiled) a sampling program: its shape
        key (batch, prefill_rows, chunk, prefill_chunk, new_bucket, cache_len, fresh, shared)
        and ``seconds`` (wall time of that call: build + first run). Which shapes a run keeps
        building late, and what each costs (``benchmarks/rl_loop.py``'s ``builds``).
      precompiled: the same records for the programs :meth:`precompile` built (not in
        ``builds``: a real call of such a shape builds nothing).
    """

    def __init__(self, cfg, tokenizer=None, max_len: int = 4096, dtype=jnp.bfloat16,
                 buckets: Buckets | None = None, *, max_ids: int = 8, max_stop_strings: int = 8,
                 max_stop_bytes: int = 32, fuse_weights: bool = True,
                 compiler_options: dict | None = None, cache_attention: str = "auto",
                 share_prefill: bool = True, prefill_tokens: int = 8192,
                 prefill_score_bytes: int = 256 << 20, memory_budget: int = 0):
        if max_len <= 1:
            raise ValueError(f"max_len must be > 1, got {max_len}")
        self.cfg = cfg
        self.tokenizer = tokenizer
        self.max_len = int(max_len)
        self.dtype = jnp.dtype(dtype)
        self.buckets = buckets or Buckets()
        self.max_ids = max_ids
        self.max_stop_strings = max_stop_strings
        self.max_stop_bytes = max_stop_bytes
        self.fuse_weights = bool(fuse_weights)
        if cache_attention not in ("auto", "pallas", "xla"):
            raise ValueError(f"cache_attention must be 'auto', 'pallas' or 'xla', got {cache_attention!r}")
        self.cache_attention = cache_attention
        self.share_prefill = bool(share_prefill)
        if prefill_tokens < 0 or prefill_score_bytes < 0 or memory_budget < 0:
            raise ValueError("prefill_tokens, prefill_score_bytes and memory_budget must be >= 0")
        self.prefill_tokens = int(prefill_tokens)
        self.prefill_score_bytes = int(prefill_score_bytes)
        self.memory_budget = int(memory_budget)
        self.compiler_options = dict(compiler_options or {})
        # one record per call that built a sampling program: its shape key and the call's wall
        # seconds (build + first run; benchmarks/rl_loop.py reports the builds of measured steps)
        self.builds: list[dict] = []
        self.precompiled: list[dict] = []
        self.programs = Programs(cfg, self.dtype, self.compiler_options)
        self.default_eos = default_eos_ids(cfg, tokenizer)
        self._byte_table = None  # device (tok_bytes, tok_lens), built on first stop-string use

    # ------------------------------------------------------------------ public API
    @property
    def compile_count(self) -> int:
        """Number of jit cache misses (= compilations) of this sampler's programs so far."""
        return self.programs.total

    def generate(self, params, prompts: Sequence[Sequence[int]], sampling: SamplingParams | None = None,
                 seed: int = 0, step: int = 0, *, return_state: bool = False, reserve: int = 0,
                 row_keys: Sequence[tuple[int, int]] | None = None):
        """Sample ``sampling.n`` completions per prompt.

        Args:
          params: the model's params tree (used as is, no copy).
          prompts: P non-empty token-id lists.
          sampling: ``SamplingParams`` (default: temperature 1, 256 new tokens).
          seed, step: row r's key is ``fold_in(fold_in(key(seed), step), r)``.
          row_keys: optional (step, row) pair per output row (N = P * n pairs, prompt-major):
            row r's key is then ``fold_in(fold_in(key(seed), row_keys[r][0]), row_keys[r][1])``
            (``step`` is ignored), so a row's samples do not depend on which other rows share
            the call or where it sits -- e.g. (turn, episode id) for overlapped play, where the
            batch composition depends on timing. Values are 32-bit words (0 <= v < 2**31).
          return_state: also return a ``SamplerState`` for ``continue_``.
          reserve: extra cache slots to allocate now for later turns (avoids a grow copy).
        With ``memory_budget`` (and no ``return_state``) a call predicted over it runs in
        consecutive prompt chunks (:meth:`_budget_split`); the output is the same.
        Returns:
          ``SampleOutput`` with N = P * n rows, or ``(SampleOutput, SamplerState)``.
        Raises:
          ValueError: empty prompts, bad token ids, a prompt + max_new_tokens + reserve over
            max_len (the message names the row and the budget), bad ``row_keys``, stop strings
            without a tokenizer -- all before anything is compiled.
        """
        sp = sampling or SamplingParams()
        if self.memory_budget and not return_state:
            prompts = self._validated(prompts, sp, reserve)
            if row_keys is not None and len(row_keys) != len(prompts) * sp.n:
                raise ValueError(f"row_keys has {len(row_keys)} pairs for {len(prompts) * sp.n} "
                                 "rows (prompts x n)")
            parts = self._budget_split(prompts, sp, reserve, params)
            if len(parts) > 1:
                return self._generate_parts(params, prompts, parts, sp, seed, step, reserve, row_keys)
        state, chunks, consts, T, n_new = self._fresh(prompts, sp, seed, step, reserve, params=params,
                                                      row_keys=row_keys)
        prefill = self._shared_prefill(chunks, params)
        out, state = self._call(params, state, chunks, sp, consts, T, n_new, seed, step, turn=0,
                                prefill=prefill)
        out.group = np.repeat(np.arange(state.rows // sp.n, dtype=np.int32), sp.n)
        if not return_state:
            state.cache = None
            return out
        return out, state

    def lower(self, params, prompts: Sequence[Sequence[int]], sampling: SamplingParams | None = None):
        """``jax.stages.Lowered`` of the program ``generate`` would run (for HLO inspection;
        allocates no cache)."""
        sp = sampling or SamplingParams()
        state, chunks, consts, T, n_new = self._fresh(prompts, sp, 0, 0, 0, allocate=False)
        prefill = self._shared_prefill(chunks, params)
        x, _, _ = self._pack(state, chunks, sp, consts, T, 0, 0, 0, prefill)
        rows = len(chunks) if prefill is None else len(prefill[0])
        S = state.cache.max_len
        piece = self._prefill_chunk(rows, T, S, self._cache_attn(params))
        self.last_lower_shape = dict(batch=len(chunks), chunk=T, new_bucket=n_new, cache_len=S,
                                     prefill_rows=rows, prefill_chunk=piece or T)
        return self.programs.run.lower(params, state.cache, x, n_new=n_new,
                                       use_stop_strings=consts["use_strings"],
                                       mode=sampling_mode(sp), fuse=self._fuse(params),
                                       cache_attn=self._cache_attn(params),
                                       fresh=self._fresh_prefill(0), shared=prefill is not None,
                                       prefill_chunk=piece)

    def precompile(self, params, shapes: Sequence[ProgramShape]) -> dict:
        """Build the sampling program of each shape now, so that a later fresh ``generate`` call
        of that shape (``ProgramShape.key`` = its ``builds`` key, same stop-string use and
        sampling mode) builds nothing: each program runs once on padding rows (every row
        inactive, the chunk all padding; a cache of the shape's rows x slots is allocated and
        dropped) through the path a real call takes (:meth:`_run`), so it fills the same jit
        cache. Changes no sample: a program is a function of its inputs (tested: same tokens and
        logprobs with and without). Shapes already built cost one short run each.

        Args:
          params: the weights the real calls will pass (same tree, dtypes and placement).
          shapes: ``engine.precompile.ProgramShape`` list (``predicted_shapes``).
        Returns:
          dict(programs: how many were built, shapes: len(shapes), seconds: wall time in s).
        Raises:
          ValueError: a shape with stop strings on a sampler without a tokenizer.
        """
        t0, n0 = time.perf_counter(), len(self.precompiled)
        for shape in shapes:
            self._precompile_one(params, shape)
        return dict(programs=len(self.precompiled) - n0, shapes=len(shapes),
                    seconds=round(time.perf_counter() - t0, 3))

    def _precompile_one(self, params, shape: ProgramShape) -> None:
        """Run ``shape``'s program once on padding rows; append its record to ``precompiled``
        when it built."""
        knobs = {"greedy": dict(temperature=0.0), "sample": {}, "truncate": dict(top_p=0.5)}[shape.mode]
        sp = SamplingParams(max_new_tokens=1, stop_strings=("</s>",) if shape.stop_strings else (), **knobs)
        consts = self._consts(sp)
        B, S = shape.batch, shape.cache_len
        cache = self.programs.new_cache(batch=B, length=S, mesh=params_mesh(params))
        state = SamplerState(cache=cache, rows=0, index=0, next_pos=np.zeros(B, np.int32),
                             pending=np.zeros(B, np.int32), has_pending=np.zeros(B, bool),
                             cut_from=np.full(B, S, np.int32), turn=0, seed=0, step=0, sampling=sp)
        prefill = ([None] * shape.prefill_rows, np.zeros(B, np.int32)) if shape.shared else None
        x, _, _ = self._pack(state, [None] * B, sp, consts, shape.chunk, 0, 0, 0, prefill)
        _, _, record = self._run(params, cache, x, sp, consts, shape.new_bucket, 0, shape.shared)
        if record.pop("new"):
            self.precompiled.append(dict(record, seconds=round(record["seconds"], 3)))

    def _shared_prefill(self, chunks, params):
        """(distinct prompts padded to their batch bucket, src (B,)) when a shared prefill
        shrinks the batch bucket (``share_prefill``), else None."""
        if not self._shares(params):
            return None
        index: dict = {}
        src = np.zeros(len(chunks), np.int32)
        for b, c in enumerate(chunks):
            if c is not None:
                src[b] = index.setdefault(tuple(c), len(index))
        Bp = self._shared_rows(len(index), sum(c is not None for c in chunks), len(chunks))
        if not Bp:
            return None
        uniq = [list(k) for k in index] + [None] * (Bp - len(index))
        return uniq, src

    def _shared_rows(self, distinct: int, rows: int, batch: int) -> int:
        """Rows of a shared prefill of ``distinct`` prompts behind ``rows`` real rows padded to
        ``batch`` (``generate`` and :meth:`plan` both decide here), or 0 when sharing saves
        nothing: every row has its own prompt, or no prefill bucket is below the batch."""
        Bp = self.buckets.pick("prefill", max(1, distinct))
        return Bp if Bp < batch and distinct < rows else 0

    def _shares(self, params) -> bool:
        return self.share_prefill and (params is None or params_mesh(params) is None)

    # ------------------------------------------------------------------ memory
    def plan(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams | None = None,
             reserve: int = 0, params=None) -> dict:
        """Shapes a fresh ``generate`` call would use (validates nothing; no device work):
        dict(rows N, batch B, prefill_rows Bp, chunk T, new_bucket, cache_len S,
        prefill_chunk piece length (T when fed in one piece), cache_attn, shared)."""
        sp = sampling or SamplingParams()
        N = len(prompts) * sp.n
        B = self.buckets.pick("batch", N)
        T, n_new = self._chunk_and_new(max(len(p) for p in prompts), sp.max_new_tokens, reserve)
        S = self.buckets.cache_len(T + n_new + reserve, self.max_len)
        distinct = len({tuple(p) for p in prompts})
        Bp = self._shared_rows(distinct, N, B) if self._shares(params) else 0
        shared = Bp > 0
        Bp = Bp or B
        attn = self._cache_attn(params) if params is not None else (
            "pallas" if self.cache_attention == "pallas" or (
                self.cache_attention == "auto" and jax.default_backend() == "gpu") else "xla")
        piece = self._prefill_chunk(Bp, T, S, attn)
        return dict(rows=N, batch=B, prefill_rows=Bp, chunk=T, new_bucket=n_new, cache_len=S,
                    prefill_chunk=piece or T, cache_attn=attn, shared=shared)

    def _pallas_ok(self, chunk: int, slots: int) -> bool:
        from skillax.models.cache_attention import pallas_attention_ok
        c = self.cfg
        return c.num_heads % c.num_kv_heads == 0 and pallas_attention_ok(
            chunk, slots, c.head_dim, c.num_heads // c.num_kv_heads)

    def _prefill_chunk(self, rows: int, T: int, S: int, attn: str) -> int:
        """Piece length of a prefill of ``rows`` x ``T`` tokens over ``S`` slots: 0 (one
        piece) when the whole chunk is within ``prefill_tokens`` and ``prefill_score_bytes``,
        else the largest divisor of T that is (1 at worst: then a piece costs what a decode
        step does)."""
        if self.prefill_tokens <= 0 or T <= 1:
            return 0
        H = self.cfg.num_heads

        def fits(c: int) -> bool:
            if rows * c > self.prefill_tokens:
                return False
            if attn == "pallas" and self._pallas_ok(c, S):
                return True
            return rows * H * c * S * 4 <= self.prefill_score_bytes

        if fits(T):
            return 0
        divs = set()
        for d in range(1, int(T ** 0.5) + 1):
            if T % d == 0:
                divs.update((d, T // d))
        for c in sorted(divs, reverse=True):
            if c < T and fits(c):
                return c
        return 1

    def call_bytes(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams | None = None,
                   reserve: int = 0, params=None) -> dict:
        """Predicted device bytes of a fresh ``generate`` call on top of the weights (an
        upper estimate, checked against XLA's ``memory_analysis`` of the compiled program in
        ``tests/engine/test_memory.py``; ``benchmarks/sampler_memory.py`` prints both).

        Terms (B rows x S slots cache, Bp prefill rows, piece of c tokens, D model width, F
        MLP width, V vocabulary, L layers, H / KV heads of Dh, e = compute dtype bytes):
          kv: the KV cache, 2 L B S KV Dh e (+ B S slot flags), donated in and out;
          shared: the Bp-row cache the shared prefill fills before copying it to the rows;
          weights: the per-layer (fused) decode weights the program materialises once;
          prefill: per piece, 3 Bp H c S' 4 (fp32 scores, probabilities and their cast;
            0 with the Pallas kernel) + Bp c (4 (3D + 2 (H + 2 KV) Dh + 3F)) x 2 activations,
            + 2 L Bp c KV Dh e for the scanned prefill's stacked K/V (one piece, GPU); S' = S;
          decode: 6 B V 4 (logits and the sampler's sort) + 3 B H S 4 + the step's
            activations, + outputs (B x new tokens ids and logprobs).
        Returns dict of those terms in bytes and ``total``.
        """
        sp = sampling or SamplingParams()
        c = self.cfg
        e = self.dtype.itemsize
        pl = self.plan(prompts, sp, reserve, params)
        B, Bp, S, piece = pl["batch"], pl["prefill_rows"], pl["cache_len"], pl["prefill_chunk"]
        L, H, KV, Dh, D, F, V = (c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.hidden_size,
                                 c.intermediate_size, c.vocab_size)
        kv_row = 2 * L * S * KV * Dh * e + S
        per_token = 2 * 4 * (3 * D + 2 * (H + 2 * KV) * Dh + 3 * F)
        scores = 0 if (pl["cache_attn"] == "pallas" and self._pallas_ok(piece, S)) else 3 * Bp * H * piece * S * 4
        stacked = 2 * L * Bp * piece * KV * Dh * e if piece == pl["chunk"] else 0
        layer_params = L * (D * (H + 2 * KV) * Dh + H * Dh * D + 3 * D * F + 2 * D)
        out = dict(kv=B * kv_row, shared=Bp * kv_row if pl["shared"] else 0,
                   weights=layer_params * e,
                   prefill=scores + Bp * piece * per_token + stacked,
                   decode=6 * B * V * 4 + 3 * B * H * S * 4 + B * per_token + 8 * B * pl["new_bucket"])
        out["total"] = sum(out.values())
        return out

    @contextlib.contextmanager
    def _part_buckets(self):
        """While open, row sizes are ``buckets.split`` (the parts of a budget-split call: with a
        row floor, a part padded back up to the floor would need the whole call's memory)."""
        full = self.buckets
        self.buckets = full.for_parts()
        try:
            yield
        finally:
            self.buckets = full

    def _budget_split(self, prompts, sp: SamplingParams, reserve: int, params) -> list[tuple[int, int]]:
        """[(start, stop)) prompt ranges: one range when :meth:`call_bytes` of the whole call
        fit ``memory_budget``, else the fewest balanced consecutive ranges that each fit with
        the parts' row sizes (``buckets.split``). Raises ValueError when a single prompt does
        not fit."""
        P = len(prompts)
        if not P:
            return [(0, 0)]
        if self.call_bytes(prompts, sp, reserve, params)["total"] <= self.memory_budget:
            return [(0, P)]
        with self._part_buckets():
            return self._part_ranges(prompts, sp, reserve, params)

    def _part_ranges(self, prompts, sp: SamplingParams, reserve: int, params) -> list[tuple[int, int]]:
        """``_budget_split``'s search over 2..P balanced ranges under the current buckets."""
        P = len(prompts)
        for parts in range(2, P + 1):
            size, extra = divmod(P, parts)
            bounds, a = [], 0
            for i in range(parts):
                b = a + size + (1 if i < extra else 0)
                bounds.append((a, b))
                a = b
            if all(self.call_bytes(prompts[a:b], sp, reserve, params)["total"] <= self.memory_budget
                   for a, b in bounds):
                return bounds
        worst = max(range(P), key=lambda i: self.call_bytes(prompts[i:i + 1], sp, reserve, params)["total"])
        need = self.call_bytes(prompts[worst:worst + 1], sp, reserve, params)["total"]
        raise ValueError(
            f"prompts[{worst}] ({len(prompts[worst])} tokens, n={sp.n}, max_new_tokens "
            f"{sp.max_new_tokens}) alone needs {need / 2**30:.2f} GiB of sampler memory but the "
            f"budget is {self.memory_budget / 2**30:.2f} GiB (model.sampler_memory_gb)")

    def _generate_parts(self, params, prompts, parts, sp: SamplingParams, seed, step, reserve,
                        row_keys) -> SampleOutput:
        """``generate`` over consecutive prompt ranges, each row keeping the key words it has
        in the single call ((step, row index) or its ``row_keys`` pair); outputs concatenated."""
        n = sp.n
        keys = list(row_keys) if row_keys is not None else [(step, r) for r in range(len(prompts) * n)]
        outs = []
        with self._part_buckets():
            for a, b in parts:
                outs.append(self.generate(params, prompts[a:b], sp, seed, step, reserve=reserve,
                                          row_keys=keys[a * n:b * n]))
        cat = lambda f: np.concatenate([getattr(o, f) for o in outs], axis=0)  # noqa: E731
        texts = None if outs[0].texts is None else [t for o in outs for t in o.texts]
        st = [o.stats for o in outs]
        stats = dict(batch=sum(x["batch"] for x in st), prefill_rows=sum(x["prefill_rows"] for x in st),
                     chunk=max(x["chunk"] for x in st), new_bucket=max(x["new_bucket"] for x in st),
                     prefill_chunk=min(x["prefill_chunk"] for x in st),
                     cache_len=max(x["cache_len"] for x in st), steps=max(x["steps"] for x in st),
                     seconds=sum(x["seconds"] for x in st), tokens=sum(x["tokens"] for x in st),
                     row_steps=sum(x["batch"] * x["steps"] for x in st), splits=len(parts))
        return SampleOutput(tokens=cat("tokens"), logprobs=cat("logprobs"), mask=cat("mask"),
                            stop_reason=[r for o in outs for r in o.stop_reason], lengths=cat("lengths"),
                            group=np.repeat(np.arange(len(prompts), dtype=np.int32), n), texts=texts,
                            stats=stats)

    def _validated(self, prompts, sp: SamplingParams, reserve: int) -> list[list[int]]:
        """Prompts as int lists; raises ValueError on empty input, bad ids or a prompt +
        max_new_tokens + reserve over max_len (naming the rows and the budget)."""
        prompts = [self._check_ids(p, f"prompts[{i}]") for i, p in enumerate(prompts)]
        if not prompts:
            raise ValueError("prompts is empty")
        budget = self.max_len - sp.max_new_tokens - reserve
        over = []
        for i, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompts[{i}] is empty (a prompt needs at least one token)")
            if len(p) > budget:
                over.append(i)
        if over:
            i = over[0]
            raise ValueError(
                f"prompts[{i}] has {len(prompts[i])} tokens but the cache budget for a prompt is "
                f"{budget} (sampler max_len {self.max_len} - max_new_tokens {sp.max_new_tokens} "
                f"- reserve {reserve}); {len(over)} of {len(prompts)} prompts are over it: "
                f"{over[:8]}{' ...' if len(over) > 8 else ''}")
        return prompts

    def _fresh(self, prompts, sp: SamplingParams, seed, step, reserve, allocate: bool = True,
               params=None, row_keys=None):
        """Validate a fresh call (before compiling anything) and build its empty state."""
        prompts = self._validated(prompts, sp, reserve)
        longest = max(len(p) for p in prompts)
        rows = [p for p in prompts for _ in range(sp.n)]
        N = len(rows)
        B = self.buckets.pick("batch", N)
        key_step, key_row = self._row_keys(row_keys, N, B, step)
        T, n_new = self._chunk_and_new(longest, sp.max_new_tokens, reserve)
        S = self.buckets.cache_len(T + n_new + reserve, self.max_len)
        consts = self._consts(sp)  # validates stop settings before compiling
        if allocate:
            cache = self.programs.new_cache(batch=B, length=S, mesh=params_mesh(params))
        else:
            cache = jax.eval_shape(lambda: init_cache(self.cfg, B, S, self.dtype))
        state = SamplerState(
            cache=cache, rows=N, index=0, next_pos=np.zeros(B, np.int32),
            pending=np.zeros(B, np.int32), has_pending=np.zeros(B, bool),
            cut_from=np.full(B, S, np.int32), turn=0, seed=seed, step=step, sampling=sp,
            key_step=key_step, key_row=key_row)
        return state, rows + [None] * (B - N), consts, T, n_new

    @staticmethod
    def _row_keys(row_keys, N: int, B: int, step: int) -> tuple[np.ndarray, np.ndarray]:
        """(key_step, key_row) (B,) int32: the call's step and the row index, or ``row_keys``
        for the N real rows (padding rows keep the default; they never sample)."""
        key_step = np.full(B, step, np.int32)
        key_row = np.arange(B, dtype=np.int32)
        if row_keys is None:
            return key_step, key_row
        if len(row_keys) != N:
            raise ValueError(f"row_keys has {len(row_keys)} pairs for {N} rows (prompts x n)")
        try:
            arr = np.array([(int(a), int(b)) for a, b in row_keys], np.int64).reshape(N, 2)
        except (TypeError, ValueError) as e:
            raise ValueError(f"row_keys must be (step, row) int pairs: {e}") from None
        if arr.min(initial=0) < 0 or arr.max(initial=0) >= 2 ** 31:
            raise ValueError("row_keys values must be in [0, 2**31)")
        key_step[:N], key_row[:N] = arr[:, 0], arr[:, 1]
        return key_step, key_row

    def continue_(self, state: SamplerState, new_token_chunks: Sequence[Sequence[int] | None],
                  params, sampling: SamplingParams | None = None, seed: int | None = None,
                  step: int | None = None):
        """Append new tokens to each row's history and sample again (multi-turn).

        Args:
          state: from ``generate(..., return_state=True)`` or a previous ``continue_``; its
            cache is donated (the old state cannot be used again).
          new_token_chunks: one entry per row: the new tokens (e.g. an environment observation
            plus the next assistant header), or None to skip the row this turn (its output row
            is empty with reason "skipped"). The row's pending token (its last sampled token)
            is prefilled first automatically.
          params: current weights.
          sampling: default the state's (with n=1); ``n`` must be 1.
          seed, step: default the state's; the turn counter is folded into every key. A given
            ``step`` replaces every row's step word (rows keep their row word).
        Returns:
          (SampleOutput with ``state.rows`` rows, new SamplerState).
        Raises:
          ValueError: consumed state, wrong number of rows, empty chunk with nothing pending,
            history longer than max_len -- before anything is compiled.
        """
        if state.cache is None:
            raise ValueError("this SamplerState was consumed (its cache was donated to a later call)")
        sp = sampling or dataclasses.replace(state.sampling, n=1)
        if sp.n != 1:
            raise ValueError("continue_ samples one continuation per row; use n=1")
        if len(new_token_chunks) != state.rows:
            raise ValueError(f"got {len(new_token_chunks)} chunks for a state of {state.rows} rows")
        B = len(state.next_pos)
        chunks: list[list[int] | None] = []
        for i, c in enumerate(list(new_token_chunks) + [None] * (B - state.rows)):
            if c is None:
                chunks.append(None)
                continue
            c = self._check_ids(c, f"new_token_chunks[{i}]")
            if state.has_pending[i]:
                c = [int(state.pending[i])] + c
            if not c:
                raise ValueError(f"new_token_chunks[{i}] is empty and the row has no pending token")
            chunks.append(c)
        if all(c is None for c in chunks):
            raise ValueError("every row was skipped (all chunks are None)")
        longest = max(len(c) for c in chunks if c is not None)
        T, n_new = self._chunk_and_new(longest, sp.max_new_tokens, 0)
        need = state.index + T + n_new
        if need > self.max_len:
            raise ValueError(f"the session needs {need} cache slots (history {state.index} + chunk "
                             f"{T} + new {n_new}) but max_len is {self.max_len}")
        consts = self._consts(sp)
        given = state
        if need > state.cache.max_len:
            S = self.buckets.cache_len(need, self.max_len)
            state = dataclasses.replace(state, cache=self.programs.grow(state.cache, length=S))
            given.cache = None
        seed = state.seed if seed is None else seed
        if step is not None:
            state = dataclasses.replace(state, key_step=np.full(B, step, np.int32))
        step = state.step if step is None else step
        old = state
        out, state = self._call(params, state, chunks, sp, consts, T, n_new, seed, step,
                                turn=state.turn + 1)
        old.cache = given.cache = None
        out.group = np.arange(state.rows, dtype=np.int32)
        return out, state

    def generate_text(self, params, tokenizer, conversations: Sequence[Sequence[dict]],
                      sampling: SamplingParams | None = None, seed: int = 0, step: int = 0, *,
                      enable_thinking: bool = False, tools=None) -> SampleOutput:
        """Chat convenience: render each conversation with the chat template, sample, decode.

        Args:
          tokenizer: the sampler's tokenizer (None = use it); a sampler built without one
            adopts this one (its EOS ids join the defaults).
          conversations: lists of ``{"role", "content"}`` messages (``skillax.tokenizers.chat``).
          enable_thinking, tools: passed to the chat template.
        Returns:
          ``SampleOutput`` whose ``texts`` hold the N = len(conversations) * n completions
          (special tokens skipped).
        Raises:
          ValueError: no tokenizer, or one different from the sampler's.
        """
        tok = tokenizer if tokenizer is not None else self.tokenizer
        if tok is None:
            raise ValueError("generate_text needs a tokenizer")
        if self.tokenizer is None:
            self.tokenizer, self.default_eos = tok, default_eos_ids(self.cfg, tok)
        elif tok is not self.tokenizer:
            raise ValueError("generate_text got a tokenizer different from the sampler's")
        prompts = [encode_conversation(tok, c, enable_thinking, tools) for c in conversations]
        return self.generate(params, prompts, sampling, seed, step)

    # ------------------------------------------------------------------ internals
    def _fuse(self, params) -> bool:
        """Decode with fused qkv / gate-up weights (``fuse_layers``) unless ``fuse_weights``
        is False or the params are sharded over "tensor" (fusing column-sharded matrices
        would make XLA move shards every program call)."""
        if not self.fuse_weights:
            return False
        mesh = params_mesh(params)
        return mesh is None or dict(mesh.shape).get("tensor", 1) == 1

    def _cache_attn(self, params) -> str:
        """"pallas" or "xla" for this call (``cache_attention``; "auto": the Pallas kernel on
        a GPU when the params are not sharded over several devices -- the kernel is not
        partitioned -- else XLA)."""
        if self.cache_attention == "pallas" and params_mesh(params) is not None:
            raise ValueError("cache_attention='pallas' needs params on one device (the kernel "
                             "is not partitioned); use 'auto' or 'xla' with sharded params")
        if self.cache_attention != "auto":
            return self.cache_attention
        return "pallas" if jax.default_backend() == "gpu" and params_mesh(params) is None else "xla"

    @staticmethod
    def _fresh_prefill(turn: int) -> bool:
        """``forward(fresh=True)`` for a call's prefill: on a new cache (turn 0), where the
        prefill scans over layers (off CPU; ``forward``'s ``cache_loop="auto"``). On CPU the
        flag would change nothing but split the compiled programs, so it stays False. Cost on
        GPU: a ``continue_`` chunk with exactly a fresh call's shapes compiles its own program
        (continuation chunks are usually shorter, so they rarely shared one)."""
        return turn == 0 and jax.default_backend() != "cpu"

    def _check_ids(self, ids, what: str) -> list[int]:
        try:
            ids = [int(t) for t in ids]
        except (TypeError, ValueError) as e:
            raise ValueError(f"{what} must be a list of token ids: {e}") from None
        bad = [t for t in ids if not 0 <= t < self.cfg.vocab_size]
        if bad:
            raise ValueError(f"{what} has token ids outside [0, {self.cfg.vocab_size}): {bad[:5]}")
        return ids

    def _chunk_and_new(self, longest: int, max_new: int, reserve: int) -> tuple[int, int]:
        """``engine.buckets.chunk_and_new`` with this sampler's buckets and max_len."""
        return chunk_and_new(self.buckets, self.max_len, longest, max_new, reserve)

    def _consts(self, sp: SamplingParams) -> dict:
        """Device-side stop tables for ``sp`` (raises ValueError on unsupported settings)."""
        eos = self.default_eos if sp.eos_ids is None else tuple(sp.eos_ids)
        pad = sp.pad_id if sp.pad_id is not None else (eos[0] if eos else 0)
        use_strings = bool(sp.stop_strings)
        if use_strings:
            if self.tokenizer is None:
                raise ValueError("stop_strings need a tokenizer (Sampler(tokenizer=...))")
            sb, sl = stops.encode_stop_strings(list(sp.stop_strings), self.max_stop_strings,
                                               self.max_stop_bytes)
            if self._byte_table is None:
                tb, tl = stops.token_byte_table(self.tokenizer, self.cfg.vocab_size)
                self._byte_table = (jax.device_put(tb), jax.device_put(tl))
            tb, tl = self._byte_table
        else:
            sb, sl = np.full((1, 1), -2, np.int32), np.zeros((1,), np.int32)
            tb, tl = np.zeros((1, 1), np.uint8), np.zeros((1,), np.int32)
        return dict(eos_ids=stops.pad_ids(eos, self.max_ids),
                    stop_ids=stops.pad_ids(sp.stop_token_ids, self.max_ids),
                    pad_id=np.int32(pad), stop_bytes=sb, stop_lens=sl, tok_bytes=tb, tok_lens=tl,
                    use_strings=use_strings)

    def _pack(self, state: SamplerState, chunks, sp: SamplingParams, consts, T: int, seed: int,
              step: int, turn: int, prefill=None):
        """Left-pad the chunks into (B, T) (or the distinct prompts of a shared prefill into
        (Bp, T)) and build the program's inputs (host numpy)."""
        B = len(chunks)
        rows, src = (chunks, np.arange(B, dtype=np.int32)) if prefill is None else prefill
        tokens = np.full((len(rows), T), consts["pad_id"], np.int32)
        valid = np.zeros((len(rows), T), bool)
        for b, c in enumerate(rows):
            if c is not None:
                tokens[b, T - len(c):] = c
                valid[b, T - len(c):] = True
        active = np.array([c is not None for c in chunks])
        lengths = np.array([0 if c is None else len(c) for c in chunks], np.int32)
        positions = state.next_pos[:len(rows), None] + np.maximum(np.cumsum(valid, axis=1) - 1, 0)
        next_pos = (state.next_pos + lengths).astype(np.int32)
        x = StepInputs(
            tokens=tokens, valid=valid, positions=positions.astype(np.int32),
            cut_from=state.cut_from.astype(np.int32), active=active,
            max_new=np.full(B, sp.max_new_tokens, np.int32), next_pos=next_pos,
            row_ids=state.key_row.astype(np.int32), seed=np.uint32(seed),
            step=state.key_step.astype(np.int32),
            turn=np.int32(turn), temperature=np.float32(sp.temperature),
            top_k=np.int32(sp.top_k), top_p=np.float32(sp.top_p), eos_ids=consts["eos_ids"],
            stop_ids=consts["stop_ids"], pad_id=consts["pad_id"], stop_bytes=consts["stop_bytes"],
            stop_lens=consts["stop_lens"], tok_bytes=consts["tok_bytes"],
            tok_lens=consts["tok_lens"], src=src)
        return x, next_pos, active

    def _run(self, params, cache, x: StepInputs, sp: SamplingParams, consts, n_new: int, turn: int,
             shared: bool):
        """Run the program of ``x``'s shapes (the one static decision for ``generate``,
        ``continue_`` and :meth:`precompile`, so a precompiled program is the one a fresh
        ``generate`` call of that shape runs; a ``continue_`` turn traces ``fresh=False`` on an
        accelerator, another program). Returns (device outputs on host, cache, record): record = the shape key of
        ``builds`` (batch, prefill_rows, chunk, prefill_chunk, new_bucket, cache_len, fresh,
        shared), ``seconds`` (wall time of the run, s) and ``new`` (whether it built)."""
        B, (Bp, T), S = len(x.active), x.tokens.shape, int(cache.max_len)
        attn = self._cache_attn(params)
        piece = self._prefill_chunk(Bp, T, S, attn)
        traced, fresh = self.programs.counts["run"], self._fresh_prefill(turn)
        t0 = time.perf_counter()
        dev, cache = self.programs.run(params, cache, x, n_new=n_new, use_stop_strings=consts["use_strings"],
                                       mode=sampling_mode(sp), fuse=self._fuse(params), cache_attn=attn,
                                       fresh=fresh, shared=shared, prefill_chunk=piece)
        dev = jax.device_get(dev)
        record = dict(batch=B, prefill_rows=Bp, chunk=T, prefill_chunk=piece or T, new_bucket=n_new,
                      cache_len=S, fresh=fresh, shared=shared, seconds=time.perf_counter() - t0,
                      new=self.programs.counts["run"] > traced)
        return dev, cache, record

    def _call(self, params, state: SamplerState, chunks, sp: SamplingParams, consts, T: int,
              n_new: int, seed: int, step: int, turn: int, prefill=None):
        """Pack the chunk, run the program, unpack outputs and the next state."""
        B = len(chunks)
        x, next_pos, active = self._pack(state, chunks, sp, consts, T, seed, step, turn, prefill)
        dev, cache, built = self._run(params, state.cache, x, sp, consts, n_new, turn, prefill is not None)
        seconds, piece = built.pop("seconds"), built["prefill_chunk"]
        if built.pop("new"):   # this call built a new program (one per shape key)
            self.builds.append(dict(built, seconds=round(seconds, 3)))
        N, M = state.rows, sp.max_new_tokens
        toks = np.array(dev["tokens"][:, :M], np.int32)
        lps = np.array(dev["logprobs"][:, :M], np.float32)
        lengths = np.array(dev["lengths"], np.int32)
        reasons = [REASONS[int(r)] for r in dev["reason"]]
        S = cache.max_len
        cut_from = np.full(B, S, np.int32)
        base = state.index + T  # slot of completion token 0
        if consts["use_strings"]:
            for b in range(N):
                if not active[b] or lengths[b] == 0:
                    continue
                cut = stops.host_stop_cut(self.tokenizer, toks[b, :lengths[b]], sp.stop_strings)
                if cut is not None and cut < lengths[b]:
                    lengths[b], reasons[b] = cut, "stop"
                    cut_from[b] = base + cut
        kept = np.arange(M)[None, :] < lengths[:, None]
        toks = np.where(kept, toks, consts["pad_id"]).astype(np.int32)
        lps = np.where(kept, lps, 0.0).astype(np.float32)
        # next state: a row that ran has its last kept token pending unless a host cut left it
        # already in the cache (then the slots after it are invalidated next call).
        ran = active & (lengths > 0)
        cut_rows = cut_from < S
        last = toks[np.arange(B), np.maximum(lengths - 1, 0)]
        new_state = SamplerState(
            cache=cache, rows=N, index=base + int(dev["steps"]) - 1,
            next_pos=np.where(ran, next_pos + lengths - np.where(cut_rows, 0, 1),
                              state.next_pos).astype(np.int32),
            pending=np.where(ran & ~cut_rows, last, state.pending).astype(np.int32),
            has_pending=np.where(ran, ~cut_rows, state.has_pending),
            cut_from=cut_from, turn=turn, seed=seed, step=step, sampling=sp,
            key_step=state.key_step, key_row=state.key_row)
        texts = None
        if self.tokenizer is not None:
            texts = [self.tokenizer.decode(toks[b, :lengths[b]].tolist(), skip_special_tokens=True)
                     for b in range(N)]
        out = SampleOutput(
            tokens=toks[:N], logprobs=lps[:N], mask=kept[:N].astype(np.int32),
            stop_reason=reasons[:N], lengths=lengths[:N], group=np.arange(N, dtype=np.int32),
            texts=texts,
            stats=dict(batch=B, prefill_rows=B if prefill is None else len(prefill[0]),
                       chunk=T, prefill_chunk=piece or T, new_bucket=n_new, cache_len=S,
                       steps=int(dev["steps"]),
                       seconds=seconds, tokens=int(lengths[:N].sum())))
        return out, new_state


def encode_conversation(tokenizer, messages, enable_thinking: bool = False, tools=None) -> list[int]:
    """Prompt ids of one conversation with the generation header (``skillax.tokenizers.chat``
    when available, else the tokenizer's own chat template)."""
    try:
        from skillax.tokenizers.chat import render
        text = render(tokenizer, messages, add_generation_prompt=True,
                      enable_thinking=enable_thinking, tools=tools)
    except ImportError:  # pragma: no cover - chat module absent
        text = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True,
                                             tokenize=False, tools=tools)
    return list(tokenizer.encode(text, add_special_tokens=False))


def encode_conversations(tokenizer, conversations, enable_thinking: bool = False,
                         tools=None) -> list[list[int]]:
    """:func:`encode_conversation` of many conversations with one batched tokenizer call
    (the same ids; the Rust tokenizer encodes the batch in one go: 0.8 vs 1.05-1.34 ms per
    ~300-token play prompt measured on this 2-core machine)."""
    conversations = list(conversations)
    if not conversations:
        return []
    try:
        from skillax.tokenizers.chat import render
        texts = [render(tokenizer, m, add_generation_prompt=True, enable_thinking=enable_thinking,
                        tools=tools) for m in conversations]
    except ImportError:  # pragma: no cover - chat module absent
        texts = [tokenizer.apply_chat_template(list(m), add_generation_prompt=True, tokenize=False,
                                               tools=tools) for m in conversations]
    return [list(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def make_generate_fn(sampler: Sampler, params: Any | Callable[[], Any], *, top_k: int = 0,
                     top_p: float = 1.0, seed: int = 0, eos_ids: Sequence[int] | None = None
                     ) -> Callable[[list[list[int]], int, float, list[str]], list[tuple[list[int], str]]]:
    """Adapter for ``skillax.agents.workers.local.LocalWorker``.

    Returns ``generate_fn(prompt_ids, max_new_tokens, temperature, stop_strings) ->
    [(output_ids, stop_reason)]``: output ids up to and including the stop token. ``params``
    may be a zero-argument callable returning the current weights. Each call uses the next
    ``step`` so repeated calls draw fresh samples; the sequence is deterministic for ``seed``.
    """
    calls = [0]

    def generate_fn(prompt_ids, max_new_tokens, temperature, stop_strings):
        p = params() if callable(params) else params
        sp = SamplingParams(temperature=float(temperature), top_k=top_k, top_p=top_p,
                            max_new_tokens=int(max_new_tokens),
                            stop_strings=tuple(stop_strings or ()),
                            eos_ids=None if eos_ids is None else tuple(eos_ids))
        out = sampler.generate(p, prompt_ids, sp, seed=seed, step=calls[0])
        calls[0] += 1
        return [(out.tokens[i, :out.lengths[i]].tolist(), out.stop_reason[i])
                for i in range(len(out.lengths))]

    return generate_fn
