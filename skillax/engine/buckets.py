"""Shape buckets: round batch, prompt length and new-token count up to a few sizes.

Every distinct (batch, chunk length, new tokens, cache length) tuple is one compiled program,
so an RL run with varied prompt and response lengths compiles only a handful of programs
(PITFALLS 15). Padded rows are masked out (inactive from the first step); padded prompt
positions are left padding marked invalid. Default sizes are powers of two with the 1.5x
points between them (16, 24, 32, 48, ...) on the prompt (prefill chunk), batch and cache
axes; new-token buffers are powers of two. A prefill pays for every padded position (a
300-token prompt padded to 384 instead of 512 costs a quarter less; on a 2-core CPU the
sampler is prefill-bound), and device memory pays for every padded row and slot: with
powers of two an eval chunk of 140 rows took a 256-row KV cache (1.83x the rows it holds,
the campaign's out-of-memory, issue 17 item 3); 1.5x points bound the over-allocation of
rows and slots at 1.5x (140 -> 192 rows; 2,112 slots -> 3,072, not 4,096). Cache sizes stay
multiples of 32 (the Pallas kernel's key block).
"""

from __future__ import annotations

import bisect
import dataclasses


def powers_of_two(lo: int, hi: int) -> tuple[int, ...]:
    """(lo, 2 lo, 4 lo, ..., >= hi); lo, hi > 0."""
    out, x = [], lo
    while True:
        out.append(x)
        if x >= hi:
            return tuple(out)
        x *= 2


def powers_of_two_and_halves(lo: int, hi: int) -> tuple[int, ...]:
    """Powers of two from ``lo`` with the 1.5x point between each pair, up to >= hi
    (``lo`` = 1 gives 1, 2, 3, 4, 6, 8, 12, ...)."""
    out = []
    for x in powers_of_two(lo, hi):
        if out and out[-1] < hi:
            out.append(3 * x // 4)
        out.append(x)
    return tuple(sorted(set(out)))


@dataclasses.dataclass(frozen=True)
class Buckets:
    """Allowed sizes per axis (sorted ascending).

    Attributes:
      batch: rows per call (prompts x n, or a continuation's rows).
      prompt: prefill chunk length (a prompt, or a continuation's new tokens + the pending one).
      new_tokens: size of the output buffers / decode steps at most.
      cache: KV cache lengths (slots); a fresh call uses the smallest >= chunk + new tokens.
      prefill: rows of a shared prefill (a call's distinct prompts); () = the batch sizes
        (``prefill_buckets``: with a row floor, the prompts of a step keep one prefill each).
        Its largest size is >= the largest batch size (a shared prefill never has more rows
        than its call).
      split: rows of the parts of a call that ``model.sampler_memory_gb`` splits; () = the
        batch sizes. With a row floor: the sizes without it, so that a part can be smaller
        than the floor (a floored part would need the memory of the whole call).
    """

    batch: tuple[int, ...] = powers_of_two_and_halves(1, 1024)
    prompt: tuple[int, ...] = powers_of_two_and_halves(16, 1 << 17)
    new_tokens: tuple[int, ...] = powers_of_two(16, 1 << 16)
    cache: tuple[int, ...] = powers_of_two_and_halves(64, 1 << 18)
    prefill: tuple[int, ...] = ()
    split: tuple[int, ...] = ()

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = tuple(int(x) for x in getattr(self, f.name))
            if f.name in ("prefill", "split") and not v:
                object.__setattr__(self, f.name, self.batch)
                continue
            if not v or any(x <= 0 for x in v) or list(v) != sorted(set(v)):
                raise ValueError(f"buckets.{f.name} must be positive, strictly increasing: {v}")
            object.__setattr__(self, f.name, v)
        for name in ("prefill", "split"):
            if getattr(self, name)[-1] < self.batch[-1]:
                raise ValueError(f"buckets.{name} ends at {getattr(self, name)[-1]} rows, below the "
                                 f"largest batch size {self.batch[-1]}")

    def for_parts(self) -> "Buckets":
        """The buckets of the parts of a budget-split call: batch and prefill rows = ``split``."""
        return dataclasses.replace(self, batch=self.split, prefill=(), split=())

    def pick(self, axis: str, n: int) -> int:
        """Smallest size of ``axis`` that is >= n. Raises ValueError when none is."""
        sizes = getattr(self, axis)
        i = bisect.bisect_left(sizes, n)
        if i == len(sizes):
            raise ValueError(f"{axis} size {n} exceeds the largest bucket {sizes[-1]}")
        return sizes[i]

    def cache_len(self, need: int, max_len: int) -> int:
        """Cache slots for ``need`` slots: the smallest cache bucket >= need, capped at max_len.

        Raises ValueError when need > max_len.
        """
        if need > max_len:
            raise ValueError(f"need {need} cache slots but the sampler's max_len is {max_len}")
        i = bisect.bisect_left(self.cache, need)
        return min(self.cache[i], max_len) if i < len(self.cache) else max_len


def chunk_and_new(buckets: Buckets, max_len: int, longest: int, max_new: int, reserve: int) -> tuple[int, int]:
    """A fresh sampler call's bucketed chunk length T >= longest and output size n_new >=
    max_new (tokens), clipped so that T + n_new + reserve <= max_len (the caller checked that
    the unbucketed sum fits). A length past the largest bucket is used as it is."""
    T = buckets.pick("prompt", longest) if longest <= buckets.prompt[-1] else longest
    n_new = buckets.pick("new_tokens", max_new) if max_new <= buckets.new_tokens[-1] else max_new
    room = max_len - reserve
    if T + n_new > room:
        n_new = max(max_new, room - T)
        T = room - n_new if T + n_new > room else T
    return T, n_new


def coarse_batches(hi: int = 1024) -> tuple[int, ...]:
    """Row sizes 8, 16, 32, 64, then the 1.5x points (96, 128, 192, 256, ...) up to >= hi."""
    return tuple(x for x in powers_of_two_and_halves(8, hi) if x >= 64 or x & (x - 1) == 0)


def batch_buckets(spec: str, backend: str, floor: int = 0) -> tuple[int, ...]:
    """Row-size buckets of a method engine's sampler (``model.batch_buckets``).

    Every distinct row count a call pads to is its own compiled program per prompt / cache
    bucket. Agent play walks through many row counts (episodes end; overlapped play samples
    whichever rows wait), so with the fine default (1, 2, 3, 4, 6, ...: 16 sizes up to 256)
    an RL run keeps building programs after warm-up -- 7-15 s each on the H200 beside busy
    environment workers (issue 17, ``benchmarks/results/rl_loop.md``). "coarse" = 8, 16, 32,
    64, 96, 128, 192, ... (``coarse_batches``; 8 sizes up to 256, the eval chunk of 140 rows
    still takes 192, not 256): a padded row never samples (exact, same tokens and logprobs:
    rows keep their keys) and on an accelerator costs ~nothing in a weight-read-bound decode,
    but on a CPU it costs its compute.

    ``floor`` (``model.batch_floor``; coarse sizes only): sizes below it are dropped and the
    floor itself becomes the smallest size, so no call pads to fewer rows (a floor at or below
    the smallest coarse size, 8, changes nothing: it never adds a smaller size). Skill1 sets it to a
    training step's episodes (tasks_per_step x group_size): as episodes end, lock-step play walks
    the row count down through 32 / 16 / 8, and each (rows, prompt bucket) pair builds late --
    replayed on campaign 15's logs, 12 -> 4 programs built after RL step 0 in the full arm and
    11 -> 1 in the GRPO arm (``benchmarks/build_keys.py``, ``benchmarks/results/build_keys.jsonl``).
    A fine or explicit list ignores it (on a CPU a padded row costs its compute).

    Args:
      spec: "auto" (coarse on gpu/tpu, fine on cpu) | "coarse" | "fine" (``Buckets``' default) |
        a comma list of row sizes ("8,32,128,256").
      backend: ``jax.default_backend()`` ("cpu", "gpu", "tpu").
      floor: fewest rows a coarse call pads to (0 = off); must be <= the largest coarse size.
    Returns: sorted row sizes. Raises ValueError on an unknown word, a bad list or a bad floor.
    """
    spec = str(spec).strip().lower()
    if spec == "auto":
        spec = "fine" if backend == "cpu" else "coarse"
    if spec == "fine":
        return Buckets().batch
    if spec == "coarse":
        sizes = coarse_batches()
        floor = int(floor)
        if floor < 0 or floor > sizes[-1]:
            raise ValueError(f"model.batch_floor={floor} must be in 0..{sizes[-1]} (the largest coarse row "
                             "size; Skill1's default is tasks_per_step x group_size: set "
                             "model.batch_floor=0 for a larger step)")
        return tuple(sorted({floor} | {x for x in sizes if x > floor})) if floor > sizes[0] else sizes
    return _positive_sizes(spec, "model.batch_buckets", "'auto', 'coarse', 'fine' or a comma list of row sizes")


def prefill_buckets(spec: str, backend: str, batch_floor: int = 0, prefill_floor: int = 0) -> tuple[int, ...]:
    """Row sizes of a shared prefill (``Buckets.prefill``: a call's distinct prompts).

    With coarse rows and both floors set (Skill1: ``model.batch_floor`` = tasks_per_step x G,
    ``model.prefill_floor`` = tasks_per_step): ``{prefill_floor}`` plus the floored batch sizes,
    so the G samples of each of a step's prompts prefill them once (issue 17 item 4) while any
    other count of distinct prompts pads to the batch and is not shared. Without that gap, play
    whose rollouts happen to repeat one another's prompts (16 distinct of 32: an untrained policy
    repeats its actions) builds a (32 rows, 16 prefill rows, chunk) program per chunk late:
    both late builds of the H100 run in ``benchmarks/results/rl_loop.md`` (2026-12-07) were such.
    Otherwise: the batch sizes without a floor (the shared prefill as before).

    Args: as :func:`batch_buckets`; prefill_floor >= 0 rows (0 = no gap).
    Returns: sorted row sizes. Raises ValueError as :func:`batch_buckets`.
    """
    if int(prefill_floor) < 0:
        raise ValueError(f"model.prefill_floor={prefill_floor} must be >= 0")
    plain, batch = batch_buckets(spec, backend), batch_buckets(spec, backend, batch_floor)
    if batch == plain or int(prefill_floor) == 0:   # fine / listed sizes, or no floor: nothing to keep
        return plain
    if int(prefill_floor) > batch[-1]:
        raise ValueError(f"model.prefill_floor={prefill_floor} exceeds the largest row size {batch[-1]}")
    return tuple(sorted({int(prefill_floor), *batch}))


def model_buckets(model_cfg, backend: str) -> Buckets:
    """The sampler Buckets of a ``config.model`` section (a ConfigDict, or a run's config.json
    dict): ``batch_buckets`` / ``batch_floor`` / ``prefill_floor`` / ``prompt_buckets``, absent
    keys at the values runs had before them ("auto", 0, 0, "fine"); ``split`` = the row sizes
    without the floor (``Buckets``). Raises ValueError as the functions it calls."""
    spec, floor = model_cfg.get("batch_buckets", "auto"), int(model_cfg.get("batch_floor", 0))
    return Buckets(batch=batch_buckets(spec, backend, floor),
                   prompt=prompt_buckets(model_cfg.get("prompt_buckets", "fine")),
                   prefill=prefill_buckets(spec, backend, floor, int(model_cfg.get("prefill_floor", 0))),
                   split=batch_buckets(spec, backend))


def _positive_sizes(spec: str, key: str, expected: str) -> tuple[int, ...]:
    """Sorted distinct positive ints of a comma list; ValueError naming ``key`` otherwise."""
    try:
        sizes = tuple(sorted({int(x) for x in spec.split(",") if x.strip()}))
    except ValueError:
        raise ValueError(f"{key}={spec!r}: {expected}") from None
    if not sizes or sizes[0] <= 0:
        raise ValueError(f"{key}={spec!r}: sizes must be positive")
    return sizes


def prompt_buckets(spec: str) -> tuple[int, ...]:
    """Prefill-chunk (prompt length) buckets of a method engine's sampler (``model.prompt_buckets``).

    Every distinct chunk length is its own compiled program per row / cache bucket, and the
    cache bucket follows from chunk + new tokens. An agent's prompt grows with its history, so
    a run walks through the chunk sizes one by one and builds each late: campaign 15's
    Qwen 0.5B arms built 11-12 programs after RL step 0, 86-98 s each arm
    (``benchmarks/results/learning/campaign_2026-12-04b``; ``benchmarks/build_keys.py``
    replays such a log under other buckets). "coarse" = powers of two from 16 (half the
    sizes: a prompt pads up to 2x instead of 1.5x -- prefill compute and cache slots, cheap
    for a small policy on an accelerator, not for an 8B one near the memory limit).

    Args:
      spec: "fine" (``Buckets``' default: 16, 24, 32, 48, ...) | "coarse" | a comma list of
        lengths ("512,1024,2048"; a prompt longer than the largest uses its own length).
    Returns: sorted lengths. Raises ValueError on an unknown word or a bad list.
    """
    spec = str(spec).strip().lower()
    if spec == "fine":
        return Buckets().prompt
    if spec == "coarse":
        return powers_of_two(16, 1 << 17)
    return _positive_sizes(spec, "model.prompt_buckets", "'fine', 'coarse' or a comma list of lengths")
