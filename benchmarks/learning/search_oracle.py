"""How much a task-type skill's places are worth to a reader that follows them perfectly.

The searching expert (``skillax.agents.envs.search_expert``) plays every valid_train game whose
planner record won, three ways: default search order (no skill), and searching first where the
rule teacher's skill says such objects were (``type_skills.type_skill`` + ``find_places``),
written leave-one-out from K = 8 other games of the type (what ``sft.play_skill_games = 8``
shows in the SFT data) and from all the other games of the type (what
benchmarks/learning/teacher_skills gives at evaluation). Success within the protocol's 30-step
cap and mean steps, per task type: an oracle reader's upper bound for campaign 5, the
information the skill carries that the observation lacks. No model, CPU only.

    SKILLAX_CACHE=... python benchmarks/learning/search_oracle.py [OUT.jsonl]
"""
from __future__ import annotations

import collections
import json
import random
import sys
import time

from skillax.agents.envs.alfworld import AlfWorldEnv, load_alfworld_tasks
from skillax.agents.envs.experts import expert_trajectory
from skillax.agents.envs.search_expert import SearchExpert, play_expert
from skillax.evaluation import wilson_interval
from skillax.evaluation.records import ALFWORLD_TYPE_SHORT
from skillax.methods.skillos.type_skills import find_places, teacher_row, type_skill

CAP = 30


def play(env, task, plan, places, cap: int = 60) -> tuple[bool, int]:
    """(won, steps) of the searching expert on ``task`` with ``places`` per find unit."""
    actions, won = play_expert(env, task, SearchExpert(plan, places), cap)
    return won, len(actions)


def main(argv: list[str]) -> None:
    t0 = time.time()
    tasks = load_alfworld_tasks(splits=["valid_train"])
    recs = {t.id: expert_trajectory(t) for t in tasks}
    won = [t for t in tasks if recs[t.id].won and not recs[t.id].error]
    env = AlfWorldEnv(max_steps=60)
    res: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    for t in won:
        others = [u for u in won if u.family == t.family and u.id != t.id]
        conds = {"no_skill": []}
        for k, pick in (("skill_k8", random.Random(t.id).sample(others, min(8, len(others)))), ("skill_all", others)):
            made = type_skill(t.family, [teacher_row(u, recs[u.id].actions) for u in pick])
            conds[k] = find_places(made[1]) if made else []
        for c, places in conds.items():
            res[c][ALFWORLD_TYPE_SHORT.get(t.family, t.family)].append(play(env, t, recs[t.id].actions, places))
    env.close()
    out = {"benchmark": "search_oracle", "split": "valid_train", "games": len(won), "cap": CAP,
           "seconds": round(time.time() - t0, 1), "command": "python benchmarks/learning/search_oracle.py"}
    for c, per in res.items():
        allv = [v for vs in per.values() for v in vs]
        wins = sum(w and n <= CAP for w, n in allv)
        lo, hi = wilson_interval(wins, len(allv))
        out[c] = {"success": round(wins / len(allv), 3), "ci95": [round(lo, 3), round(hi, 3)],
                  "mean_steps": round(sum(n for _, n in allv) / len(allv), 2),
                  "per_type": {ty: f"{sum(w and n <= CAP for w, n in vs)}/{len(vs)}" for ty, vs in sorted(per.items())}}
    line = json.dumps(out)
    print(line)
    if argv:
        with open(argv[0], "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
