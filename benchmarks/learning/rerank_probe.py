"""Does the Skill1 rerank put the game's own type first? Before/after ``sft.rerank_demos``.

    python benchmarks/learning/rerank_probe.py [--steps 30] [--batch 4] [--lr 5e-5]
        [--arms base,query,query+rerank,rerank] [--out benchmarks/results/learning/rerank_probe.jsonl]

Campaign 10 (``campaign_2026-12-03c``) found that the warm start's untrained rerank put the other
type's hand-written skill first in 89 of the 90 evaluation games that retrieved two candidates.
This probe measures the rerank alone, on every held-out game, without playing:

* candidates: the six hand-written skills in Skill1's format
  (``benchmarks/learning/handwritten_skills_skill1``), retrieved exactly as the rollout does
  (``DenseIndex``, MiniLM, cos >= ``rollout.threshold``, top ``rollout.top_k``, in cosine
  order) for the query the SFT teaches (``lessons.query_text``: the policy's own query is
  not sampled, so only the rerank varies);
* each game with >= 2 candidates gets the RL rerank prompt (``prompts.rerank_prompt``) twice,
  with the candidates in cosine order and reversed (the own type is the top cosine on every
  game, so only the reversed order separates a learned ranking from "always answer 1"),
  answered greedily (temperature 0) by the policy after each arm's SFT;
* reported per arm, split and order: games, own type ranked first (rate, 95 % Wilson; also
  among parsed answers only), the first shown candidate ranked first, parse failures.

Arms, all from the base SmolLM2-135M-Instruct weights with the same SFT steps, batch and lr
(``configs/skill1_alfworld_learning.py`` otherwise): ``base`` (no SFT), ``query`` (query
demonstrations only: the control), ``query+rerank`` (query and rerank demonstrations,
``methods.skill1.sft_data.rerank_demos``) and ``rerank`` (rerank demonstrations only; with
``--steps 100`` about as many rerank rows, ~400, as the GPU warm start's 150 x 32 updates
hold, ~540), all from the 200 ``valid_train`` games' planner records ($SKILLAX_CACHE/experts). One JSON line per (arm, split) goes to ``--out`` with the
command. CPU: about 20 s per SFT step at batch 4 on 2 cores.
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import shlex
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

REPO = pathlib.Path(__file__).resolve().parents[2]
HW = REPO / "benchmarks/learning/handwritten_skills_skill1"
SPLITS = ("valid_unseen", "valid_seen")
ARMS = ("base", "query", "query+rerank", "rerank")


def hand_written_candidates(cfg):
    """(index, {id: (head, strategy, task type)}) of the six hand-written skills."""
    from skillax.methods.skill1.lessons import TYPE_PHRASES
    from skillax.skills import importing
    from skillax.skills.retrieval import DenseIndex, load_minilm

    by_phrase = {p: t for t, p in TYPE_PHRASES.items()}
    skills = {}
    for i, doc in enumerate(importing.read_skills_dir(HW).docs(), 1):
        scenario, head, strategy = importing.record_fields(doc)
        skills[i] = (head, strategy, by_phrase[scenario.strip()])
    index = DenseIndex(load_minilm().encode, threshold=float(cfg.rollout.threshold), top_k=int(cfg.rollout.top_k))
    index.add(list(skills), [h for h, _, _ in skills.values()])
    return index, skills


def probe_rows(tasks, index, skills, top_k: int, threshold: float) -> list[dict]:
    """Per game whose taught query retrieves >= 2 candidates, two rows: the candidates in cosine
    order (``order`` "cosine", as the rollout shows them) and reversed ("reversed"). The taught
    query puts the own type's skill at the top cosine on every game, so the cosine order alone
    cannot tell a learned ranking from "always answer 1"; the reversed rows can."""
    from skillax.methods.skill1.lessons import query_text

    hits = index.search_batch([query_text(t.goal, t.family) for t in tasks], k=top_k, threshold=threshold)
    rows = []
    for t, h in zip(tasks, hits):
        if len(h) >= 2:
            ids = [int(i) for i, _ in h]
            for order, cands in (("cosine", ids), ("reversed", ids[::-1])):
                rows.append({"task_id": t.id, "task_type": t.family, "goal": t.goal, "order": order,
                             "candidates": cands})
    return rows


def score(rows: list[dict], texts: list[str], skills: dict) -> dict:
    """Per candidate order ("cosine", "reversed"): {"n", "own_first", "own_first_ci95",
    "own_first_parsed" (among parsed answers only: a parse failure keeps the shown order),
    "first_shown_first", "parse_fail"} of the rerank answers ``texts`` (one per row;
    ``prefix + completion``) against each row's own type."""
    from skillax.evaluation.stats import wilson_interval
    from skillax.skills.parsers import parse_rank

    acc = collections.defaultdict(lambda: {"n": 0, "own": 0, "first": 0, "fail": 0, "own_parsed": 0})
    for r, text in zip(rows, texts, strict=True):
        p = parse_rank(text, len(r["candidates"]))
        a = acc[r.get("order", "cosine")]
        own = skills[r["candidates"][p.permutation[0]]][2] == r["task_type"]
        a["n"] += 1
        a["own"] += own
        a["first"] += p.permutation[0] == 0
        a["fail"] += not p.parsed_ok
        a["own_parsed"] += own and p.parsed_ok
    out = {}
    for order, a in sorted(acc.items()):
        n, parsed = a["n"], a["n"] - a["fail"]
        out[order] = {"n": n, "own_first": a["own"] / n, "own_first_ci95": list(wilson_interval(a["own"], n)),
                      "own_first_parsed": a["own_parsed"] / parsed if parsed else 0.0,
                      "first_shown_first": a["first"] / n, "parse_fail": a["fail"]}
    return out


def demos_for(arm: str, tasks, records, cfg) -> list[list[dict]]:
    from skillax.methods.skill1 import sft_data

    if arm == "base":
        return []
    return sft_data.extra_transcripts(tasks, records, distil_demos=False, query_demos=arm != "rerank",
                                      max_steps=int(cfg.env.max_steps), rerank=arm != "query",
                                      seed=int(cfg.seed), top_k=int(cfg.rollout.top_k),
                                      priors=sft_data.priors_for(cfg, tasks, records))


def train_and_answer(arm: str, cfg, demos, rows_by_split: dict, skills: dict) -> tuple[dict, dict]:
    """SFT a fresh engine on ``demos`` (none for ``base``), then answer every probe prompt."""
    from skillax.methods.common.engine import PolicyEngine
    from skillax.methods.common.sft_warmstart import play_sft_warmstart
    from skillax.methods.skill1 import prompts

    with tempfile.TemporaryDirectory() as wd:
        engine = PolicyEngine.create(cfg, wd)
        sft = {"transcripts": len(demos), "updates": 0}
        if demos:   # the warm start's own SFT path, with no play transcripts (as skill_alpha's data SFT)
            got = play_sft_warmstart(engine, cfg, [], extra_transcripts=demos)
            sft.update(updates=got["updates"], nll_first=got["nll_first"], nll_last=got["nll_last"],
                       seconds=round(got["seconds"], 1))
        policy = engine.policy_sampler(0.0)
        out = {}
        for split, rows in rows_by_split.items():
            ps = [prompts.rerank_prompt(policy.tokenizer, r["goal"],
                                        [skills[i][:2] for i in r["candidates"]]) for r in rows]
            texts = []
            for c in range(0, len(ps), 32):
                gens = policy.sample(ps[c:c + 32], objective="rerank", episodes=list(range(c, c + len(ps[c:c + 32]))),
                                     max_new_tokens=int(cfg.rollout.rank_tokens), stop_strings=["</rank>"],
                                     prefix=prompts.RANK_PREFIX, temperature=0.0)
                texts += [g.text for g in gens]
            out[split] = (score(rows, texts, skills), texts)   # {order: stats}, answers
        engine.close()
    return sft, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--arms", default="base,query,query+rerank")
    ap.add_argument("--n-train", type=int, default=200)
    ap.add_argument("--out", type=pathlib.Path, default=REPO / "benchmarks/results/learning/rerank_probe.jsonl")
    a = ap.parse_args(argv)
    arms = [x for x in a.arms.split(",") if x]
    bad = [x for x in arms if x not in ARMS]
    if bad:
        raise SystemExit(f"unknown arms {bad}: choose from {', '.join(ARMS)}")

    from skillax import configs
    from skillax.methods.common import tasks as task_lib
    from skillax.methods.skill1 import sft_data

    cfg = configs.get("skill1_alfworld_learning", {
        "model.dtype": "float32", "model.max_len": 1024, "model.sampler_memory_gb": 0.0,
        "sft.steps": a.steps, "sft.batch_size": a.batch, "sft.lr": a.lr, "sft.max_len": 512,
        "train.micro_batch": a.batch})
    index, skills = hand_written_candidates(cfg)
    rows = {s: probe_rows(task_lib.load_tasks(cfg.env, s), index, skills, int(cfg.rollout.top_k),
                          float(cfg.rollout.threshold)) for s in SPLITS}
    train = list(task_lib.load_tasks(cfg.env, "valid_train"))[: a.n_train]
    records = sft_data.won_records(train) if any(x != "base" for x in arms) else {}
    command = "python benchmarks/learning/rerank_probe.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    a.out.parent.mkdir(parents=True, exist_ok=True)
    for arm in arms:
        t0 = time.time()
        demos = demos_for(arm, train, records, cfg)
        sft, res = train_and_answer(arm, cfg, demos, rows, skills)
        for split, (by_order, texts) in res.items():
            line = {"arm": arm, "split": split, "games": by_order["cosine"]["n"], **by_order, "sft": sft,
                    "answers": dict(collections.Counter(texts).most_common(5)),
                    "wall_s": round(time.time() - t0, 1), "command": command, "date": time.strftime("%Y-%m-%d")}
            print(json.dumps(line), flush=True)
            with open(a.out, "a") as f:
                f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
