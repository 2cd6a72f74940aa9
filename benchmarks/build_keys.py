"""Replay a run's sampler builds under other shape buckets: how many programs would it build?

    python benchmarks/build_keys.py RUN_DIR [RUN_DIR ...] [--policy BATCH/PROMPT ...]
        [--backend gpu] [--out benchmarks/results/build_keys.jsonl]

Every sampler call whose shape key (rows, prefill rows, chunk, new tokens, cache slots, fresh,
shared) is new builds a program (``engine.sampler.Sampler.builds``), and a method engine logs each
build with its RL step to ``<run>/sampler_builds.jsonl`` (``methods.common.build_log``). Campaign
15's Qwen 0.5B arms built 11-12 programs after RL step 0 (86-98 s an arm), while the run was
already timed. This maps each logged build to the key it would have had under another
``model.batch_buckets`` / ``model.prompt_buckets`` and counts the distinct keys: programs in all,
programs first built after step 0, and the logged seconds of the builds whose new key an earlier
call already built (those calls would not build; the figure includes their first run, so it is an
upper bound of the time saved).

Exact when the policy's sizes are a subset of the run's (coarsening): a call of n rows padded to
the run's bucket b_run(n) pads to b_new(b_run(n)) = b_new(n), the same for prompt lengths and for
the distinct prompts of a shared prefill. Every call of the run has one of the logged keys (a
call that built nothing reused one), so the distinct keys of the mapped log are all the keys the
run would compile. A policy that is not a subset is refused. The new-token and cache buckets are
the run's; the chunk is clipped to ``model.max_len`` like the sampler does (``chunk_and_new``).

Each policy is "BATCH/PROMPT" with ``model.batch_buckets`` and ``model.prompt_buckets`` specs
("run" keeps the run's own: "run/coarse" changes the prompt buckets alone). Writes one JSON line
per (run, policy) with the command.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from skillax.engine.buckets import Buckets, batch_buckets, chunk_and_new, model_buckets, prompt_buckets  # noqa: E402

DEFAULT_POLICIES = ("run/run", "run/coarse", "32,64,96,128,192,256,384,512,768,1024/run",
                    "32,64,96,128,192,256,384,512,768,1024/coarse")


def run_buckets(config: dict, backend: str) -> tuple[Buckets, int]:
    """(the run's Buckets, its model.max_len) from its config.json dict (keys absent in older
    runs take the values those runs had: batch "auto", no row floors, prompt "fine")."""
    m = config.get("model", {})
    b = model_buckets(m, backend)
    return b, int(m.get("max_len", 2048))


def policy_buckets(policy: str, run: Buckets, backend: str) -> Buckets:
    """The Buckets of ``"BATCH/PROMPT"`` ("run" keeps the run's axis). Raises ValueError on a bad
    spec or on sizes that are not a subset of the run's (the replay would not be exact)."""
    try:
        bs, ps = policy.split("/")
    except ValueError:
        raise ValueError(f"policy {policy!r}: 'BATCH/PROMPT', e.g. 'run/coarse' or '32,64/run'") from None
    batch = run.batch if bs.strip() == "run" else batch_buckets(bs, backend)
    prompt = run.prompt if ps.strip() == "run" else prompt_buckets(ps)
    for axis, new, old in (("batch", batch, run.batch), ("prompt", prompt, run.prompt)):
        extra = sorted(set(new) - set(old))
        if extra:
            raise ValueError(f"policy {policy!r}: {axis} sizes {extra[:5]} are not among the run's, "
                             f"so the replay is not exact")
    prefill = run.prefill if bs.strip() == "run" else batch   # a listed policy pads prefill rows too
    return Buckets(batch=batch, prompt=prompt, new_tokens=run.new_tokens, cache=run.cache, prefill=prefill)


def new_key(build: dict, b: Buckets, max_len: int) -> tuple:
    """The shape key of one logged build under buckets ``b`` (see the module docstring)."""
    B = b.pick("batch", int(build["batch"]))
    T, n_new = chunk_and_new(b, max_len, int(build["chunk"]), int(build["new_bucket"]), 0)
    S = b.cache_len(T + n_new, max_len)
    shared = bool(build["shared"])
    if shared:
        Bp = b.pick("prefill", int(build["prefill_rows"]))
        shared = Bp < B
    return (B, Bp if shared else B, T, n_new, S, bool(build["fresh"]), shared)


def replay(builds: list[dict], b: Buckets, max_len: int) -> dict:
    """{programs, at_step0, after_step0, logged_s, saved_s_upper} of the builds in log order."""
    seen: set = set()
    after = at0 = 0
    saved = 0.0
    for r in builds:
        k = new_key(r, b, max_len)
        if k in seen:
            saved += float(r.get("seconds", 0.0))
            continue
        seen.add(k)
        if int(r["step"]) > 0:
            after += 1
        else:
            at0 += 1
    return dict(programs=len(seen), at_step0=at0, after_step0=after,
                logged_s=round(sum(float(r.get("seconds", 0.0)) for r in builds), 1),
                saved_s_upper=round(saved, 1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=pathlib.Path)
    ap.add_argument("--policy", action="append", help=f"BATCH/PROMPT (default: {', '.join(DEFAULT_POLICIES)})")
    ap.add_argument("--backend", default="gpu", help="the backend the runs ran on ('auto' batch buckets)")
    ap.add_argument("--out", type=pathlib.Path)
    a = ap.parse_args(argv)
    command = "python benchmarks/build_keys.py " + " ".join(sys.argv[1:] if argv is None else argv)
    rows = []
    for run in a.runs:
        log = run / "sampler_builds.jsonl"
        if not log.exists():
            raise SystemExit(f"{log}: no sampler build log")
        builds = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        cfg = json.loads((run / "config.json").read_text()) if (run / "config.json").exists() else {}
        base, max_len = run_buckets(cfg, a.backend)
        for pol in a.policy or DEFAULT_POLICIES:
            rows.append(dict(run=str(run), policy=pol, builds_logged=len(builds),
                             **replay(builds, policy_buckets(pol, base, a.backend), max_len), command=command))
    print("| run | policy | programs | at step 0 | after step 0 | logged s | saved s (upper) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['run']} | {r['policy']} | {r['programs']} | {r['at_step0']} | {r['after_step0']} | "
              f"{r['logged_s']} | {r['saved_s_upper']} |")
    if a.out:
        with open(a.out, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
