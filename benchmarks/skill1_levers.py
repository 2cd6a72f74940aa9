"""Skill1 learning levers (issue 18), measured on CPU before/after the change that makes them.

    SKILLAX_CACHE=/work/cache_prefetch python benchmarks/skill1_levers.py \
        [--policy-queries 60] [--sft-steps 60] [--replay-games 12] [--out benchmarks/results/skill1_levers/levers.jsonl]

1. Instance numbers in the SFT distil demonstrations: share of demos (one per cached
   valid_train planner episode) whose lessons / head / subtasks name an instance ("drawer 4"),
   for the demo builder before (``BASE`` commit) and after (``methods.skill1.lessons``).
2. Retrieval cosine (real MiniLM) between the query the policy writes and the retrieval text
   the library stores (description_head), for every pair of valid_train goals, same task type
   vs another type, against the 0.4 threshold: before (query = the goal, or what base SmolLM2
   writes for the old query prompt; head = the goal, the old demo head) and after (the
   task-type query the SFT teaches; the task-type head). ``--sft-steps`` also SFTs SmolLM2 on
   the valid_train query demos and measures what it writes for held-out valid_seen goals.
3. Tokens a skill adds to an SFT play prompt (``sft.skill_fraction``): the skills block of the
   demo skill (another valid_train game of the same type) in SmolLM2 tokens, and the real play
   prompts of ``--replay-games`` replayed games with vs without it.
Writes one JSON line per measurement to ``--out`` and prints them.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BASE = "1f1b97e"          # the commit before the levers (old demo builder and query prompt)


def old_prompts():
    """The ``methods/skill1/prompts.py`` of ``BASE`` as a module namespace."""
    src = subprocess.run(["git", "-C", str(REPO), "show", f"{BASE}:skillax/methods/skill1/prompts.py"],
                         check=True, capture_output=True, text=True).stdout
    ns: dict = {"__name__": "old_prompts"}
    exec(compile(src, "old_prompts.py", "exec"), ns)
    return ns


def cached_records(tasks):
    from skillax.agents.envs.experts import _cache_path, _load_record

    out = {}
    for t in tasks:
        p = _cache_path(t, "planner-wheel", None)
        if os.path.exists(p):
            rec = _load_record(p)
            if rec.won and not rec.error:
                out[t.id] = rec
    return out


def fields_with_numbers(answer: str) -> dict[str, bool]:
    from skillax.methods.skill1.lessons import has_instance_numbers
    from skillax.skills.parsers import parse_distil

    d = parse_distil(answer).distil
    return {"action_lesson": has_instance_numbers(d.action_lesson),
            "navigation_lesson": has_instance_numbers(d.navigation_lesson),
            "description_head": has_instance_numbers(d.description_head),
            "subtasks": any(has_instance_numbers(s.description) for s in d.subtasks)}


def lever1(tasks, recs, max_steps=30) -> list[dict]:
    from skillax.methods.skill1 import prompts
    from skillax.methods.skill1.sft_data import expert_steps

    old = old_prompts()
    rows = {"before": [], "after": []}
    for t in tasks:
        if t.id not in recs:
            continue
        rec = recs[t.id]
        steps, won = expert_steps(rec, max_steps)
        final = steps[-1][1] if steps else rec.final_observation
        rows["before"].append(fields_with_numbers(
            old["distil_demonstration"](t.goal, [a for a, _ in steps], final, won)[-1]["content"]))
        rows["after"].append(fields_with_numbers(prompts.distil_demonstration(t.goal, t.family, steps, won)[-1]["content"]))
    out = []
    for when, r in rows.items():
        n = len(r)
        out.append({"lever": "1_instance_numbers", "when": when, "demos": n,
                    "share_any": round(sum(any(x.values()) for x in r) / n, 4),
                    **{f"share_{k}": round(sum(x[k] for x in r) / n, 4) for k in r[0]}})
    return out


def cos_report(name, queries, q_fam, heads, h_fam, same_task=None) -> dict:
    from skillax.skills.retrieval import load_minilm

    enc = load_minilm()
    S = enc.encode(list(queries)) @ enc.encode(list(heads)).T                  # (Q, H)
    qf, hf = np.array(q_fam), np.array(h_fam)
    same = qf[:, None] == hf[None, :]
    keep = np.ones_like(S, bool) if same_task is None else ~same_task      # a query never retrieves its own game
    a, b = S[same & keep], S[~same & keep]
    top = np.where(keep, S, -9).argmax(1)
    return {"lever": "2_retrieval_cosine", "when": name, "queries": len(queries), "heads": len(heads),
            "same_type_mean": round(float(a.mean()), 4), "same_type_share_ge_0.4": round(float((a >= 0.4).mean()), 4),
            "other_type_mean": round(float(b.mean()), 4), "other_type_share_ge_0.4": round(float((b >= 0.4).mean()), 4),
            "queries_with_same_type_hit": round(float(((S >= 0.4) & same & keep).any(1).mean()), 4),
            "top1_same_type": round(float((hf[top] == qf).mean()), 4),
            "examples": [str(q) for q in list(queries)[:3]]}


def stratified(tasks, per_type):
    by = collections.defaultdict(list)
    for t in tasks:
        by[t.family].append(t)
    return [t for f in sorted(by) for t in by[f][:per_type]]


def smollm2_queries(goals, prompt_fn, params=None, batch=30, max_new=32):
    """What SmolLM2 writes after the query prompt (greedy), parsed as the RL loop parses it."""
    from skillax.engine.sampler import Sampler
    from skillax.engine.sampling import SamplingParams
    from skillax.models.registry import load_policy
    from skillax.skills.parsers import parse_query

    p0, mcfg, tok = load_policy("smollm2", "float32")
    sampler = Sampler(mcfg, tok, max_len=512, dtype="float32")
    out = []
    for c in range(0, len(goals), batch):
        ids = [prompt_fn(tok, g) for g in goals[c:c + batch]]
        res = sampler.generate(params if params is not None else p0, ids,
                               SamplingParams(temperature=0.0, max_new_tokens=max_new, stop_strings=("</query>",)))
        out += [parse_query("<query>" + tok.decode(res.tokens[i, :res.lengths[i]], skip_special_tokens=True)).query
                for i in range(len(ids))]
    return out


def sft_query_policy(train_tasks, steps, lr=5e-5):
    """SmolLM2 SFT'd on the query demos of ``train_tasks`` (CPU, bf16): (params, nll first/last)."""
    from skillax.config_defaults import skill1
    from skillax.methods.common.engine import PolicyEngine
    from skillax.methods.skill1.prompts import query_demonstration
    from skillax.rl.data import make_iterator, sft_dataset
    from skillax.tokenizers.chat import render_with_masks

    c = skill1(env_name="alfworld")
    c.model.path, c.model.dtype, c.model.max_len = "smollm2", "bfloat16", 256
    c.train.micro_batch = 8
    eng = PolicyEngine.create(c, "/tmp/skill1_levers_engine")
    tok = eng.tokenizer
    ds = sft_dataset([{"messages": query_demonstration(t.goal, t.family)} for t in train_tasks],
                     lambda m: render_with_masks(tok, m), batch_size=8, max_len=160, seed=0,
                     pad_id=int(tok.pad_token_id or 0))
    it = make_iterator(ds)

    def batches():
        while True:
            yield {k: np.asarray(v) for k, v in next(it).items()}

    hist = eng.sft(batches(), lr=lr, steps=steps, warmup_ratio=0.05)
    import jax
    params = jax.tree.map(lambda x: np.asarray(x, np.float32), eng.state["params"])
    return params, hist[0]["nll"], hist[-1]["nll"], sum(h["time_s"] for h in hist)


def lever2(train, seen, policy_queries: int, sft_steps: int) -> list[dict]:
    from skillax.methods.skill1.lessons import description_head, query_text
    from skillax.methods.skill1.prompts import query_prompt

    goals, fams = [t.goal for t in train], [t.family for t in train]
    own = np.eye(len(train), dtype=bool)
    out = [cos_report("before: query = goal, head = goal", goals, fams, [g[:120] for g in goals], fams, own),
           cos_report("after: query = task-type query (SFT demo), head = task-type description_head",
                      [query_text(t.goal, t.family) for t in train], fams,
                      [description_head(t.goal, t.family) for t in train], fams, own)]
    if policy_queries:
        sub = stratified(train, max(1, policy_queries // 6))
        idx = [train.index(t) for t in sub]
        qs = smollm2_queries([t.goal for t in sub], old_prompts()["query_prompt"])
        out.append(cos_report("before: query = base SmolLM2 on the old query prompt (greedy), head = goal",
                              qs, [t.family for t in sub], [g[:120] for g in goals], fams, own[idx]))
        qs = smollm2_queries([t.goal for t in sub], query_prompt)
        out.append(cos_report("before SFT: base SmolLM2 on the new query prompt (greedy), head = task-type head",
                              qs, [t.family for t in sub], [description_head(t.goal, t.family) for t in train], fams,
                              own[idx]))
    if sft_steps:
        params, nll0, nll1, secs = sft_query_policy(train, sft_steps)
        held = stratified(seen, 10)
        qs = smollm2_queries([t.goal for t in held], query_prompt, params=params)
        r = cos_report(f"after: SmolLM2 SFT'd {sft_steps} steps on the valid_train query demos, held-out "
                       "valid_seen goals, head = task-type heads of valid_train", qs, [t.family for t in held],
                       [description_head(t.goal, t.family) for t in train], fams)
        r.update(sft_nll_first=round(nll0, 4), sft_nll_last=round(nll1, 4), sft_seconds=round(secs, 1),
                 exact_match=round(float(np.mean([q == query_text(t.goal, t.family) for q, t in zip(qs, held)])), 4))
        out.append(r)
    return out


def lever3(train, recs, replay_games: int) -> list[dict]:
    from skillax.agents.agent_loop import build_play_prompt
    from skillax.engine.sampler import encode_conversation
    from skillax.methods.common.play import play_config
    from skillax.methods.skill1.sft_data import skill_assignments, skills_for
    from skillax.models.gguf_io import load_gguf_tokenizer

    sys.path.insert(0, str(REPO / "configs"))
    import skill1_alfworld_learning as learning

    cfg = learning.get_config()
    pc = play_config(cfg)
    tok = load_gguf_tokenizer()
    s = cfg.sft
    from skillax.methods.skill1.sft_data import priors_for

    priors = priors_for(cfg, train, recs)          # the config's sft.distil_level
    assign = skill_assignments(train, recs, float(s.skill_fraction), float(s.irrelevant_fraction), int(cfg.seed),
                               int(cfg.env.max_steps), priors)

    def n_tok(goal, skills):
        return len(encode_conversation(tok, build_play_prompt(goal, "You are in a room.", [], ["look"], skills, 0, pc)))

    from skillax.methods.skill1.sft_data import extra_transcripts
    from skillax.tokenizers.chat import render_with_masks

    extra = extra_transcripts(train, recs, distil_demos=True, query_demos=True, max_steps=int(cfg.env.max_steps),
                              max_chars=int(cfg.rollout.distil_prompt_chars), priors=priors)
    extra_len = [len(render_with_masks(tok, m)[0]) for m in extra]
    answer_len = [len(tok.encode(m[-1]["content"], add_special_tokens=False)) for m in extra if "```json" in m[-1]["content"]]
    by = {t.id: t for t in train}
    added = [n_tok(by[i].goal, [txt]) - n_tok(by[i].goal, []) for i, (_, txt) in assign.items()]
    n_steps = {i: min(len(recs[i].steps), int(cfg.env.max_steps)) for i in recs}
    out = [{"lever": "3_skill_in_play_sft", "episodes_with_expert": len(recs), "skill_fraction": float(s.skill_fraction),
            "episodes_with_skill": len(assign), "kinds": dict(collections.Counter(k for k, _ in assign.values())),
            "tokens_added_per_prompt_mean": round(float(np.mean(added)), 1), "tokens_added_per_prompt_max": int(max(added)),
            "play_transcripts": int(sum(n_steps.values())),
            "play_transcripts_with_skill": int(sum(n_steps[i] for i in assign)),
            "example_skill": next(iter(assign.values()))[1],
            "distil_query_demos": len(extra), "demo_transcript_tokens_max": int(max(extra_len)),
            "distil_answer_tokens_mean": round(float(np.mean(answer_len)), 1),
            "distil_answer_tokens_max": int(max(answer_len))}]
    if replay_games:
        from skillax.agents.envs import env_spec
        from skillax.methods.common.play_sft import play_demonstrations

        games = [t for t in stratified([t for t in train if t.id in recs], 2)][:replay_games]
        sub = {t.id: (("same_type", assign[t.id][1]) if t.id in assign else
                      ("same_type", next(v for k, v in assign.items() if by[k].family == t.family)[1]))
               for t in games if any(by[k].family == t.family for k in assign)}
        spec = env_spec("alfworld", max_steps=int(cfg.env.max_steps))
        lens = {}
        for name, hook in (("without", None), ("with", skills_for(sub))):
            demos, _ = play_demonstrations([t for t in games if t.id in sub], spec, pc, max_steps=int(cfg.env.max_steps),
                                           skills_for=hook)
            lens[name] = [len(encode_conversation(tok, d[:2])) for d in demos]
        out.append({"lever": "3_play_prompt_tokens_replayed", "games": len(sub), "prompts": len(lens["with"]),
                    "without_skill_mean": round(float(np.mean(lens["without"])), 1),
                    "with_skill_mean": round(float(np.mean(lens["with"])), 1),
                    "with_skill_max": int(max(lens["with"])),
                    "added_mean": round(float(np.mean(np.array(lens["with"]) - np.array(lens["without"]))), 1)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy-queries", type=int, default=60)
    ap.add_argument("--sft-steps", type=int, default=0)
    ap.add_argument("--replay-games", type=int, default=12)
    ap.add_argument("--out", type=pathlib.Path, default=REPO / "benchmarks/results/skill1_levers/levers.jsonl")
    ap.add_argument("--only", default="1,2,3")
    a = ap.parse_args(argv)
    from skillax.agents.envs.alfworld import load_alfworld_tasks

    t0 = time.time()
    train = load_alfworld_tasks(None, splits=["valid_train"])
    seen = load_alfworld_tasks(None, splits=["valid_seen"])
    recs = cached_records(train)
    print(f"valid_train games {len(train)}, cached won planner records {len(recs)}")
    rows = []
    if "1" in a.only:
        rows += lever1(train, recs)
    if "2" in a.only:
        rows += lever2(train, seen, a.policy_queries, a.sft_steps)
    if "3" in a.only:
        rows += lever3(train, recs, a.replay_games)
    date = time.strftime("%Y-%m-%d")
    with open(a.out, "a", encoding="utf-8") as f:
        for r in rows:
            r.update(date=date, planner_records=len(recs))
            print(json.dumps(r))
            f.write(json.dumps(r) + "\n")
    print(f"{time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
