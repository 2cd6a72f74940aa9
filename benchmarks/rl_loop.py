"""Whole-loop RL throughput (issue 17): where an RL step's time goes.

Three benchmarks, one JSON line each (``benchmarks/results/rl_loop.jsonl``, with the command):

    # 1. Skill1 RL steps end to end (rollout = query, retrieval, rerank, play, distil; library
    #    update; trainer update) on real games; --steps measured after --warmup steps
    python benchmarks/rl_loop.py skill1 --env alfworld --model smollm2 --tasks 8 --group 4 \\
        --max-steps 30 --workers auto --overlap 1 --steps 3 --warmup 1          # H200 figure
    #    "before" on the same machine: SKILLAX_FAST_PDDL=0 ... --workers 8 --placement
    #    round_robin --share-prefill 0 (benchmarks/results/rl_loop.md lists the runs)
    python benchmarks/rl_loop.py skill1 --env textworld --model smollm2 ...
    python benchmarks/rl_loop.py skill1 --size tiny                            # CPU check

    # 2. the engine side alone: random weights at a Qwen3 shape, a synthetic environment
    #    (fixed prompt / observation lengths, instant steps), play-shaped sampler calls
    python benchmarks/rl_loop.py engine --model qwen3-1.7b --episodes 32 --turns 30 \\
        --prompt-len 512 --new-tokens 64
    python benchmarks/rl_loop.py engine --model tiny --episodes 4 --turns 3    # CPU check

    # 3. the environment side: lock-step vs overlapped play on real games with a stand-in
    #    policy that costs --latency s (+ --per-row s per row) of wall time and no CPU (a GPU
    #    call), choosing admissible actions keyed on (episode, turn)
    python benchmarks/rl_loop.py play --env alfworld --episodes 16 --turns 30 --workers 2 \\
        --latency 0.2 --overlap 1,2

Phases of a Skill1 step (seconds and fractions of the step's wall time):

* ``sampling``: the sampler's device programs (``Sampler`` call time: run + device_get);
* ``environment``: time the loop was blocked in the env pool (resets, steps; under overlap
  only the waits that generation did not hide);
* ``library``: retrieval (MiniLM encode + search), library reads, EMA / admission, index sync;
* ``update``: the trainer update (``engine.train``, includes the bf16 sampler-copy refresh);
  the engine skips it when every group has zero variance (an untrained policy winning no
  game): ``--update-advantages random`` times it on the step's real rows with N(0, 1)
  advantages (timing only; the H200 lines of 2026-12-03 say which they used);
* ``host``: the rest -- prompt building and chat-template encoding, the sampler's host side
  (packing, decoding, records: ``host_detail.sampler_host``), parsing, batch building.

Also: episodes/s, env steps/s, policy tokens/s (of the step's wall time), compiles during
the measured steps (XLA backend compiles, all programs), peak device memory (None on CPU).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import os
import pathlib
import random
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

os.environ.setdefault("HF_HUB_OFFLINE", "1")

BENCH = "rl_loop"


# ----------------------------------------------------------------------------- helpers
class Timer:
    """Seconds per phase, accumulated by :meth:`phase` and by :class:`Timed` proxies."""

    def __init__(self):
        self.s = collections.defaultdict(float)

    @contextlib.contextmanager
    def phase(self, name):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.s[name] += time.perf_counter() - t0


class Timed:
    """Proxy adding the wall time of every method call of ``obj`` to ``timer.s[name]``
    (nested timed calls are counted once, by the outermost)."""

    _depth = [0]

    def __init__(self, obj, timer: Timer, name: str):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_timer", timer)
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr):
        v = getattr(self._obj, attr)
        if not callable(v) or attr.startswith("__"):
            return v

        @functools.wraps(v)
        def call(*a, **kw):
            if Timed._depth[0]:
                return v(*a, **kw)
            Timed._depth[0] += 1
            t0 = time.perf_counter()
            try:
                return v(*a, **kw)
            finally:
                Timed._depth[0] -= 1
                self._timer.s[self._name] += time.perf_counter() - t0
        return call

    def __len__(self):
        return len(self._obj)


class CompileCounter:
    """XLA backend compiles seen by jax.monitoring (every program: sampler, trainer, casts)."""

    def __init__(self):
        import jax

        self.n = 0
        jax.monitoring.register_event_duration_secs_listener(self._on)

    def _on(self, event, secs, **kw):
        if "backend_compile" in event:
            self.n += 1


def random_advantages(gens, advs: dict, seed: int) -> dict:
    """Same keys and shapes as ``training_rows``' advantages {objective: (N,) float32}, with a
    seeded N(0, 1) value at each row's own objective (``gens[i].objective``; the single key when
    the objective set is one loss, e.g. ``released_code``). Benchmark only: the update's time on
    the step's real rows when every group has zero variance and the engine would skip it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {k: np.zeros(len(gens), np.float32) for k in advs}
    for i, g in enumerate(gens):
        key = g.objective if g.objective in out else next(iter(out))
        out[key][i] = rng.standard_normal()
    return out


def peak_memory():
    """(peak bytes in use, bytes limit) of device 0, or (None, None) where not reported (CPU)."""
    import jax

    try:
        st = jax.devices()[0].memory_stats() or {}
    except Exception:  # noqa: BLE001
        st = {}
    return st.get("peak_bytes_in_use"), st.get("bytes_limit")


def load_config(path: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_cfg", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config()


def set_dotted(cfg, key: str, value: str):
    node = cfg
    *parents, leaf = key.split(".")
    for p in parents:
        node = node[p]
    old = node[leaf] if leaf in node else None
    if isinstance(old, bool):
        v = value.lower() in ("1", "true", "yes")
    elif isinstance(old, int):
        v = int(value)
    elif isinstance(old, float):
        v = float(value)
    elif isinstance(old, tuple):
        v = tuple(int(x) for x in value.strip("()").split(",") if x.strip())
    else:
        v = value
    with cfg.unlocked() if hasattr(cfg, "unlocked") else contextlib.nullcontext():
        node[leaf] = v


def fractions(phases: dict, wall: float) -> dict:
    return {k: round(v / wall, 4) for k, v in phases.items()} if wall > 0 else {}


def print_split(title: str, phases: dict, wall: float) -> None:
    print(f"\n{title}: {wall:.3f} s", flush=True)
    for k, v in sorted(phases.items(), key=lambda kv: -kv[1]):
        print(f"  {k:<12} {v:8.3f} s  {100 * v / wall:5.1f} %", flush=True)


def emit(name: str, shape: dict, ours: float, unit: str, **extra) -> dict:
    from benchmarks.common import record

    return record(BENCH, name, shape, ours, None, unit, None, None, **extra)


# ----------------------------------------------------------------------------- skill1
HANDWRITTEN = pathlib.Path(__file__).resolve().parent / "learning" / "handwritten_skills"


def seed_library(library) -> int:
    """Insert the hand-written ALFWorld skills (so retrieval and rerank have candidates)."""
    n = 0
    for md in sorted(HANDWRITTEN.glob("*/SKILL.md")):
        text = md.read_text()
        m = re.search(r"^description:\s*(.+)$", text, re.M)
        body = text.split("---", 2)[-1].strip()
        desc = m.group(1).strip() if m else md.parent.name
        library.add(desc, desc.split(".")[0], body, step=0)
        n += 1
    return n


def tiny_checkpoint(folder: pathlib.Path) -> str:
    """A random 2-layer Qwen3 (Qwen3 tokenizer) HF checkpoint: the loop's mechanics at CPU cost."""
    from tests.models.hf_fixtures import save_hf_model

    return str(save_hf_model("qwen3_tied_gqa42", folder, vocab_size=151936, layers=2))


def skill1_config(args, tmp: pathlib.Path):
    cfg = load_config(args.config)
    from skillax.methods.skill1 import objectives as obj_lib

    sets = {"tasks_per_step": args.tasks, "group_size": args.group, "env.max_steps": args.max_steps,
            "env.name": args.env, "sft.steps": 0, "seed": args.seed}
    if args.size == "tiny":
        sets.update({"rollout.action_tokens": 16, "rollout.distil_tokens": 24, "rollout.query_tokens": 16,
                     "rollout.rank_tokens": 8, "train.micro_batch": 4, "model.max_len": 2048,
                     "env.tw_games_per_family": 1, "model.dtype": "float32"})
    for k, v in sets.items():
        set_dotted(cfg, k, str(v))
    for kv in args.set:
        k, v = kv.split("=", 1)
        set_dotted(cfg, k, v)
    model = args.model
    if model == "tiny":
        model = tiny_checkpoint(tmp / "tiny_ckpt")
    set_dotted(cfg, "model.path", model)
    # after the sets: the preset resolves references (model.batch_floor = tasks x group)
    return obj_lib.apply_objective_preset(cfg)


def bench_skill1(args) -> None:
    from skillax.agents import agent_loop
    from skillax.agents.envs import env_spec
    from skillax.agents.envs.runner import EnvPool, resolve_workers
    from skillax.methods.common import tasks as task_lib
    from skillax.methods.common.engine import PolicyEngine
    from skillax.methods.common.policy import TurnSampler
    from skillax.methods.common.rows import build_batch
    from skillax.methods.skill1 import objectives as obj_lib
    from skillax.methods.skill1 import rollout as rollout_mod
    from skillax.methods.skill1.loop import open_library, play_config, rollout_config
    from skillax.skills.retrieval import DenseIndex, load_minilm

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="rl_loop_"))
    cfg = skill1_config(args, tmp)
    counter = CompileCounter()
    t_setup = time.perf_counter()
    engine = PolicyEngine.create(cfg, tmp / "run")
    engine.sampler.share_prefill = bool(args.share_prefill)
    encoder = load_minilm()
    library = open_library(cfg, encoder, tmp, None)
    seeded = seed_library(library) if args.seed_library else 0
    index = DenseIndex(encoder.encode, threshold=float(cfg.rollout.threshold), top_k=int(cfg.rollout.top_k))
    index.sync(library.retrieval_texts())
    train_tasks = task_lib.load_tasks(cfg.env, cfg.env.train_split, cfg.env.get("n_train_tasks") or None)
    stream = task_lib.TaskStream(train_tasks, seed=int(cfg.seed))
    objectives = obj_lib.objective_configs(cfg)
    name = task_lib.resolve_env(cfg.env.name)
    workers = resolve_workers(args.workers, int(cfg.tasks_per_step) * int(cfg.group_size))
    pool = EnvPool(env_spec(name, max_steps=int(cfg.env.max_steps)), n_workers=workers,
                   max_steps=int(cfg.env.max_steps), placement=args.placement)
    pool.start_workers()
    policy = engine.policy_sampler(float(cfg.temperature))
    pcfg, rcfg = play_config(cfg), rollout_config(cfg)
    # --set model.precompile=true: the Skill1 loop's precompile before step 0 (issue 17's lever;
    # default off), its programs and seconds in the line (`precompile`), outside setup_s
    setup_s = time.perf_counter() - t_setup
    from skillax.methods.skill1.precompile import precompile_step
    pre = precompile_step(engine, cfg, [t.goal for t in train_tasks], pcfg, rcfg)

    timer = Timer()
    t_pool = Timed(pool, timer, "environment")
    t_index = Timed(index, timer, "library")
    t_library = Timed(library, timer, "library")
    enc = policy.encode

    def timed_encode(m):
        t0 = time.perf_counter()
        try:
            return enc(m)
        finally:
            timer.s["encode"] += time.perf_counter() - t0
    policy.encode = timed_encode

    # the play stage: the method's own (lock-step, call-keyed) or overlapped with turn keys
    real_play = agent_loop.play_episodes
    args.overlap = args.overlap if args.overlap == "auto" else int(args.overlap)
    if args.overlap != 1:
        def play(pool_, tasks, generate, skills=None, cfg=None, max_steps=None, **kw):
            gen = TurnSampler(policy, max_turns=int(max_steps or rcfg.max_steps),
                              max_new_tokens=rcfg.action_tokens, stop_strings=["</action>"])
            kw["overlap"] = args.overlap          # the benchmark's setting wins over the rollout's
            return real_play(pool_, tasks, gen, skills=skills, cfg=cfg, max_steps=max_steps, **kw)
        rollout_mod.play_episodes = play

    rows, profiles = [], []
    started = False          # --prefetch-resets: this step's resets went out behind the last update
    try:
        for step in range(args.warmup + args.steps):
            timer.s.clear()
            c0, s0, h0, g0 = counter.n, policy.seconds, policy.host_seconds, policy.tokens_generated
            b0 = len(engine.sampler.builds)
            rs0, nc0 = policy.row_steps, policy.n_calls
            t0 = time.perf_counter()
            tasks = stream.take(int(cfg.tasks_per_step))
            prof = None
            if args.profile and step >= args.warmup:
                import cProfile
                prof = cProfile.Profile()
                prof.enable()
            eps = rollout_mod.rollout(tasks, int(cfg.group_size), policy, t_library, t_index, t_pool, pcfg, rcfg,
                                      started=started)
            if prof is not None:
                prof.disable()
                profiles.append(prof)
            t_roll = time.perf_counter() - t0
            with timer.phase("library"):
                counts = rollout_mod.update_library(eps, library, step)
                index.sync(library.retrieval_texts())
            with timer.phase("batch"):
                gens, advs = obj_lib.training_rows(eps, cfg.objective)
                if args.update_advantages == "random":   # time the update an untrained policy skips
                    advs = random_advantages(gens, advs, seed=step)
                batch = build_batch(gens, advs, list(objectives), length_buckets=tuple(cfg.train.length_buckets),
                                    rows_multiple=int(cfg.train.micro_batch),
                                    drop_truncated=bool(cfg.rl.drop_truncated),
                                    pad_id=int(engine.tokenizer.pad_token_id or 0))
            started = bool(args.prefetch_resets) and step + 1 < args.warmup + args.steps
            if started:     # the Skill1 loop's rollout.prefetch_resets: resets load behind the update
                t_pool.start_batch(rollout_mod.episode_tasks(stream.peek(int(cfg.tasks_per_step)), int(cfg.group_size)))
            with timer.phase("update"):
                if not args.skip_update:
                    engine.train(batch, objectives)
            wall = time.perf_counter() - t0
            sampling = policy.seconds - s0
            phases = {"sampling": sampling, "environment": timer.s["environment"],
                      "library": timer.s["library"], "update": timer.s["update"]}
            phases["host"] = wall - sum(phases.values())
            steps = sum(ep.trajectory.n_steps for ep in eps)
            toks = policy.tokens_generated - g0
            row = dict(step=step, wall_s=wall, rollout_s=t_roll, phases=phases, episodes=len(eps),
                       env_steps=steps, policy_tokens=toks, compiles=counter.n - c0,
                       host_detail={"sampler_host": policy.host_seconds - h0, "encode": timer.s["encode"],
                                    "batch": timer.s["batch"]},
                       decode_utilization=toks / max(policy.row_steps - rs0, 1),
                       sampler_calls=policy.n_calls - nc0,
                       success=sum(ep.r for ep in eps) / len(eps), rows=len(gens),
                       batch_shape=list(batch["tokens"].shape), admitted=counts["admitted"],
                       reranked=sum(ep.rank is not None for ep in eps),
                       retrieved=sum(len(ep.retrieved_ids) for ep in eps),
                       builds=engine.sampler.builds[b0:])
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, default=str),
                  flush=True)
            rows.append(row)
    finally:
        rollout_mod.play_episodes = real_play
        pool.close()
        engine.close()
        library.close()

    if profiles:
        import pstats

        st = pstats.Stats(profiles[0])
        for p in profiles[1:]:
            st.add(p)
        st.dump_stats(args.profile)
        print(f"\nrollout profile ({len(profiles)} steps) -> {args.profile}; top by own time:")
        st.sort_stats("tottime").print_stats(25)
        st.sort_stats("cumulative").print_stats(40)
    meas = rows[args.warmup:] or rows
    wall = statistics.fmean(r["wall_s"] for r in meas)
    phases = {k: statistics.fmean(r["phases"][k] for r in meas) for k in meas[0]["phases"]}
    host = {k: statistics.fmean(r["host_detail"][k] for r in meas) for k in meas[0]["host_detail"]}
    eps = statistics.fmean(r["episodes"] for r in meas)
    steps = statistics.fmean(r["env_steps"] for r in meas)
    toks = statistics.fmean(r["policy_tokens"] for r in meas)
    peak, limit = peak_memory()
    shape = dict(method="skill1", env=name, model=args.model, tasks=int(cfg.tasks_per_step),
                 group=int(cfg.group_size), max_steps=int(cfg.env.max_steps), workers=workers,
                 overlap=args.overlap, action_tokens=rcfg.action_tokens, distil_tokens=rcfg.distil_tokens,
                 dtype=str(cfg.model.dtype), seeded_skills=seeded, size=args.size,
                 placement=args.placement, fast_pddl=os.environ.get("SKILLAX_FAST_PDDL", "1"),
                 share_prefill=bool(args.share_prefill), prefetch_resets=bool(args.prefetch_resets),
                 skip_update=bool(args.skip_update), update_advantages=args.update_advantages,
                 batch_buckets=str(cfg.model.batch_buckets), batch_floor=int(cfg.model.get("batch_floor", 0)),
                 prefill_floor=int(cfg.model.get("prefill_floor", 0)), precompile=str(cfg.model.get("precompile", "false")))
    print_split(f"skill1 {name} ({args.model}, {int(eps)} episodes, overlap {args.overlap})", phases, wall)
    emit("skill1_step", shape, round(wall, 3), "seconds/step (mean of measured steps)",
         episodes_per_s=round(eps / wall, 3), env_steps_per_s=round(steps / wall, 2),
         policy_tokens_per_s=round(toks / wall, 1),
         sampler_tokens_per_s=round(toks / max(phases["sampling"], 1e-9), 1),
         phases_s={k: round(v, 3) for k, v in phases.items()}, fractions=fractions(phases, wall),
         host_detail_s={k: round(v, 3) for k, v in host.items()},
         decode_utilization=round(statistics.fmean(r["decode_utilization"] for r in meas), 4),
         sampler_calls=statistics.fmean(r["sampler_calls"] for r in meas),
         builds_measured=[b for r in meas for b in r["builds"]],
         compiles_measured=sum(r["compiles"] for r in meas), compiles_warmup=sum(r["compiles"] for r in rows[:args.warmup]),
         peak_device_bytes=peak, device_bytes_limit=limit, setup_s=round(setup_s, 1),
         precompile={k.split("/")[1]: v for k, v in pre.items()},
         steps_measured=len(meas), warmup=args.warmup, mean_success=statistics.fmean(r["success"] for r in meas),
         mean_env_steps=steps, cpus=os.cpu_count(), loadavg_1m=round(os.getloadavg()[0], 2),
         per_step=[{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()
                    if k in ("step", "wall_s", "env_steps", "policy_tokens", "compiles")} for r in rows])


# ----------------------------------------------------------------------------- engine
def bench_engine(args) -> None:
    """Play-shaped sampler calls: ``--episodes`` rows per turn (``--group`` samples per
    prompt), each a fresh prompt of ``--prompt-len`` tokens (the play prompt is rebuilt each
    turn: task + skills + last-k history + observation), ``--new-tokens`` new tokens, EOS
    off (random weights), the environment instant; per-row keys (episode, turn)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from benchmarks.roofline import call_limit, decode_roofline_tokens_per_s
    from benchmarks.sampling import model_config
    from skillax.engine import Buckets, Sampler, SamplingParams
    from skillax.models.params import init_params

    cfg = model_config(args.model)
    dtype = jnp.dtype(args.dtype)
    counter = CompileCounter()
    params = init_params(cfg, jax.random.key(0), dtype)
    E, P, N, G = args.episodes, args.prompt_len, args.new_tokens, args.group
    if E % G:
        raise SystemExit(f"--episodes {E} must be a multiple of --group {G}")
    sampler = Sampler(cfg, None, max_len=P + N + 64, dtype=dtype,
                      buckets=Buckets(prompt=tuple(sorted({P, *Buckets().prompt}))),
                      share_prefill=bool(args.share_prefill))
    rng = np.random.default_rng(0)
    sp = SamplingParams(temperature=1.0, max_new_tokens=N, n=G, eos_ids=[])

    def turn(t):
        prompts = rng.integers(3, cfg.vocab_size, (E // G, P)).tolist()
        keys = [(t, e) for e in range(E)]
        t0 = time.perf_counter()
        out = sampler.generate(params, prompts, sp, seed=0, row_keys=keys)
        return time.perf_counter() - t0, float(out.stats["seconds"]), int(out.lengths.sum())

    c0 = counter.n
    t0 = time.perf_counter()
    turn(0)  # compile
    warm_s = time.perf_counter() - t0
    c_warm = counter.n - c0
    c0 = counter.n
    t0 = time.perf_counter()
    calls = [turn(t + 1) for t in range(args.turns)]
    wall = time.perf_counter() - t0
    toks = sum(c[2] for c in calls)
    dev = sum(c[1] for c in calls)
    peak, limit = peak_memory()
    limit_tps, _ = decode_roofline_tokens_per_s(cfg, E, P, N, dtype.itemsize, args.bandwidth)
    call = call_limit(cfg, E, P, N, dtype.itemsize, bandwidth=args.bandwidth, matmul_flops=args.matmul_flops,
                      prefill_rows=E // G if args.share_prefill else E)
    phases = {"sampling": dev, "host": wall - dev}
    shape = dict(model=args.model, episodes=E, group=G, turns=args.turns, prompt_len=P, new_tokens=N,
                 dtype=args.dtype, share_prefill=bool(args.share_prefill))
    print_split(f"engine {args.model} ({E} rows x {args.turns} turns), per turn",
                {k: v / args.turns for k, v in phases.items()}, wall / args.turns)
    emit("engine_turns", shape, round(toks / wall, 1), "policy tokens/s (synthetic env, instant steps)",
         episodes_turns_per_s=round(E * args.turns / wall, 2), seconds_per_turn=round(wall / args.turns, 4),
         phases_s={k: round(v, 3) for k, v in phases.items()}, fractions=fractions(phases, wall),
         roofline_tokens_per_s=round(limit_tps, 1), fraction_of_roofline=round(toks / wall / limit_tps, 4),
         call_limit_tokens_per_s=round(call["tokens_per_s"], 1),
         fraction_of_call_limit=round(toks / wall / call["tokens_per_s"], 4),
         compiles_warmup=c_warm, compiles_measured=counter.n - c0, warmup_s=round(warm_s, 2),
         peak_device_bytes=peak, device_bytes_limit=limit, weight_bytes=cfg.num_params() * dtype.itemsize)


# ----------------------------------------------------------------------------- play
_ADM = re.compile(r"Admissible actions: (.*?)\n\nAnswer:", re.S)


class LatencyPolicy:
    """Stand-in policy: sleeps ``latency + per_row * rows`` (a GPU call: wall time, no CPU),
    then answers an admissible action drawn from Random((seed, episode, turn))."""

    takes_ids = True

    def __init__(self, latency: float, per_row: float, seed: int = 0):
        self.latency, self.per_row, self.seed = latency, per_row, seed
        self.calls, self.rows = 0, 0

    def __call__(self, prompts, ids):
        time.sleep(self.latency + self.per_row * len(prompts))
        self.calls += 1
        self.rows += len(prompts)
        out = []
        for p, (e, t) in zip(prompts, ids):
            m = _ADM.search(p[1]["content"])
            acts = [a for a in (m.group(1).split("; ") if m else []) if a and not a.startswith("(+")]
            a = random.Random(f"{self.seed}-{e}-{t}").choice(acts or ["look"])
            out.append(f"<think>t{t}</think><action>{a}</action>")
        return out


def bench_play(args) -> None:
    from skillax.agents.agent_loop import play_episodes
    from skillax.agents.envs import env_spec
    from skillax.agents.envs.runner import EnvPool, resolve_workers
    from skillax.methods.common import tasks as task_lib
    import ml_collections

    env_cfg = ml_collections.ConfigDict(dict(name=args.env, tw_games_per_family=max(1, args.episodes // 4),
                                             tw_families="", data_dir=""))
    tasks = task_lib.load_tasks(env_cfg, "valid_train", args.episodes)
    tasks = (tasks * (args.episodes // max(1, len(tasks)) + 1))[:args.episodes]
    workers = resolve_workers(args.workers, len(tasks))
    sig, results = None, {}
    for k in [x if x == "auto" else int(x) for x in args.overlap.split(",")]:
        timer = Timer()
        policy = LatencyPolicy(args.latency, args.per_row, args.seed)
        with EnvPool(env_spec(task_lib.resolve_env(args.env), max_steps=args.turns), n_workers=workers,
                     max_steps=args.turns, placement=args.placement) as pool:
            pool.start_workers()
            # load every game once outside the measurement (imports, game files, PDDL
            # translation); the measured play's resets then reuse the loaded games
            t0 = time.perf_counter()
            pool.reset_batch(tasks)
            first_reset_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            trajs = play_episodes(Timed(pool, timer, "env_wait"), tasks, policy, max_steps=args.turns, overlap=k)
            wall = time.perf_counter() - t0
            restarts = pool.restarts
            mean_step = pool.mean_step_s
        s = [(t.won, t.failed, [(x.action, x.reward) for x in t.steps]) for t in trajs]
        same = sig is None or s == sig
        sig = sig or s
        steps = sum(t.n_steps for t in trajs)
        policy_s = policy.latency * policy.calls + policy.per_row * policy.rows
        results[k] = wall
        emit("play_overlap", dict(env=args.env, episodes=len(tasks), turns=args.turns, workers=workers,
                                  overlap=k, latency_s=args.latency, per_row_s=args.per_row,
                                  placement=args.placement,
                                  fast_pddl=os.environ.get("SKILLAX_FAST_PDDL", "1")),
             round(wall, 3), "seconds for all episodes",
             env_steps_per_s=round(steps / wall, 2), env_steps=steps, policy_calls=policy.calls,
             rows_per_call=round(policy.rows / max(policy.calls, 1), 2), policy_s=round(policy_s, 3),
             env_wait_s=round(timer.s["env_wait"], 3), same_episodes_as_first=same,
             speedup_vs_first=round(results[next(iter(results))] / wall, 3), restarts=restarts,
             wins=sum(t.won for t in trajs), first_reset_batch_s=round(first_reset_s, 3),
             mean_step_s=round(mean_step or 0.0, 5), cpus=os.cpu_count(),
             loadavg_1m=round(os.getloadavg()[0], 2))
        if not same:
            raise SystemExit("overlapped play gave different episodes than lock-step")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="bench", required=True)
    s = sub.add_parser("skill1")
    s.add_argument("--config", default="configs/skill1_alfworld_gpu.py")
    s.add_argument("--env", default="alfworld")
    s.add_argument("--model", default="smollm2", help="smollm2 | tiny | random:<shape> | HF folder")
    s.add_argument("--size", default="full", choices=["full", "tiny"],
                   help="tiny: CPU sizes (short actions / distils, fp32)")
    s.add_argument("--tasks", type=int, default=8)
    s.add_argument("--group", type=int, default=4)
    s.add_argument("--max-steps", type=int, default=30)
    s.add_argument("--workers", default="auto")
    s.add_argument("--overlap", default="1", help="1 (lock-step) | K >= 2 | auto")
    s.add_argument("--steps", type=int, default=3)
    s.add_argument("--warmup", type=int, default=1)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--seed-library", type=int, default=1, help="1: insert the hand-written skills first")
    s.add_argument("--set", action="append", default=[], help="config override k=v (repeatable)")
    s.add_argument("--placement", default="group", choices=["group", "round_robin"])
    s.add_argument("--share-prefill", type=int, default=1, help="1: one prefill per distinct prompt")
    s.add_argument("--profile", default="", help="cProfile the measured steps' rollouts into this file")
    s.add_argument("--skip-update", action="store_true", help="no trainer update (rollout profiling)")
    s.add_argument("--prefetch-resets", type=int, default=1,
                   help="1: the next step's resets are submitted before the update (rollout.prefetch_resets)")
    s.add_argument("--update-advantages", choices=["real", "random"], default="real",
                   help="random: N(0, 1) advantages on the rows the objective would use, so the update "
                        "runs even when every group has zero variance (an untrained policy wins no game "
                        "and the engine then skips the update; timing only)")
    e = sub.add_parser("engine")
    e.add_argument("--model", default="tiny")
    e.add_argument("--episodes", type=int, default=4)
    e.add_argument("--group", type=int, default=1)
    e.add_argument("--turns", type=int, default=3)
    e.add_argument("--prompt-len", type=int, default=64)
    e.add_argument("--new-tokens", type=int, default=16)
    e.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    e.add_argument("--bandwidth", type=float, default=4.3e12, help="bytes/s (H200 measured; benchmarks/roofline.py)")
    e.add_argument("--matmul-flops", type=float, default=7.9e14, help="FLOP/s (H200 measured; benchmarks/roofline.py)")
    e.add_argument("--share-prefill", type=int, default=1, help="1: one prefill per group (item 4)")
    p = sub.add_parser("play")
    p.add_argument("--env", default="alfworld")
    p.add_argument("--episodes", type=int, default=16)
    p.add_argument("--turns", type=int, default=30)
    p.add_argument("--workers", default="2")
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--per-row", type=float, default=0.0)
    p.add_argument("--overlap", default="1,2")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--placement", default="group", choices=["group", "round_robin"])
    args = ap.parse_args(argv)
    {"skill1": bench_skill1, "engine": bench_engine, "play": bench_play}[args.bench](args)


if __name__ == "__main__":
    main()
