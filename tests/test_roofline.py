"""benchmarks/roofline.py: FLOP and byte counts by hand on the tiny shape, the call limit's
phases, and the Qwen3-8B x 256 figure its docstring and the issue-17 note quote."""

import dataclasses
import json
import subprocess
import sys

import pytest

from benchmarks.roofline import (call_limit, decode_roofline_tokens_per_s, decode_step_bytes,
                                 decode_step_flops, layer_matmul_params, prefill_flops, rescore)
from benchmarks.sampling import model_config

TINY = model_config("tiny")   # V 4096, D 128, F 384, L 4, H 4, KV 2, Dh 32


def test_flops_and_bytes_by_hand():
    # D H Dh + 2 D KV Dh + H Dh D + 3 D F = 16384 + 16384 + 16384 + 147456
    assert layer_matmul_params(TINY) == 196_608
    # per row: linear 2*8*4*196608 = 12,582,912; attention 2*4*4*32*8*9 = 73,728; head 2*128*4096
    assert prefill_flops(TINY, 2, 8) == 2 * (12_582_912 + 73_728 + 1_048_576)
    # 2*4*196608 + 4*4*4*32*10 + 2*128*4096
    assert decode_step_flops(TINY, 1, 10) == 1_572_864 + 20_480 + 1_048_576
    # KV of 3 rows x 10 tokens: 2 * L * rows * ctx * KV * Dh * itemsize
    assert decode_step_bytes(TINY, 3, 10, 2) - TINY.num_params() * 2 == 2 * 4 * 3 * 10 * 2 * 32 * 2
    # an untied input embedding is gathered, not read whole: V x D x itemsize less
    untied = dataclasses.replace(TINY, tie_word_embeddings=False)
    assert untied.num_params() - TINY.num_params() == 4096 * 128
    assert decode_step_bytes(untied, 3, 10, 2) == decode_step_bytes(TINY, 3, 10, 2)


def test_call_limit_adds_a_compute_bound_prefill_to_a_bandwidth_bound_decode():
    lim = call_limit(TINY, 4, 64, 16, 2, bandwidth=1e11, matmul_flops=1e13)
    assert lim["prefill_s"] == pytest.approx(prefill_flops(TINY, 4, 64) / 1e13)
    assert lim["prefill_bound"] == "compute"
    step = decode_step_bytes(TINY, 4, 64 + 8, 2) / 1e11
    # 16 new tokens = the prefill's token + 15 decode forwards
    assert lim["decode_s"] == pytest.approx(15 * step) and lim["decode_bound"] == "bandwidth"
    assert lim["tokens_per_s"] == pytest.approx(4 * 16 / (lim["prefill_s"] + lim["decode_s"]))
    # one prefill per group: a quarter of the rows prefilled, a quarter of the prefill time
    full = call_limit(TINY, 4, 64, 16, 2, bandwidth=1e12, matmul_flops=1e13)
    shared = call_limit(TINY, 4, 64, 16, 2, bandwidth=1e12, matmul_flops=1e13, prefill_rows=1)
    assert shared["prefill_s"] == pytest.approx(full["prefill_s"] / 4)
    assert shared["decode_s"] == full["decode_s"]
    # a slow bandwidth makes prefill's single weight read the bound
    slow = call_limit(TINY, 1, 1, 1, 2, bandwidth=1.0, matmul_flops=1e15)
    assert slow["prefill_bound"] == "bandwidth" and slow["prefill_s"] == TINY.num_params() * 2
    with pytest.raises(ValueError, match="batch"):
        call_limit(TINY, 0, 8, 8, 2)


def test_qwen3_8b_rl_shape_cannot_reach_half_the_decode_roofline():
    """Issue 17's shape: at the measured H200 ceilings the whole call's limit is ~43 % of the
    decode-only roofline, so ">= 50 % of that roofline" with prefill timed is unreachable."""
    cfg = model_config("qwen3-8b")
    lim = call_limit(cfg, 256, 1024, 256, 2)
    decode_only, _ = decode_roofline_tokens_per_s(cfg, 256, 1024, 256, 2, 4.3e12)
    assert lim["prefill_s"] == pytest.approx(4.71, abs=0.01)
    assert lim["decode_s"] == pytest.approx(3.48, abs=0.01)
    assert lim["tokens_per_s"] / decode_only == pytest.approx(0.426, abs=0.001)
    # even at the datasheet's 989 TFLOP/s it stays below half
    assert call_limit(cfg, 256, 1024, 256, 2, matmul_flops=9.89e14)["tokens_per_s"] / decode_only < 0.5


def test_rescore_keeps_the_source_line_numbers():
    row = {"name": "sampling", "ours": 100.0, "bandwidth": 4.3e12, "shape": {"model": "tiny", "batch": 2,
           "prompt_len": 16, "new_tokens": 8, "dtype": "float32", "mesh": "none"}}
    other = {"name": "sampling_multiturn", "ours": 1.0, "shape": {}}
    out = rescore([(3, other), (7, row)], model_config)
    assert [x["line"] for x in out] == [7]
    assert out[0]["call_limit"] == pytest.approx(call_limit(TINY, 2, 16, 8, 4)["tokens_per_s"], rel=1e-4)


def test_sampling_benchmark_reports_call_limit_and_decode_split(tmp_path):
    out = tmp_path / "s.jsonl"
    subprocess.run([sys.executable, "benchmarks/sampling.py", "--model", "tiny", "--batch", "2",
                    "--prompt-len", "16", "--new-tokens", "8", "--reference", "none", "--repeats", "1",
                    "--dtype", "float32", "--out", str(out)], check=True, capture_output=True, text=True)
    row = json.loads(out.read_text().splitlines()[0])
    lim = call_limit(TINY, 2, 16, 8, 4)
    assert row["call_limit"] == pytest.approx(lim["tokens_per_s"], rel=1e-4)
    assert row["fraction_of_call_limit"] == pytest.approx(row["ours"] / row["call_limit"], abs=1e-5)
    # on a CPU the timed difference may come out non-positive: then the line says why
    assert "split_prefill" in row or (row["prefill_seconds"] > 0 and row["decode_tokens_per_s"] > 0
                                      and "decode_fraction_of_limit" in row)
    assert "shapes differ" not in row.get("split_prefill", "")
