"""``mode=serve`` under lock-step play: C clients x R rounds x N concurrent chat requests (issue 20/17).

    HF_HUB_OFFLINE=1 python benchmarks/serve_play.py [--model tiny|smollm2|qwen2.5-coder-0.5b]
        [--clients 1] [--requests 140] [--rounds 4] [--max-tokens 128] [--temperature 0.4]
        [--max-len 4096] [--max-batch-rows 256] [--finish 0.25] [--label before] [--server-arg=--config.serve.X=Y ...]
        [--reference|--no-reference]

The load of SkillOS's served executor in campaign 3 (issue 18): each client is one
``OpenAICompatWorker`` (``max_concurrency`` 160) whose ``chat`` batch is one lock-step turn of
N ALFWorld episodes -- N requests at once, ``stop=["</action>"]``, temperature 0.4,
``max_tokens`` 128 -- and the next round starts when the whole batch is answered. Prompts are
the SkillOS play prompts (``agent_loop.build_play_prompt`` with the campaign's
``skillos_alfworld_learning`` play config: 3 hand-written skills, 40 admissible actions, 2
history steps; goals and receptacles of the real ALFWorld games in ``../shared/data``), about
1,500 tokens with Qwen's tokenizer, growing by round as the history fills.

The server is a subprocess started with the campaign's exact command (``python -m skillax.main
--config configs/serve.py --config.model.max_len=4096 --config.serve.max_batch_rows=256
--config.serve.default_max_tokens=128 ...`` plus ``--server-arg`` overrides), so clients and
server do not share a GIL. Per round, from the deltas of ``GET /health``'s counters:
sampler calls, rows per call, seconds per call split into compile / device (prefill + decode,
compile excluded) / sampler host (pack, unpack, detokenise, stop-string cuts), compile count;
server host per request (parse = validate + chat template + tokenise; respond = detokenise +
body); requests/s and completion tokens/s of the round; sampler idle time in the round (HTTP,
client, batching window). ``--reference``: the same last-round prompts of one client as ONE
in-process ``Sampler.generate`` call (warm), and the same call with one new token (the prefill
figure; decode = the rest). ``--model tiny`` is the random 2-layer Qwen2 of
``tests/models/hf_fixtures.save_tiny_chat_model`` (loop mechanics; its answers run to
``max_tokens`` unless a stop string hits). Appends one JSON line per run to
``benchmarks/results/serve_play.jsonl``.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
# the server subprocess gets the caller's environment; this (client) process must not grab the
# accelerator's memory if anything here initialises a jax backend before the server is done
SERVER_ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, str(ROOT))

from benchmarks.common import record  # noqa: E402

SKILLS = ROOT / "benchmarks" / "learning" / "handwritten_skills"
_RECEP = re.compile(r"(\w+?)_bar_\S*\s+-\s+receptacle")
_OBJ = re.compile(r"^\s*([A-Za-z]+)\s+-\s+object", re.M)


def _games(n: int) -> list[dict]:
    from skillax.agents.envs.alfworld import default_data_dir

    out = []
    with gzip.open(pathlib.Path(default_data_dir() or ROOT.parent / "shared/data/alfworld") / "games.jsonl.gz", "rt") as f:
        for line in f:
            g = json.loads(line)
            if g["split"] in ("valid_unseen", "valid_seen"):
                out.append(g)
            if len(out) >= n:
                break
    return out


def play_prompts(n: int, rounds: int, seed: int = 0) -> list[list[list[dict]]]:
    """``[round][episode]`` chat messages of lock-step play over ``n`` real ALFWorld games
    (episode i plays game i mod the pack): the SkillOS play prompt of the campaign's config."""
    from skillax._configs.skillos_alfworld_learning import get_config
    from skillax.agents.agent_loop import build_play_prompt
    from skillax.methods.skillos.train import play_config

    pc = play_config(get_config())
    texts = [(d / "SKILL.md").read_text() for d in sorted(SKILLS.iterdir()) if (d / "SKILL.md").is_file()]
    # a curated skill fills the 800-character cap (max_skill_chars): one hand-written skill
    # with the steps of the next appended as notes
    skills = [a + "\nNotes:\n" + b.split("---")[-1] for a, b in zip(texts, texts[1:] + texts[:1])]
    games = _games(min(n, 274))
    rng = random.Random(seed)
    out: list[list[list[dict]]] = [[] for _ in range(rounds)]
    for i in range(n):
        g = games[i % len(games)]
        counts: dict[str, int] = {}
        receps = []
        for name in _RECEP.findall(g["pddl_problem"]):
            k = name.lower()
            counts[k] = counts.get(k, 0) + 1
            receps.append(f"{k} {counts[k]}")
        objs = sorted({o.lower() for o in _OBJ.findall(g["pddl_problem"])})
        obs = (f"-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, "
               f"you see a {', a '.join(receps)}.\n\nYour task is to: {g['goal']}.")
        hist: list[tuple[str, str]] = []
        where, here = "", []
        sk = rng.sample(skills, k=min(3, len(skills)))
        for r in range(rounds):
            adm = ([f"take {o} from {where}" for o in here] if r else []) + [f"go to {x}" for x in receps] + [
                "inventory", "look"] + [f"examine {x}" for x in receps]
            out[r].append(build_play_prompt(g["goal"], obs, hist, adm, skills=sk, step=r, cfg=pc))
            where = rng.choice(receps) if receps else "desk 1"
            act = f"go to {where}"
            hist.append((obs, act))
            here = [f"{o} {rng.randint(1, 3)}" for o in (rng.sample(objs, k=min(len(objs), rng.randint(2, 8))) if objs else [])]
            obs = f"You arrive at {where}. On the {where}, you see a " + ", a ".join(here) + "."
    return out


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())


def start_server(model: str, args) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "skillax.main", "--config", "configs/serve.py", f"--config.model.path={model}",
           f"--config.model.max_len={args.max_len}", f"--config.serve.max_batch_rows={args.max_batch_rows}",
           f"--config.serve.default_max_tokens={args.max_tokens}", "--config.serve.port=0",
           "--config.serve.model_name=reader", "--config.serve.max_queue=2048",
           f"--config.model.dtype={args.dtype}", *args.server_arg]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=SERVER_ENV)
    for line in proc.stdout:
        if line.startswith("{") and '"url"' in line:
            url = json.loads(line)["url"]
            threading.Thread(target=lambda: [sys.stderr.write("server: " + x) for x in proc.stdout],
                             daemon=True).start()
            return proc, url
        sys.stderr.write("server: " + line)
    raise RuntimeError(f"server exited with {proc.wait()} before listening: {' '.join(cmd)}")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--requests", type=int, default=140)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=0.4)
    ap.add_argument("--max-len", type=int, default=4096)
    ap.add_argument("--max-batch-rows", type=int, default=256)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--finish", type=float, default=0.0,
                    help="share of the live episodes that end after each round (round r sends "
                         "ceil(N (1 - finish)^r) requests: the row count falls as in real play)")
    ap.add_argument("--label", default="")
    ap.add_argument("--server-arg", action="append", default=[])
    ap.add_argument("--reference", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args(argv)

    from skillax.agents.workers.openai_compat import OpenAICompatWorker

    tmp = tempfile.TemporaryDirectory()
    model = args.model
    if model == "tiny":
        from tests.models.hf_fixtures import save_tiny_chat_model
        model = str(save_tiny_chat_model(pathlib.Path(tmp.name) / "tiny-qwen2"))
    import math

    live = [max(1, math.ceil(args.requests * (1.0 - args.finish) ** r - 1e-9)) for r in range(args.rounds)]
    convs = [[rnd[:n] for rnd, n in zip(play_prompts(args.requests, args.rounds, seed=c), live)]
             for c in range(args.clients)]
    t0 = time.perf_counter()
    proc, url = start_server(model, args)
    load_s = time.perf_counter() - t0
    health = url.rsplit("/v1", 1)[0] + "/health"
    rounds: list[dict] = []
    lock = threading.Lock()

    def client(c: int):
        w = OpenAICompatWorker(model="reader", base_url=url, max_concurrency=160, timeout_s=1800, max_retries=0)
        for r in range(args.rounds):
            t = time.perf_counter()
            comps = w.chat(convs[c][r], temperature=args.temperature, max_tokens=args.max_tokens, stop=["</action>"])
            with lock:
                rounds.append(dict(client=c, round=r, wall_s=time.perf_counter() - t, t_end=time.perf_counter(),
                                   errors=sum(not x.ok for x in comps),
                                   completion_tokens=sum(x.completion_tokens for x in comps),
                                   prompt_tokens=sum(x.prompt_tokens for x in comps), requests=len(comps)))
        w.close()

    snaps = [(time.perf_counter(), _get(health)["stats"])]
    stop_poll = threading.Event()

    def poll():  # counters every 0.5 s: per-round deltas are read off the nearest snapshot
        while not stop_poll.wait(0.5):
            snaps.append((time.perf_counter(), _get(health)["stats"]))

    threading.Thread(target=poll, daemon=True).start()
    t_start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t_start
    stop_poll.set()
    final = _get(health)["stats"]
    snaps.append((time.perf_counter(), final))
    proc.terminate()
    proc.wait(30)

    def split(a: dict, b: dict, wall_s: float, reqs: int, toks: int) -> dict:
        d = {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b)}
        calls = max(1, d.get("calls", 0))
        sampler_s = d.get("seconds_x1000", 0) / 1000
        dev_s = d.get("device_ms", 0) / 1000
        comp_s = d.get("compile_ms", 0) / 1000
        ans = max(1, d.get("answered", 0))
        return dict(calls=d.get("calls", 0), rows=d.get("rows", 0), rows_per_call=d.get("rows", 0) / calls,
                    s_per_call=sampler_s / calls, compile_s_per_call=comp_s / calls,
                    device_s_per_call=max(0.0, dev_s - comp_s) / calls,
                    sampler_host_s_per_call=max(0.0, sampler_s - dev_s) / calls,
                    compiles=d.get("compiles", 0), decode_steps_per_call=d.get("decode_steps", 0) / calls,
                    parse_ms_per_request=d.get("parse_ms", 0) / ans, respond_ms_per_request=d.get("respond_ms", 0) / ans,
                    queue_s_per_request=d.get("queue_ms", 0) / 1000 / max(1, d.get("rows", 0)),
                    sampler_idle_s=max(0.0, wall_s - sampler_s), wall_s=wall_s,
                    requests_per_s=reqs / wall_s, completion_tokens_per_s=toks / wall_s)

    # first round (compiles) vs the rest (steady), from snapshots nearest the round ends
    first_end = max(r["t_end"] for r in rounds if r["round"] == 0)
    before_steady = min(snaps, key=lambda s: abs(s[0] - first_end))
    first = [r for r in rounds if r["round"] == 0]
    rest = [r for r in rounds if r["round"] > 0]
    f_split = split(snaps[0][1], before_steady[1], first_end - t_start, sum(r["requests"] for r in first),
                    sum(r["completion_tokens"] for r in first))
    s_split = split(before_steady[1], final, t_start + wall - before_steady[0], sum(r["requests"] for r in rest),
                    sum(r["completion_tokens"] for r in rest)) if rest else None
    total = split(snaps[0][1], final, wall, sum(r["requests"] for r in rounds),
                  sum(r["completion_tokens"] for r in rounds))
    n_req = sum(r["requests"] for r in rounds)
    extra = dict(label=args.label, server_args=args.server_arg, load_s=load_s, first_round=f_split,
                 steady=s_split, total=total,
                 round_walls=[round(r["wall_s"], 3) for r in sorted(rounds, key=lambda r: (r["round"], r["client"]))],
                 errors=sum(r["errors"] for r in rounds),
                 mean_prompt_tokens=sum(r["prompt_tokens"] for r in rounds) / max(1, n_req),
                 mean_completion_tokens=sum(r["completion_tokens"] for r in rounds) / max(1, n_req),
                 health_stats=final)
    if args.reference:
        extra["in_process"] = reference(model, args, convs[0][-1])
    shape = dict(model=args.model, clients=args.clients, requests=args.requests, rounds=args.rounds,
                 live_per_round=live,
                 max_tokens=args.max_tokens, temperature=args.temperature, max_len=args.max_len, dtype=args.dtype)
    ours = (s_split or total)["requests_per_s"]
    ref = extra.get("in_process", {}).get("requests_per_s")
    record("serve_play", "lockstep_requests_per_s", shape, ours, ref, "req/s", None, None, **extra)
    tmp.cleanup()


def reference(model: str, args, convs) -> dict:
    """ONE in-process ``Sampler.generate`` over ``convs`` (warm; no HTTP, no batcher), and the
    same with one new token (prefill)."""
    import jax.numpy as jnp  # noqa: F401 - backend up before timing

    from skillax.engine import SamplingParams
    from skillax.engine.sampler import Sampler, encode_conversation
    from skillax.models.registry import load_policy, resolve_dtype

    dtype = resolve_dtype(args.dtype)
    params, mcfg, tok = load_policy(model, args.dtype, seed=0, max_len=args.max_len)
    s = Sampler(mcfg, tok, max_len=args.max_len, dtype=dtype)
    t = time.perf_counter()
    prompts = [encode_conversation(tok, c) for c in convs]
    encode_s = time.perf_counter() - t
    out = {}
    for name, mt in (("full", args.max_tokens), ("prefill", 1)):
        sp = SamplingParams(temperature=args.temperature, max_new_tokens=mt, stop_strings=("</action>",))
        s.generate(params, prompts, sp, seed=0)
        t = time.perf_counter()
        res = s.generate(params, prompts, sp, seed=1)
        out[name] = (time.perf_counter() - t, int(res.lengths.sum()), res.stats)
    full_s, toks, st = out["full"]
    pre_s = out["prefill"][0]
    return dict(rows=len(prompts), mean_prompt_tokens=sum(map(len, prompts)) / len(prompts), encode_s=encode_s,
                call_s=full_s, prefill_s=pre_s, decode_s=max(0.0, full_s - pre_s), steps=st.get("steps"),
                batch_bucket=st.get("batch"), chunk=st.get("chunk"), cache_len=st.get("cache_len"),
                completion_tokens=toks, requests_per_s=len(prompts) / full_s, completion_tokens_per_s=toks / full_s)


if __name__ == "__main__":
    main()
