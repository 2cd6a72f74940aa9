"""The shortest time of one sampling call: prefill at the matmul rate, decode at the bandwidth.

A call of B rows x P prompt tokens -> N new tokens runs two phases one after the other:

* **prefill**: B x P tokens through every layer. At RL shapes (hundreds of rows x ~1k
  tokens) it does ~2 x params FLOPs per token and reads the weights once per piece, so it is
  bound by the matmul rate: ``prefill_s >= max(prefill_flops / matmul_rate, weight_bytes /
  bandwidth)``.
* **decode**: N - 1 forward steps (the first new token is sampled from the prefill's
  logits), each reads every weight it multiplies and the KV cache of the context so far once
  (bound by the bandwidth) and does ~2 x params FLOPs per row:
  ``decode_step_s >= max(step_bytes / bandwidth, step_flops / matmul_rate)``, taken at the
  average context P + N / 2 (both grow linearly over the steps, so the sum over steps is at
  least N - 1 times the average step's bound). An untied input embedding is not read whole
  (a step gathers B rows of it); the LM head is.

``call_limit`` adds the two. The decode-only HBM roofline that ``benchmarks/sampling.py``
reported alone before 2026-12-05 (``limit``: B x bandwidth / step_bytes) leaves prefill
out, so a long-prompt call could never reach it: Qwen3-8B x 256 x (1,024 -> 256) at the
measured 4.3 TB/s and 790 TFLOP/s needs >= 4.7 s of prefill + 3.5 s of decode = 8.2 s, at
most 8.0k tokens/s against that roofline's 18.8k (43 %; 48 % at the datasheet's 989 TFLOP/s).

Ceilings (defaults of the benchmarks' ``--bandwidth`` / ``--matmul-flops``): the H200's
device-to-device copy rate and its bf16 8192^3 matrix product on random data as measured on
these machines (``/work/.library/device/KINDS.md``: 4.3 TB/s, 769-798 TFLOP/s; 894 on
zeros), not the datasheet's 4.8 TB/s and 989 TFLOP/s. So this is a practical bound at the
rates this machine shows, not a hard physical one.

FLOP counts (a multiply-add = 2 FLOPs): per token, 2 x the matmul weights of every layer
(q, k, v, o, gate, up, down; norms and the embedding lookup are not matmuls); attention
2 x H x Dh per (query, key) pair for scores and 2 x H x Dh for the weighted sum, causal in
prefill (P (P + 1) / 2 pairs per row); the LM head 2 x D x V once per row in prefill (the
sampler takes the last position's logits only) and per row per decode step.
"""

from __future__ import annotations

from skillax.models.config import ModelConfig

#: measured ceilings of one H200 here (KINDS.md, 2026-10-28 and 2026-11-04)
H200_BANDWIDTH = 4.3e12       # bytes/s, device-to-device copy (read + write)
H200_MATMUL_FLOPS = 7.9e14    # FLOP/s, bf16 8192^3 matmul on random data


def layer_matmul_params(cfg: ModelConfig) -> int:
    """Weights one token multiplies in one decoder layer (q, k, v, o projections and the
    gate / up / down MLP): D H Dh + 2 D KV Dh + H Dh D + 3 D F. Biases and norms excluded."""
    D, F, H, KV, Dh = cfg.hidden_size, cfg.intermediate_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    return D * H * Dh + 2 * D * KV * Dh + H * Dh * D + 3 * D * F


def prefill_flops(cfg: ModelConfig, rows: int, prompt: int) -> float:
    """FLOPs to prefill ``rows`` prompts of ``prompt`` tokens each (module docstring):
    rows x [2 P L matmul_params + 2 L H Dh P (P + 1) + 2 D V]."""
    L, H, Dh = cfg.num_layers, cfg.num_heads, cfg.head_dim
    linear = 2 * prompt * L * layer_matmul_params(cfg)
    attention = 2 * L * H * Dh * prompt * (prompt + 1)      # scores + weighted sum, causal
    head = 2 * cfg.hidden_size * cfg.vocab_size             # last position only
    return float(rows) * (linear + attention + head)


def decode_step_flops(cfg: ModelConfig, rows: int, context: float) -> float:
    """FLOPs of one decode step of ``rows`` rows attending to ``context`` cached tokens:
    rows x [2 L matmul_params + 4 L H Dh context + 2 D V]."""
    L, H, Dh = cfg.num_layers, cfg.num_heads, cfg.head_dim
    return float(rows) * (2 * L * layer_matmul_params(cfg) + 4 * L * H * Dh * context
                          + 2 * cfg.hidden_size * cfg.vocab_size)


def read_weight_bytes(cfg: ModelConfig, itemsize: int) -> float:
    """Weight bytes a forward pass reads whole: every parameter except an untied input
    embedding (V x D), of which it gathers only the rows of its tokens."""
    untied = 0 if cfg.tie_word_embeddings else cfg.vocab_size * cfg.hidden_size
    return float((cfg.num_params() - untied) * itemsize)


def decode_step_bytes(cfg: ModelConfig, rows: int, context: float, itemsize: int) -> float:
    """Bytes one decode step must read: the weights (:func:`read_weight_bytes`) once plus
    the K and V of ``context`` tokens for each row (2 L KV Dh itemsize per token)."""
    kv = 2 * cfg.num_layers * rows * context * cfg.num_kv_heads * cfg.head_dim * itemsize
    return read_weight_bytes(cfg, itemsize) + kv


def decode_roofline_tokens_per_s(cfg: ModelConfig, batch: int, prompt: int, new: int, itemsize: int,
                                 bandwidth: float) -> tuple[float, float]:
    """(tokens/s, bytes per step) of decode alone at the bandwidth, at the average context
    prompt + new / 2: batch x bandwidth / step_bytes. Leaves prefill out (module docstring).
    Lines of ``sampling.jsonl`` before 2026-12-05 counted the whole untied input embedding in
    step_bytes (Qwen3-8B: +1.24 GB of 59.9, so their ``limit`` is ~2 % lower)."""
    step = decode_step_bytes(cfg, batch, prompt + new / 2, itemsize)
    return batch * bandwidth / step, step


def call_limit(cfg: ModelConfig, batch: int, prompt: int, new: int, itemsize: int, *,
               bandwidth: float = H200_BANDWIDTH, matmul_flops: float = H200_MATMUL_FLOPS,
               prefill_rows: int | None = None) -> dict:
    """Shortest time of one call of ``batch`` rows x ``prompt`` tokens -> ``new`` tokens.

    Args:
      prefill_rows: rows that are prefilled (default ``batch``; ``batch / G`` when the G
        samples of a prompt share one prefill).
    Returns:
      dict(prefill_s, decode_s, seconds, tokens_per_s = batch x new / seconds,
      prefill_bound / decode_bound: "compute" or "bandwidth").
    Raises:
      ValueError: a non-positive batch, new or ceiling, or a negative prompt.
    """
    if batch <= 0 or new <= 0 or prompt < 0 or bandwidth <= 0 or matmul_flops <= 0:
        raise ValueError(f"call_limit needs batch, new, bandwidth, matmul_flops > 0 and prompt >= 0; "
                         f"got batch={batch} prompt={prompt} new={new} bandwidth={bandwidth} "
                         f"matmul_flops={matmul_flops}")
    rows = batch if prefill_rows is None else prefill_rows
    weights = read_weight_bytes(cfg, itemsize)
    pf_compute = prefill_flops(cfg, rows, prompt) / matmul_flops
    pf_bytes = weights / bandwidth
    context = prompt + new / 2
    st_bytes = decode_step_bytes(cfg, batch, context, itemsize) / bandwidth
    st_compute = decode_step_flops(cfg, batch, context) / matmul_flops
    prefill_s = max(pf_compute, pf_bytes)
    decode_s = (new - 1) * max(st_bytes, st_compute)
    seconds = prefill_s + decode_s
    return dict(prefill_s=prefill_s, decode_s=decode_s, seconds=seconds, tokens_per_s=batch * new / seconds,
                prefill_bound="compute" if pf_compute >= pf_bytes else "bandwidth",
                decode_bound="bandwidth" if st_bytes >= st_compute else "compute")


def rescore(rows: list[tuple[int, dict]], model_config) -> list[dict]:
    """Re-read measured ``sampling`` lines, given as (line number in their file, row),
    against ``call_limit`` (same bandwidth; the measured matmul rate). Lines without a model
    shape ``model_config`` knows, with a mesh, or with multi-turn names are skipped. Returns
    one dict per scored line."""
    out = []
    for i, r in rows:
        sh = r.get("shape", {})
        if r.get("name") != "sampling" or sh.get("mesh", "none") != "none" or not r.get("ours"):
            continue
        try:
            cfg = model_config(sh["model"])
        except Exception:  # noqa: BLE001 - an HF folder absent here: skip that line
            continue
        item = 2 if sh.get("dtype") == "bfloat16" else 4
        lim = call_limit(cfg, sh["batch"], sh["prompt_len"], sh["new_tokens"], item,
                         bandwidth=r.get("bandwidth") or H200_BANDWIDTH)
        out.append(dict(line=i, date=r.get("date"), device=r.get("device"), shape=sh, ours=r["ours"],
                        decode_only_limit=r.get("limit"), fraction_of_decode_only_limit=r.get("fraction_of_limit"),
                        call_limit=round(lim["tokens_per_s"], 2),
                        fraction_of_call_limit=round(r["ours"] / lim["tokens_per_s"], 4),
                        limit_prefill_s=round(lim["prefill_s"], 4), limit_decode_s=round(lim["decode_s"], 4)))
    return out


def main(argv=None) -> None:
    """``python benchmarks/roofline.py [--from sampling.jsonl] [--out file]``: rescore the
    measured H200 lines (``rescore``) and print / append them as JSON lines."""
    import argparse
    import datetime
    import json
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks.sampling import model_config

    ap = argparse.ArgumentParser(description=main.__doc__)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    ap.add_argument("--from", dest="src", default=os.path.join(here, "sampling.jsonl"))
    ap.add_argument("--out", default="", help="append the rows here (default: print only)")
    args = ap.parse_args(argv)
    with open(args.src) as f:
        rows = [(i + 1, json.loads(x)) for i, x in enumerate(f) if x.strip()]
    rows = [(i, r) for i, r in rows if "H200" in str(r.get("device", ""))]
    stamp = dict(name="sampling_call_limit", source=os.path.relpath(args.src),
                 command="python " + " ".join(["benchmarks/roofline.py", *(argv if argv is not None else sys.argv[1:])]),
                 rescored=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    scored = [dict(stamp, **x) for x in rescore(rows, model_config)]
    for x in scored:
        print(json.dumps(x))
    if args.out:
        with open(args.out, "a") as f:
            f.writelines(json.dumps(x) + "\n" for x in scored)


if __name__ == "__main__":
    main()
