"""benchmarks/learning scripts of issue 18: the chosen-skill type table, the Skill1-format
hand-written skills, the pooling scripts, summarize.py's comparisons, run_shape.py and learning.sh's
switches."""

from __future__ import annotations

import json

import pytest


def _script(name: str):
    """benchmarks/learning/<name>.py loaded as a module."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / f"benchmarks/learning/{name}.py"
    spec = importlib.util.spec_from_file_location(f"learning_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write_eval(arm_dir, cond: str, wins) -> None:
    """One valid_unseen evaluation file, game i won iff wins[i] (all Pick games, 5 steps)."""
    from skillax.evaluation import EpisodeRecord, write_records

    recs = [EpisodeRecord(task_id=f"valid_unseen/g{i}", split="valid_unseen", task_type="pick_and_place_simple",
                          won=w, steps=5) for i, w in enumerate(wins)]
    (arm_dir / "eval").mkdir(parents=True, exist_ok=True)
    write_records(arm_dir / "eval" / f"{cond}__valid_unseen.jsonl", recs)


def test_skill_match_groups_episodes_by_the_chosen_skills_type(tmp_path):
    import importlib.util
    import pathlib

    import pytest

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks/learning/skill_match.py"
    spec = importlib.util.spec_from_file_location("skill_match", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    arm = tmp_path / "skill1_full"
    (arm / "eval").mkdir(parents=True)
    src = lambda t: json.dumps([f"valid_train/{t}-Mug-None-Desk-1/trial_1"])  # noqa: E731
    (arm / "library_records.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [
        {"table": "meta", "key": "schema_version", "value": "2"},
        {"table": "skills", "id": 7, "source_tasks": src("pick_and_place_simple")},
        {"table": "skills", "id": 9, "source_tasks": src("pick_heat_then_place_in_recep")},
        {"table": "skills", "id": 11, "source_tasks": None, "scenario": "heating: warm it in the microwave"}]))
    games = [("pick_and_place_simple", 7, True, False), ("pick_and_place_simple", 9, False, False),
             ("pick_and_place_simple", 7, False, True), ("pick_heat_then_place_in_recep", None, True, True),
             ("pick_heat_then_place_in_recep", 11, True, False)]   # an imported skill, typed by its scenario
    with_, without = [], []
    for i, (t, cs, won_with, won_without) in enumerate(games):
        tid = f"valid_unseen/{t}-Apple-None-Desk-{i}/trial_{i}"
        rec = {"task_id": tid, "split": "valid_unseen", "task_type": t, "steps": 10}
        with_.append({**rec, "won": won_with, "extras": {"chosen_skill": cs}})
        without.append({**rec, "won": won_without, "extras": {}})
    for name, recs in (("with_library", with_), ("without_library", without)):
        (arm / "eval" / f"{name}__valid_unseen.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    got = mod.match_table(arm, "valid_unseen")
    rates = {k: (v["n"], v["success_with"], v["success_without"]) for k, v in got.items()}
    assert rates == {"match": (3, 2 / 3, 1 / 3), "mismatch": (1, 0.0, 0.0), "none": (1, 1.0, 1.0)}
    assert got["match"]["delta"] == pytest.approx(1 / 3) and got["none"]["delta_ci95"] == [0.0, 0.0]
    lo, hi = got["match"]["delta_ci95"]
    assert -1.0 <= lo <= 1 / 3 <= hi <= 1.0

    # campaign 10's bound arm: no library_records.jsonl (typed from its exported skills/ folder,
    # metadata library-id) and no without_library eval (paired with another arm's)
    from skillax.skills import skill_md

    hw, sft = tmp_path / "skill1_hw", tmp_path / "skill1_sft"
    for a in (hw, sft):
        (a / "eval").mkdir(parents=True)
    for i, (name, phrase) in enumerate([("cooling", "cooling: chill it in the fridge"),
                                         ("heating", "heating: warm it in the microwave")], 1):
        doc = skill_md.SkillDoc(name=name, description=f"Use for {phrase}.", metadata={"library-id": str(i)},
                                body=f"## Scenario\n{phrase}\n\n## Strategy\n1. do it\n")
        (hw / "skills" / name).mkdir(parents=True)
        (hw / "skills" / name / "SKILL.md").write_text(skill_md.render_skill_md(doc))
    heat = [("pick_heat_then_place_in_recep", 1, False, True), ("pick_heat_then_place_in_recep", 2, True, False)]
    for name, idx in (("with_library", 2), ("without_library", 3)):
        recs = [{"task_id": f"valid_unseen/{t}-Egg-None-Fridge-{i}/trial_{i}", "split": "valid_unseen",
                 "task_type": t, "steps": 10, "won": g[idx], "extras": {"chosen_skill": g[1]}}
                for i, g in enumerate(heat) for t in [g[0]]]
        target = hw if name == "with_library" else sft
        (target / "eval" / f"{name}__valid_unseen.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert mod.skill_types(hw) == {1: "pick_cool_then_place_in_recep", 2: "pick_heat_then_place_in_recep"}
    got = mod.match_table(hw, "valid_unseen", without_arm=sft)
    assert {k: (v["n"], v["success_with"], v["success_without"]) for k, v in got.items()} == {
        "match": (1, 1.0, 0.0), "mismatch": (1, 0.0, 1.0)}

    # campaign 15 evaluated valid_unseen only: the command line reads the splits that exist
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert mod.main([str(arm)]) == 0
    rows = [r for r in buf.getvalue().splitlines() if r.startswith("| skill1_full")]
    assert [r.split(" | ")[1:3] for r in rows] == [["valid_unseen", "match"], ["valid_unseen", "mismatch"],
                                                   ["valid_unseen", "none"]]


def test_skill1_handwritten_skills_read_back_as_skill1_records():
    """The committed Skill1-format hand-written skills (learning.sh SKILL1_BOUND's library) read
    back through init_skills' importer with Skill1's task-type head and the hand-written steps."""
    import importlib.util
    import pathlib

    from skillax.methods.skill1.lessons import type_phrase
    from skillax.skills import importing

    root = pathlib.Path(__file__).resolve().parents[1] / "benchmarks/learning"
    spec = importlib.util.spec_from_file_location("write_skill1_handwritten", root / "write_skill1_handwritten.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    want = mod.skill1_records()
    docs = importing.read_skills_dir(root / "handwritten_skills_skill1").docs()
    got = sorted(importing.record_fields(d) for d in docs)
    assert got == sorted(want) and len(got) == 6
    heads = {h for _, h, _ in got}
    assert heads == {f"Use for {type_phrase(t)}." for t in mod.TASK_TYPE.values()}
    heat = next(s for sc, _, s in got if sc == type_phrase("pick_heat_then_place_in_recep"))
    assert '"heat X with microwave 1"' in heat and heat.startswith("1. Find the object X")


def test_pool_seeds_by_run_keeps_every_campaign_and_skips_pooled_lines():
    import importlib.util
    import pathlib

    import pytest

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks/learning/pool_seeds.py"
    spec = importlib.util.spec_from_file_location("pool_seeds", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = "full: with - without its library"
    lines = [{"method": "skill1", "comparison": c, "seed": 0, "split": "u", "n": 10, "delta": 0.1, "date": "a"},
             {"method": "skill1", "comparison": c, "seed": 0, "split": "u", "n": 10, "delta": 0.3, "date": "b"},
             {"method": "skill1", "comparison": f"seed 1, {c}", "seed": 1, "split": "u", "n": 10, "delta": 0.2,
              "date": "b"},
             {"method": "skill1", "comparison": f"pooled: {c}", "seed": 0, "split": "u", "deltas": [9.0],
              "delta": 9.0, "date": "b"}]                                   # an earlier pooled line: ignored
    pat = rf"^(seed \d+, )?{c}$|pooled: {c}$"
    by_seed = mod.pooled_lines(lines, pat, "p", "d", "cmd")
    assert by_seed[0]["deltas"] == [0.3, 0.2]                              # seed 0's latest line only
    by_run = mod.pooled_lines(lines, pat, "p", "d", "cmd", by="run")
    assert by_run[0]["runs"] == [["a", 0], ["b", 0], ["b", 1]] and by_run[0]["deltas"] == [0.1, 0.3, 0.2]
    assert by_run[0]["delta"] == pytest.approx(0.2) and by_run[0]["interval"] == "student-t over runs"
    # t_{0.975,2} = 4.302653; sd = 0.1 -> half width 0.248414
    assert by_run[0]["delta_ci95"] == pytest.approx([0.2 - 0.248414, 0.2 + 0.248414], abs=1e-5)
    with pytest.raises(ValueError, match="by must be"):
        mod.pooled_lines(lines, pat, "p", "d", "cmd", by="campaign")

    # campaign 15: a run of another policy (its arm line's --config.model.path) is not pooled silently
    q = "python3 -m skillax.main --config configs/skill1_alfworld_learning.py --config.model.path=qwen2.5-coder-0.5b"
    mixed = lines + [{"method": "skill1", "arm": "full", "condition": "with_library", "seed": 0, "split": "u",
                      "date": "c", "command": q},
                     {"method": "skill1", "comparison": c, "seed": 0, "split": "u", "n": 10, "delta": 0.9, "date": "c"}]
    with pytest.raises(ValueError, match=r"different policies: \(config default\): \['a', 'b'\]; qwen2.5-coder-0.5b: \['c'\]"):
        mod.pooled_lines(mixed, pat, "p", "d", "cmd", by="run")
    small = mod.pooled_lines(mixed, pat, "p", "d", "cmd", by="run", model="(config default)")
    assert small[0]["runs"] == [["a", 0], ["b", 0], ["b", 1]]
    assert mod.pooled_lines(mixed, pat, "p", "d", "cmd", by="run", model="qwen2.5-coder-0.5b") == []   # one run only


def test_rerank_probe_scores_own_type_first_top_cosine_and_parse_failures():
    """benchmarks/learning/rerank_probe.py: an answer's first candidate against the game's type
    (campaign 10: the untrained rerank wrote <rank>2,1,3</rank> on every game)."""
    import importlib.util
    import pathlib

    import pytest

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks/learning/rerank_probe.py"
    spec = importlib.util.spec_from_file_location("rerank_probe", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    heat, cool = "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep"
    skills = {1: ("Use for cooling.", "1. cool", cool), 3: ("Use for heating.", "1. heat", heat)}
    rows = [{"task_type": heat, "candidates": [3, 1], "order": "cosine"},
            {"task_type": cool, "candidates": [1, 3], "order": "cosine"},
            {"task_type": heat, "candidates": [3, 1], "order": "cosine"},
            {"task_type": cool, "candidates": [1, 3], "order": "cosine"},
            {"task_type": heat, "candidates": [1, 3], "order": "reversed"},   # own type shown second
            {"task_type": heat, "candidates": [1, 3], "order": "reversed"}]
    texts = ["<rank>2,1,3</rank>", "<rank>1,2</rank>", "<rank>none</rank>", "<rank>2</rank>",
             "<rank>2,1</rank>", "<rank>1,2</rank>"]
    got = mod.score(rows, texts, skills)
    # cosine rows: 0: 3 dropped -> (1, 0), cooling first (wrong); 1: own first; 2: parse failure ->
    # shown order (own first, not counted among parsed); 3: 2 first, 1 appended -> heating (wrong)
    c = got["cosine"]
    assert (c["n"], c["own_first"], c["first_shown_first"], c["parse_fail"]) == (4, 0.5, 0.5, 1)
    assert c["own_first_parsed"] == 1 / 3
    lo, hi = c["own_first_ci95"]
    assert lo < 0.5 < hi
    # reversed rows: "2,1" picks the own type shown second; "1,2" (first shown) does not
    r = got["reversed"]
    assert (r["n"], r["own_first"], r["first_shown_first"], r["own_first_parsed"]) == (2, 0.5, 0.5, 0.5)
    with pytest.raises(ValueError):
        mod.score(rows, texts[:3], skills)   # one answer per row


def test_pool_games_pools_seeds_game_by_game_and_refuses_bad_pairs(tmp_path):
    import pytest

    mod = _script("pool_games")
    write = lambda arm, cond, wins: _write_eval(tmp_path / arm, cond, wins)  # noqa: E731

    write("full", "without_library", [False, False, True, False])
    write("full", "with_library", [True, False, True, False])      # seed 0: +1 game of 4
    write("full1", "without_library", [False, True, False, False])
    write("full1", "with_library", [True, True, False, True])      # seed 1: +2 games of 4
    pairs = [f"{tmp_path}/full:without_library={tmp_path}/full:with_library",
             f"{tmp_path}/full1:without_library={tmp_path}/full1:with_library"]
    out = mod.pooled_lines(pairs, ["valid_unseen"], "pooled", "skill1", "d", "cmd")
    # per-game means: base (0, .5, .5, 0), arm (1, .5, .5, .5) -> delta (1 + .5) / 4 = 0.375
    assert len(out) == 1 and out[0]["runs"] == 2 and out[0]["n"] == 4
    assert out[0]["delta"] == pytest.approx(0.375) and out[0]["per_run"] == [pytest.approx(0.25), pytest.approx(0.5)]
    assert out[0]["arm_only"] == 3 and out[0]["baseline_only"] == 0
    # bootstrap over 4 games of per-game deltas (1, 0, 0, .5): a resample is all zeros with p = 1/16 > 2.5 %,
    # so lo = 0; the 97.5 % quantile lies between the estimate and 0.75 (p(mean >= 0.875) < 2.5 %)
    lo, hi = out[0]["delta_ci95"]
    assert lo == 0.0 and 0.375 <= hi <= 0.75
    f = tmp_path / "summary.jsonl"
    f.write_text(json.dumps({"comparison": "other", "delta": 0.0}) + "\n")
    for _ in range(2):                                              # replaces its own lines, keeps the rest
        mod.main(sum((["--pair", p] for p in pairs), []) + ["--splits", "valid_unseen", "--name", "pooled",
                                                           "--summary", str(f), "--write"])
    got = [json.loads(x) for x in f.read_text().splitlines()]
    assert [g["comparison"] for g in got] == ["other", "pooled"]
    assert got[1]["delta"] == pytest.approx(0.375) and got[1]["pairs"] == pairs and got[1]["runs"] == 2
    fresh = tmp_path / "new" / "summary.jsonl"                       # --write starts a missing summary
    fresh.parent.mkdir()
    mod.main(["--pair", pairs[0], "--splits", "valid_unseen", "--name", "one", "--summary", str(fresh), "--write"])
    assert json.loads(fresh.read_text())["delta"] == pytest.approx(0.25)
    with pytest.raises(FileNotFoundError, match="valid_seen"):
        mod.pooled_lines(pairs, ["valid_seen"], "p", "skill1", "d", "cmd")
    with pytest.raises(ValueError, match="BASE=ARM"):
        mod.pooled_lines([pairs[0].replace("=", ",")], ["valid_unseen"], "p", "skill1", "d", "cmd")
    with pytest.raises(ValueError, match="ARM_FOLDER:CONDITION"):
        mod.pooled_lines([f"{tmp_path}/full={tmp_path}/full:with_library"], ["valid_unseen"], "p", "skill1", "d", "cmd")


def test_summarize_reads_the_lambda1_zero_arm_against_grpo_and_full(tmp_path, capsys):
    """learning.sh SKILL1_L1Z=1 (campaign 14) and SKILL1_UTIL=1 (campaign 16): summarize.py pairs
    skill1_l1z and skill1_util with GRPO (with and without its library), with itself, and with
    the full arm; the seed comes from config.json."""
    import pytest

    mod = _script("summarize")

    def write(arm, cond, wins):
        _write_eval(tmp_path / "runs" / arm, cond, wins)
        (tmp_path / "runs" / arm / "config.json").write_text(json.dumps({"seed": 4}))

    write("skill1_grpo", "without_library", [False, False, True, False])
    write("skill1_full", "without_library", [False, False, False, False])
    write("skill1_full", "with_library", [True, False, False, False])
    write("skill1_l1z", "without_library", [True, True, True, False])
    write("skill1_l1z", "with_library", [True, True, True, True])
    write("skill1_util", "without_library", [True, False, True, True])    # campaign 16's util-only arm
    write("skill1_util", "with_library", [True, True, False, True])
    write("skill1_sft", "without_library", [False, True, False, False])
    write("skill1_sftnt", "without_library", [True, True, False, True])   # SKILL1_NOTHINK's no-think SFT
    write("skill1_grpo_rc", "without_library", [True, False, True, True])   # SKILL1_RC's released-code GRPO
    write("skill1_grpo_traj", "without_library", [False, True, True, True])  # SKILL1_TRAJ's trajectory weighting
    write("skill1_full_rc", "with_library", [True, True, True, False])   # SKILL1_FULL_RC's released-code full arm
    write("skill1_full_rc", "without_library", [False, False, True, True])
    write("skill1_grpo_rc_lr", "without_library", [False, True, False, True])   # SKILL1_RC_LR's lower-lr rc arm
    write("skill1_grpo_rc_b", "without_library", [True, True, True, True])   # SKILL1_RC_BATCH's 16 x 8 rc arm
    assert mod.main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--date", "t"]) == 0
    capsys.readouterr()
    got = {x["comparison"]: x for x in map(json.loads, (tmp_path / "out/summary.jsonl").read_text().splitlines())
           if "comparison" in x}
    # hand-computed over the 4 paired games (arm - baseline successes / 4)
    want = {"lambda1=0: full with library - GRPO w/o library": (0.75, 3, 0),
            "lambda1=0: full with - without its library": (0.25, 1, 0),
            "lambda1=0: full without library - GRPO w/o library": (0.5, 2, 0),
            "lambda1=0 - lambda1=0.3, both full with library": (0.75, 3, 0),
            "full without library - GRPO w/o library": (-0.25, 0, 1),
            "headline: full with library - GRPO w/o library": (0.0, 1, 1),
            "util only: full without library - GRPO w/o library": (0.5, 2, 0),
            "util only: full with library - GRPO w/o library": (0.5, 3, 1),
            "util only: full with - without its library": (0.0, 1, 1),
            "util only - full, both without library": (0.75, 3, 0),
            "no-think SFT - SFT (the answer format alone)": (0.5, 2, 0),
            "no-think SFT - GRPO w/o library": (0.5, 3, 1),
            "released-code objective - paper objective, both GRPO w/o library": (0.5, 2, 0),
            "GRPO w/o library, released-code objective - SFT only": (0.5, 3, 1),
            "GRPO w/o library, trajectory-weighted paper objective - SFT only": (0.5, 2, 0),
            "trajectory-weighted - token-weighted paper objective, both GRPO w/o library": (0.5, 2, 0),
            "released-code objective - trajectory-weighted paper objective, both GRPO w/o library": (0.0, 1, 1),
            "released-code objective, headline: full with library - GRPO w/o library": (0.0, 1, 1),
            "released-code objective, full: with - without its library": (0.25, 2, 1),
            "released-code objective, full with library - SFT only": (0.5, 2, 0),
            "released-code objective, full without library - GRPO w/o library": (-0.25, 0, 1),
            "GRPO w/o library, released-code objective at SKILL1_RC_LR's learning rate - SFT only": (0.25, 1, 0),
            "released-code objective: SKILL1_RC_LR's learning rate - the campaign's, both GRPO w/o library":
                (-0.25, 1, 2),
            "GRPO w/o library, released-code objective with SKILL1_RC_BATCH's episodes a step - SFT only": (0.75, 3, 0),
            "released-code objective: SKILL1_RC_BATCH's episodes a step - the config's, both GRPO w/o library":
                (0.25, 1, 0)}
    for name, (delta, arm_only, base_only) in want.items():
        line = got[name]
        assert line["delta"] == pytest.approx(delta), name
        assert (line["arm_only"], line["baseline_only"], line["seed"], line["n"]) == (arm_only, base_only, 4, 4), name


def test_summarize_marks_pairs_off_common_random_numbers(tmp_path, capsys):
    """summarize.py writes ``crn`` per comparison: True where both arms' (seed, eval.temperature)
    agree (the chunk size, eval.batch_size, does not matter), False (and a printed warning) where
    the temperature differs, and None where a config.json is missing."""
    mod = _script("summarize")

    def write(arm, wins, batch, temperature=0.4):
        _write_eval(tmp_path / "runs" / arm, "without_library", wins)
        if batch is not None:
            (tmp_path / "runs" / arm / "config.json").write_text(
                json.dumps({"seed": 0, "eval": {"batch_size": batch, "temperature": temperature}}))

    write("skill1_sft", [False, True, False, False], 140)
    write("skill1_grpo_rc", [True, False, True, True], 64)
    write("skill1_grpo_rc_lr", [False, True, False, True], 140, temperature=0.7)
    write("skill1_grpo", [True, True, False, False], None)
    assert mod.main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--date", "t"]) == 0
    out = capsys.readouterr().out
    got = {x["comparison"]: x for x in map(json.loads, (tmp_path / "out/summary.jsonl").read_text().splitlines())
           if "comparison" in x}
    assert got["GRPO w/o library, released-code objective - SFT only"]["crn"] is True
    lr = "GRPO w/o library, released-code objective at SKILL1_RC_LR's learning rate - SFT only"
    assert got[lr]["crn"] is False and got[lr]["delta"] == 0.25    # still paired by game
    assert f"WARNING: {lr} (valid_unseen): not on common random numbers" in out
    assert "(0, 0.4) vs (0, 0.7)" in out
    assert got["GRPO w/o library - SFT only"]["crn"] is None


def test_learning_sh_skill1_model_switch_names_the_allowed_policies(tmp_path):
    """learning.sh SKILL1_MODEL (campaign 15): "qwen" is accepted (the arm table is built and the
    status lists the Skill1 arms); another name stops with exit 2 and its message before anything
    starts, as SKILL1_L1Z=1 with SKILL1_SEEDS does."""
    import os
    import pathlib
    import subprocess

    repo = pathlib.Path(__file__).resolve().parents[1]

    def run(**env):
        full = {**os.environ, "DRY": "1", "DRY_MODEL": str(tmp_path / "unused"), "ARMSET": "skill1",
                "L": str(tmp_path / "L"), "OUT": str(tmp_path / "out"), **env}
        return subprocess.run(["bash", "benchmarks/device/learning.sh", "deadline", "1"], cwd=repo, env=full,
                              capture_output=True, text=True, timeout=60)

    ok = run(SKILL1_MODEL="qwen")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert [line.split(":")[0] for line in ok.stdout.splitlines() if line.startswith("-- ")] == [
        "-- skill1_sft", "-- skill1_grpo", "-- skill1_full"]
    bad = run(SKILL1_MODEL="llama")
    assert bad.returncode == 2 and "SKILL1_MODEL=llama: one of smol, qwen" in bad.stdout
    both = run(SKILL1_L1Z="1", SKILL1_SEEDS="2")
    assert both.returncode == 2 and "SKILL1_L1Z=1 / SKILL1_UTIL=1 run without SKILL1_SEEDS" in both.stdout
    third = run(SKILL1_L1Z="1", SKILL1_UTIL="1")
    assert third.returncode == 2 and "exclusive" in third.stdout

    # campaign 16's plan: the util-only arm (both auxiliary lambdas 0) as the third RL arm, and the
    # per-objective gradient norms on the full arm only
    env = {**os.environ, "ARMSET": "skill1", "SKILL1_MODEL": "qwen", "SKILL1_UTIL": "1", "SKILL1_OBJ_NORMS": "1",
           "L": str(tmp_path / "L")}
    plan = subprocess.run(["bash", "benchmarks/device/learning.sh", "plan"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=60)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    arms = {line.split()[0]: line for line in plan.stdout.splitlines()}
    assert list(arms) == ["skill1_sft", "skill1_grpo", "skill1_full", "skill1_util"]
    assert [arms[a].split()[1] for a in arms] == ["mem=0.14", "mem=0.26", "mem=0.26", "mem=0.26"]
    assert "--config.rl.lambda_rerank=0 --config.rl.lambda_distil=0" in arms["skill1_util"]
    assert [a for a in arms if "objective_grad_norms_every=5" in arms[a]] == ["skill1_full"]
    assert all("qwen2.5-coder-0.5b" in line and "--config.env.workers=5" in line
               for a, line in arms.items() if a != "skill1_sft")
    # session 18: every Skill1 arm pads a sampler call to >= 32 rows; SKILL1_ROWS=auto restores 8/16/32
    rows32 = "--config.model.batch_buckets=32,64,96,128,192,256,384,512,768,1024"
    assert all(rows32 in line for line in arms.values())
    auto = subprocess.run(["bash", "benchmarks/device/learning.sh", "plan"], cwd=repo, env={**env, "SKILL1_ROWS": "auto"},
                          capture_output=True, text=True, timeout=60)
    assert auto.returncode == 0 and auto.stdout.count("--config.model.batch_buckets=auto") == 4, auto.stdout
    # session 19: SKILL1_NOTHINK=1 adds an SFT-only arm whose warm start answers without the think
    # block (its own warm-start folder), with the base arms only
    nt = subprocess.run(["bash", "benchmarks/device/learning.sh", "plan"], cwd=repo,
                        env={**env, "SKILL1_UTIL": "0", "SKILL1_NOTHINK": "1"}, capture_output=True, text=True, timeout=60)
    assert nt.returncode == 0, nt.stdout + nt.stderr
    arms = {line.split()[0]: line for line in nt.stdout.splitlines()}
    assert list(arms) == ["skill1_sft", "skill1_grpo", "skill1_full", "skill1_sftnt"]
    assert arms["skill1_sftnt"].split()[1] == "mem=0.14" and "--config.steps=0" in arms["skill1_sftnt"]
    assert "--config.play.think=False --config.play.require_think=False" in arms["skill1_sftnt"]
    assert "ws/skill1nt" in arms["skill1_sftnt"] and "ws/skill1nt" not in arms["skill1_sft"]
    clash = subprocess.run(["bash", "benchmarks/device/learning.sh", "plan"], cwd=repo,
                           env={**env, "SKILL1_NOTHINK": "1"}, capture_output=True, text=True, timeout=60)
    assert clash.returncode == 2 and "SKILL1_NOTHINK=1 runs with the base arms only" in clash.stdout
    # session 24: SKILL1_RC=1 adds the GRPO arm under objective=released_code, base arms only; its share
    # is the Qwen RC_SHARE (0.195, session 32) beside GRPO's 0.30
    rc = subprocess.run(["bash", "benchmarks/device/learning.sh", "plan"], cwd=repo,
                        env={**env, "SKILL1_UTIL": "0", "SKILL1_OBJ_NORMS": "0", "SKILL1_RC": "1"},
                        capture_output=True, text=True, timeout=60)
    assert rc.returncode == 0, rc.stdout + rc.stderr
    arms = {line.split()[0]: line for line in rc.stdout.splitlines()}
    assert list(arms) == ["skill1_sft", "skill1_grpo", "skill1_full", "skill1_grpo_rc"]
    assert (arms["skill1_grpo_rc"].split()[1], arms["skill1_grpo"].split()[1]) == ("mem=0.195", "mem=0.30")
    smol = subprocess.run(["bash", "benchmarks/device/learning.sh", "plan"], cwd=repo,
                          env={**env, "SKILL1_MODEL": "smol", "SKILL1_UTIL": "0", "SKILL1_OBJ_NORMS": "0", "SKILL1_RC": "1"},
                          capture_output=True, text=True, timeout=60)
    arms = {line.split()[0]: line for line in smol.stdout.splitlines()}
    assert arms["skill1_grpo_rc"].split()[1] == "mem=0.30", smol.stdout    # SmolLM2: GRPO's share, unmeasured
    arms = {line.split()[0]: line for line in rc.stdout.splitlines()}
    assert "--config.ablation=no_library --config.objective=released_code" in arms["skill1_grpo_rc"]
    assert "objective=" not in arms["skill1_grpo"] and "ws/skill1 " in arms["skill1_grpo_rc"]
    clash = subprocess.run(["bash", "benchmarks/device/learning.sh", "plan"], cwd=repo,
                           env={**env, "SKILL1_RC": "1"}, capture_output=True, text=True, timeout=60)
    assert clash.returncode == 2 and "SKILL1_RC=1 runs with the base arms only" in clash.stdout


def test_run_shape_reads_steps_builds_grad_norms_and_the_success_trend(tmp_path, capsys):
    """run_shape.py on a hand-built 12-step Skill1 arm and a 2-step GRPO arm. Full arm: success
    0.2, 0.3 alternating over steps 0-9 and 0.3, 0.4 over steps 10-11; window 4 -> first 4 steps
    [0.2, 0.3, 0.2, 0.3] (mean 0.25), last 4 [0.2, 0.3, 0.3, 0.4] (mean 0.30). Welch: variances
    (ddof 1) 1/300 and 1/150, t = 0.05 / sqrt(1/1200 + 1/600) = 1.0, df = 0.0025^2 /
    ((1/1200)^2/3 + (1/600)^2/3) = 5.4 (Welch-Satterthwaite), p = 0.36. grad norm 0.1 at step 0,
    then 0.5 on odd steps and 2.2, 2.4, ..., 3.0 on even ones -> median of the 11 after step 0 is
    0.5; clipped (> clip_norm 1.0) 5 of 12 (steps 2, 4, 6, 8, 10). The full arm also logged
    its parts (rl.objective_grad_norms_every): grad_norm_util 0.1 * step, grad_norm_rerank 2.0 at
    every step, grad_norm_distil 0.0 on even steps and 0.2 on odd ones -> medians over steps 1-11:
    util 0.6 (step 6), rerank 2.0, distil 0.2 (6 odd of 11); the GRPO arm has none: its cell -."""
    from scipy.stats import t as student_t

    rs = _script("run_shape")
    full = tmp_path / "skill1_full"
    full.mkdir()
    (full / "config.json").write_text(json.dumps({"train": {"clip_norm": 1.0}}))
    rows = []
    for i in range(12):
        rows.append({"step": i, "elapsed": 30.0 * (i + 1), "time/step_s": 40.0 if i == 0 else 20.0 + i,
                     "time/sampling_s": 8.0, "time/environment_s": 9.0, "time/update_s": 3.0,
                     "compile/builds": 5 if i == 0 else (1 if i in (3, 7) else 0),
                     "compile/build_s": 15.0 if i == 0 else (2.5 if i in (3, 7) else 0.0),
                     "util/kl": 0.001 * i, "distil/kl": 0.002 * i, "distil/tokens": 100.0,
                     "grad_norm": 0.1 if i == 0 else (2.0 + i / 10 if i % 2 == 0 else 0.5),
                     "success_rate": (0.2 if i % 2 == 0 else 0.3) + (0.1 if i >= 10 else 0.0),
                     "reranked_episodes": 0 if i == 0 else 4, "rerank_ndcg": 0.0 if i == 0 else 0.9 + i / 100,
                     "distil_parse_rate": 1.0 if i < 6 else 0.5, "rerank/tokens": 40.0, "util/tokens": 900.0,
                     "grad_norm_util": 0.1 * i, "grad_norm_rerank": 2.0, "grad_norm_distil": 0.2 * (i % 2),
                     "memory/peak_gb": 10.0 + 0.5 * min(i, 4), "memory/limit_gb": 40.0,
                     "groups_mixed": 0.25 if i < 6 else 0.5})
    (full / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    grpo = tmp_path / "skill1_grpo"
    grpo.mkdir()
    (grpo / "metrics.jsonl").write_text("".join(json.dumps(
        {"step": i, "elapsed": 60.0, "time/step_s": 30.0, "success_rate": 0.5, "grad_norm": 0.07,
         "util/kl": 0.01, "distil/tokens": 0.0, "distil_parse_rate": 0.0}) + "\n" for i in range(2)))
    (tmp_path / "skill1_sft").mkdir()          # no metrics: not an RL arm, no row

    s = rs.arm_shape(full, window=4)
    assert (s["steps"], s["rl_min"], s["median_step_s"]) == (12, 6.0, 26.0)    # 21..31 -> median 26
    assert (s["step0_s"], s["step0_build_s"], s["builds_after_step0"], s["build_s_after_step0"]) == (40.0, 15.0, 2, 5.0)
    assert s["final_kl_util"] == pytest.approx(0.011) and s["final_kl_distil"] == pytest.approx(0.022)
    assert s["kl_util_last5"] == pytest.approx(0.009)                  # steps 7-11: 0.007 ... 0.011
    assert (s["peak_gb"], s["limit_gb"]) == (12.0, 40.0)                # 10 + 0.5 x 4 from step 4 on
    assert s["groups_mixed_mean"] == pytest.approx(0.375)                # 6 steps at 0.25, 6 at 0.5
    assert (s["grad_norm_step0"], s["steps_clipped"]) == (0.1, 5)
    assert s["grad_norm_median_after"] == 0.5
    assert (s["success_first"], s["success_last"]) == pytest.approx((0.25, 0.30))
    assert s["success_welch_p"] == pytest.approx(2 * student_t.sf(1.0, 5.4), rel=1e-6)
    assert s["success_welch_p"] == pytest.approx(0.36, abs=0.001)
    assert (s["ndcg_first"], s["ndcg_last"]) == pytest.approx((0.925, 0.995))   # steps 1-4, 8-11
    assert (s["distil_parse_first_half"], s["distil_parse_second_half"]) == (1.0, 0.5)
    parts = s["grad_norm_median_after_by_objective"]
    assert list(parts) == ["distil", "rerank", "util"]                   # order of the <name>/tokens keys
    assert parts == pytest.approx({"util": 0.6, "rerank": 2.0, "distil": 0.2})
    g = rs.arm_shape(grpo, window=4)
    assert g["final_kl_distil"] is None and "distil_parse_first_half" not in g and "ndcg_first" not in g
    assert g["kl_util_last5"] == pytest.approx(0.01) and "peak_gb" not in g     # 2 steps; no memory logged
    assert "groups_mixed_mean" not in g
    assert "grad_norm_median_after_by_objective" not in g
    assert "per objective" not in rs.table([g], 4) and rs.table([g], 4).splitlines()[1] == "|" + "---|" * 11
    assert g["success_welch_p"] is None                          # zero variance on both sides

    assert rs.main([str(tmp_path), "--window", "4", "--jsonl", str(tmp_path / "shape.jsonl")]) == 0
    out = capsys.readouterr().out
    assert [line.split(" |")[0] for line in out.splitlines()[2:]] == ["| skill1_full", "| skill1_grpo"]
    assert "| 0.100 / 0.500 / 5 of 12 |" in out and "| 0.250 / 0.300 (0.36) |" in out
    assert out.splitlines()[0].endswith("| grad norm per objective: median after step 0 |")
    assert out.splitlines()[2].endswith("| distil 0.200 / rerank 2.000 / util 0.600 |")
    assert out.splitlines()[3].endswith("| – |")                        # the GRPO arm: none logged
    lines = [json.loads(x) for x in (tmp_path / "shape.jsonl").read_text().splitlines()]
    assert [x["arm"] for x in lines] == ["skill1_full", "skill1_grpo"] and "run_shape.py" in lines[0]["command"]
    with pytest.raises(SystemExit, match="no arm"):
        rs.main([str(tmp_path / "skill1_sft")])


def test_heldout_curve_pairs_each_step_and_the_final_eval_with_the_sft_arm(tmp_path, capsys):
    """heldout_curve.py (eval.at_steps): per arm the held-out points in step order then "final",
    each with its Wilson interval and its paired difference from the SFT arm on the same games;
    an arm without eval_steps/ is left out, a point on other games is refused."""
    from skillax.evaluation.stats import wilson_interval

    mod = _script("heldout_curve")
    _write_eval(tmp_path / "skill1_sft", "without_library", [False, False, True, False])
    grpo = tmp_path / "skill1_grpo"
    _write_eval(grpo / "eval_steps" / "step_12", "without_library", [True, False, True, False])
    _write_eval(grpo / "eval_steps" / "step_3", "without_library", [False, False, False, False])
    _write_eval(grpo, "without_library", [True, True, True, False])
    _write_eval(tmp_path / "skill1_full", "without_library", [True, True, True, True])   # no curve
    # training invalid-action rate 0.002 up to step 14, 0.99 from step 15 (campaign 15's GRPO)
    (grpo / "metrics.jsonl").write_text("".join(
        json.dumps({"step": k, "invalid_action_rate": 0.002 if k < 15 else 0.99}) + "\n" for k in range(20)))
    rows = mod.curve_rows(tmp_path)
    got = [(r["arm"], r["point"], r["successes"], r["delta"], r["arm_only"], r["baseline_only"]) for r in rows]
    # hand-computed: SFT wins game 2 only
    assert got == [("skill1_grpo", "3", 0, pytest.approx(-0.25), 0, 1),
                   ("skill1_grpo", "12", 2, pytest.approx(0.25), 1, 0),
                   ("skill1_grpo", "final", 3, pytest.approx(0.5), 2, 0)]
    assert rows[1]["ci95"] == list(wilson_interval(2, 4)) and rows[1]["split"] == "valid_unseen"
    assert {r["format_flip_step"] for r in rows} == {15}
    assert mod.format_flip_step(tmp_path / "skill1_full") is None                         # no metrics
    assert mod.main([str(tmp_path), "--out", str(tmp_path / "h.jsonl")]) == 0
    printed = capsys.readouterr().out
    assert "| skill1_grpo | valid_unseen | 12 | 0.500" in printed and printed.rstrip().endswith("| 15 |")
    assert len((tmp_path / "h.jsonl").read_text().splitlines()) == 3
    assert mod.main([str(tmp_path)]) == 0                        # default: CAMPAIGN_DIR/heldout.jsonl
    assert (tmp_path / "heldout.jsonl").read_text() == (tmp_path / "h.jsonl").read_text()
    _write_eval(grpo / "eval_steps" / "step_20", "without_library", [True, True])            # 2 of the 4 games
    with pytest.raises(ValueError, match="different games"):
        mod.curve_rows(tmp_path)


def test_learning_sh_rc_seeds_plan_and_the_wait_follows_the_launched_arms(tmp_path):
    """learning.sh SKILL1_RC_SEEDS="0 1" (session 26, campaign 18): per seed k an SFT arm with its
    own warm-start folder and the released-code GRPO arm loading it, both with --config.seed=k, in
    place of the base arms (0.14 + 0.30 of the H200 per seed); it refuses other Skill1 switches, a
    seed in SKILL1_EXTRA and a seed outside 0..9. A wait/status call lists the arms in $L/arms (the
    launch writes them) whatever its own environment says."""
    import os
    import pathlib
    import subprocess

    repo = pathlib.Path(__file__).resolve().parents[1]
    L = tmp_path / "L"

    def sh(part, *args, **env):
        full = {k: v for k, v in os.environ.items() if not k.startswith(("SKILL1_", "SKIP", "ONLY"))}
        full.update(ARMSET="skill1", SKILL1_MODEL="qwen", L=str(L), OUT=str(tmp_path / "out"), DRY="1",
                    DRY_MODEL=str(tmp_path / "unused"), **env)
        return subprocess.run(["bash", "benchmarks/device/learning.sh", part, *args], cwd=repo, env=full,
                              capture_output=True, text=True, timeout=60)

    plan = sh("plan", SKILL1_RC_SEEDS="0 1", SKILL1_EXTRA="--config.train.lr=1e-5 --config.rl.kl_coef=0.05")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    arms = {line.split()[0]: line for line in plan.stdout.splitlines()}
    assert list(arms) == ["skill1_sft_s0", "skill1_grpo_rc_s0", "skill1_sft_s1", "skill1_grpo_rc_s1"]
    # the Qwen rc share (RC_SHARE 0.195, PROTOCOL.md session 32: campaign 19's rc arm peaked at 20.1 GB)
    assert [arms[a].split()[1] for a in arms] == ["mem=0.14", "mem=0.195", "mem=0.14", "mem=0.195"]
    for k in (0, 1):
        sft, rc = arms[f"skill1_sft_s{k}"], arms[f"skill1_grpo_rc_s{k}"]
        assert f"--config.seed={k} " in sft and f"--config.seed={k} " in rc
        assert "--config.steps=0" in sft and f"save_dir={L}/ws/skill1_s{k} " in sft
        assert f"load_dir={L}/ws/skill1_s{k} " in rc and "--config.objective=released_code" in rc
        assert "--config.ablation=no_library" in rc and "--config.train.lr=1e-5" in rc
        # the rc arms' KL is pinned after SKILL1_EXTRA (the last override wins): campaign 17's 0.01
        assert rc.index("kl_coef=0.05") < rc.index("--config.rl.kl_coef=0.01 --config.rl.kl_estimator=k3")
        assert "kl_coef=0.05" in sft and "kl_coef=0.01" not in sft
    for env, msg in (({"SKILL1_RC": "1"}, "SKILL1_RC_SEEDS runs alone"),
                     ({"SKILL1_EXTRA": "--config.seed=2"}, "take it out of SKILL1_EXTRA"),
                     ({"SKILL1_RC_SEEDS": "0 12"}, "each seed one of 0..9")):
        bad = sh("plan", **{"SKILL1_RC_SEEDS": "0 1", **env})
        assert bad.returncode == 2 and msg in bad.stdout, (env, bad.stdout)

    # SKILL1_TRAJ=1: the paper objective with rl.util_weighting=trajectory, GRPO's share, beside
    # SKILL1_RC's arm (SKIP the token-weighted GRPO arm to fit); not with SKILL1_RC_SEEDS
    traj = sh("plan", SKILL1_TRAJ="1", SKILL1_RC="1", SKIP="skill1_grpo skill1_full")
    assert traj.returncode == 0, traj.stdout + traj.stderr
    arms = {line.split()[0]: line for line in traj.stdout.splitlines()}
    assert list(arms) == ["skill1_sft", "skill1_grpo_rc", "skill1_grpo_traj"]
    assert arms["skill1_grpo_traj"].split()[1] == "mem=0.30"
    assert "--config.ablation=no_library --config.rl.util_weighting=trajectory" in arms["skill1_grpo_traj"]
    assert "objective=" not in arms["skill1_grpo_traj"] and "util_weighting" not in arms["skill1_grpo_rc"]
    both = sh("plan", SKILL1_TRAJ="1", SKILL1_RC_SEEDS="0")
    assert both.returncode == 2 and "SKILL1_TRAJ=1 runs with the base arms only" in both.stdout

    # SKILL1_FULL_RC=1: the full arm (library) under objective=released_code, the full arm's share,
    # beside SKILL1_RC's GRPO arm (issue 18's headline pair under that objective); base arms only
    frc = sh("plan", SKILL1_FULL_RC="1", SKILL1_RC="1", SKIP="skill1_grpo skill1_full")
    assert frc.returncode == 0, frc.stdout + frc.stderr
    arms = {line.split()[0]: line for line in frc.stdout.splitlines()}
    assert list(arms) == ["skill1_sft", "skill1_grpo_rc", "skill1_full_rc"]
    assert [arms[a].split()[1] for a in arms] == ["mem=0.14", "mem=0.195", "mem=0.32"]
    assert "--config.objective=released_code" in arms["skill1_full_rc"]
    assert "ablation" not in arms["skill1_full_rc"] and f"load_dir={L}/ws/skill1 " in arms["skill1_full_rc"]
    for env in ({"SKILL1_RC_SEEDS": "0"}, {"SKILL1_SEEDS": "1"}):
        bad = sh("plan", SKILL1_FULL_RC="1", **env)
        assert bad.returncode == 2 and ("SKILL1_FULL_RC=1 runs with the base arms only" in bad.stdout
                                        or "SKILL1_RC_SEEDS runs alone" in bad.stdout), (env, bad.stdout)

    # SKILL1_RC_LR=3e-6: SKILL1_RC's arm with the RL learning rate set last (after SKILL1_EXTRA's and
    # the KL pin), GRPO's share, base arms only; a value that is not a learning rate is refused
    lr = sh("plan", SKILL1_RC="1", SKILL1_RC_LR="3e-6", SKIP="skill1_grpo skill1_full",
            SKILL1_EXTRA="--config.seed=0 --config.train.lr=1e-5")
    assert lr.returncode == 0, lr.stdout + lr.stderr
    arms = {line.split()[0]: line for line in lr.stdout.splitlines()}
    assert list(arms) == ["skill1_sft", "skill1_grpo_rc", "skill1_grpo_rc_lr"]
    assert [arms[a].split()[1] for a in arms] == ["mem=0.14", "mem=0.195", "mem=0.195"]
    rc_lr = arms["skill1_grpo_rc_lr"]
    assert rc_lr.index("--config.train.lr=1e-5") < rc_lr.index(
        "--config.rl.kl_coef=0.01 --config.rl.kl_estimator=k3 --config.train.lr=3e-6")
    assert "train.lr=3e-6" not in arms["skill1_grpo_rc"] and "train.lr=3e-6" not in arms["skill1_sft"]
    assert "--config.objective=released_code" in rc_lr and f"load_dir={L}/ws/skill1 " in rc_lr
    # on an H100 (shares rescaled to keep their bytes: x 143771 / 81559) SFT and both rc arms fit
    for skip, want in (("skill1_grpo skill1_full", "skill1_grpo_rc=0.344 skill1_grpo_rc_lr=0.344 (sum 0.935)"),
                       ("skill1_grpo skill1_full skill1_grpo_rc", "skill1_grpo_rc_lr=0.344 (sum 0.591)")):
        h100 = sh("plan", SKILL1_RC="1", SKILL1_RC_LR="3e-6", SKIP=skip, GPU_MIB="81559")
        assert h100.returncode == 0 and want in h100.stdout, h100.stdout
    # on an H200 the shares are kept, and a plan over 0.95 of the card is refused as well (the
    # switches can add arms beside each other: here SKILL1_RC_LR's beside all three base arms)
    h200 = sh("plan", SKILL1_RC="1", SKILL1_RC_LR="3e-6", GPU_MIB="143771")
    assert "the shares sum to 1.150 > 0.95" in h200.stdout and "a launch would refuse" in h200.stdout, h200.stdout
    fits = sh("plan", SKILL1_RC="1", SKILL1_RC_LR="3e-6", SKIP="skill1_grpo skill1_full", GPU_MIB="143771")
    assert "sum" not in fits.stdout and "refuse" not in fits.stdout, fits.stdout
    for env, msg in (({"SKILL1_RC_LR": "abc"}, "a learning rate in (0, 1e-3)"),
                     ({"SKILL1_RC_LR": "0"}, "a learning rate in (0, 1e-3)"),
                     ({"SKILL1_RC_LR": "1e-3"}, "a learning rate in (0, 1e-3)"),
                     ({"SKILL1_RC_LR": "3e-6", "SKILL1_L1Z": "1"}, "SKILL1_RC_LR runs with the base arms only"),
                     ({"SKILL1_RC_LR": "0.01"}, "a learning rate in (0, 1e-3)"),
                     ({"SKILL1_RC_LR": "3e-6", "SKILL1_RC_SEEDS": "0"}, "SKILL1_RC_LR runs with the base arms only")):
        bad = sh("plan", **env)
        assert bad.returncode == 2 and msg in bad.stdout, (env, bad.stdout)

    # SKILL1_RC_BATCH=16x8: SKILL1_RC's arm with 16 tasks x 8 rollouts a step, set last, GRPO's share
    # (4x the rows a step: not the measured RC_SHARE),
    # 8 environment workers; base arms only; a malformed size or a group of one is refused
    b = sh("plan", SKILL1_RC="1", SKILL1_RC_BATCH="16x8", SKIP="skill1_grpo skill1_full", SKILL1_EXTRA="--config.seed=0")
    assert b.returncode == 0, b.stdout + b.stderr
    arms = {line.split()[0]: line for line in b.stdout.splitlines()}
    assert list(arms) == ["skill1_sft", "skill1_grpo_rc", "skill1_grpo_rc_b"]
    assert [arms[a].split()[1] for a in arms] == ["mem=0.14", "mem=0.195", "mem=0.30"]
    assert ("--config.rl.kl_estimator=k3 --config.tasks_per_step=16 --config.group_size=8"
            in arms["skill1_grpo_rc_b"]) and "--config.env.workers=8" in arms["skill1_grpo_rc_b"]
    assert "tasks_per_step=16" not in arms["skill1_grpo_rc"] and "--config.objective=released_code" in arms["skill1_grpo_rc_b"]
    for env, msg in (({"SKILL1_RC_BATCH": "16x1"}, "GRPO needs a group of >= 2"),
                     ({"SKILL1_RC_BATCH": "16*8"}, "TASKSxGROUP, each 1..99"),
                     ({"SKILL1_RC_BATCH": "16x8", "SKILL1_RC_SEEDS": "0"}, "SKILL1_RC_BATCH runs with the base arms only")):
        bad = sh("plan", **env)
        assert bad.returncode == 2 and msg in bad.stdout, (env, bad.stdout)

    # no $L/arms yet: the status names the arms this environment would start
    before = sh("deadline", "1", SKILL1_RC_SEEDS="2")
    assert [x.split(":")[0] for x in before.stdout.splitlines() if x.startswith("-- ")] == [
        "-- skill1_sft_s2", "-- skill1_grpo_rc_s2"]
    # after a launch wrote $L/arms (twice for one arm: a relaunch), a call without that environment
    # follows the file, once per arm, and `wait` returns as soon as each of them logged rc=
    (L / "arms").write_text("skill1_sft_s2\nskill1_grpo_rc_s2\nskill1_sft_s2\n")
    after = sh("deadline", "1")
    assert [x.split(":")[0] for x in after.stdout.splitlines() if x.startswith("-- ")] == [
        "-- skill1_sft_s2", "-- skill1_grpo_rc_s2"]
    for n in ("skill1_sft_s2", "skill1_grpo_rc_s2"):
        (L / "logs" / f"{n}.log").write_text("rc=0\n")
    done = sh("wait", "100")
    assert done.returncode == 0 and "-- skill1_grpo_rc_s2: rl_steps=0 eval_files=0 rc=0" in done.stdout, done.stdout


def test_device_scripts_detach_background_jobs_from_the_calls_streams():
    """Every `setsid ... &` line of benchmarks/device/*.sh is one command with stdin, stdout and
    stderr redirected: `[ ... ] || setsid cmd > f &` backgrounds a subshell that holds the call's
    stdout until the command ends (session 26: a launch piped to `tail` never returned)."""
    import pathlib
    import re

    lines = [(p.name, i, line) for p in sorted((pathlib.Path(__file__).resolve().parents[1] /
                                              "benchmarks/device").glob("*.sh"))
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if "setsid" in line and re.search(r"[^&]&\s*$", line)]
    assert len(lines) >= 4
    for name, i, line in lines:
        assert "||" not in line and "&&" not in line, f"{name}:{i}: {line}"
        assert "< /dev/null" in line and "2>&1" in line and re.search(r">>? ?\S", line), f"{name}:{i}: {line}"


def test_summarize_and_heldout_curve_pair_each_rc_seed_with_its_own_sft_arm(tmp_path, capsys):
    """learning.sh SKILL1_RC_SEEDS: summarize.py pairs skill1_grpo_rc_s<k> with skill1_sft_s<k> (never
    across seeds), labels both arms without the suffix and takes the seed from config.json;
    heldout_curve.py pairs each held-out point with the arm's own seed's SFT arm."""
    mod = _script("summarize")
    runs = tmp_path / "runs"
    for arm, seed, wins in (("skill1_sft_s0", 0, [False, True, False, False]),
                            ("skill1_grpo_rc_s0", 0, [True, True, True, False]),
                            ("skill1_sft_s1", 1, [True, True, True, True]),
                            ("skill1_grpo_rc_s1", 1, [False, True, True, True])):
        _write_eval(runs / arm, "without_library", wins)
        (runs / arm / "config.json").write_text(json.dumps({"seed": seed}))
    _write_eval(runs / "skill1_grpo_rc_s1" / "eval_steps" / "step_6", "without_library", [True, True, False, False])
    assert mod.main([str(runs), "--out", str(tmp_path / "out"), "--date", "t"]) == 0
    lines = [json.loads(x) for x in (tmp_path / "out" / "summary.jsonl").read_text().splitlines()]
    arms = sorted((x["arm"], x["seed"], x["success"]) for x in lines if "comparison" not in x)
    assert arms == [("grpo_rc", 0, 0.75), ("grpo_rc", 1, 0.75), ("sft", 0, 0.25), ("sft", 1, 1.0)]
    pairs = {x["comparison"]: x for x in lines if "comparison" in x}
    assert set(pairs) == {"seed 0, GRPO w/o library, released-code objective - SFT only",
                          "seed 1, GRPO w/o library, released-code objective - SFT only"}
    s0 = pairs["seed 0, GRPO w/o library, released-code objective - SFT only"]
    s1 = pairs["seed 1, GRPO w/o library, released-code objective - SFT only"]
    assert (s0["delta"], s0["arm_only"], s0["baseline_only"], s0["seed"]) == (pytest.approx(0.5), 2, 0, 0)
    assert (s1["delta"], s1["arm_only"], s1["baseline_only"], s1["seed"]) == (pytest.approx(-0.25), 0, 1, 1)
    assert s1["baseline"] == "skill1_sft_s1:without_library"
    capsys.readouterr()
    rows = _script("heldout_curve").curve_rows(runs)
    got = [(r["arm"], r["point"], r["baseline"], r["delta"]) for r in rows]
    # seed 1's SFT won all 4: step 6 (2 won) is -0.5 from it, the final (3 won) -0.25
    assert got == [("skill1_grpo_rc_s1", "6", "skill1_sft_s1", pytest.approx(-0.5)),
                   ("skill1_grpo_rc_s1", "final", "skill1_sft_s1", pytest.approx(-0.25))]


def test_learning_sh_wait_on_a_machine_without_a_launch_says_so_at_once(tmp_path):
    """A wait / collect call that finds no launch ($L/arms absent: the machine was released
    between calls and came back bare) exits 3 with a message at once, instead of sleeping its
    seconds and listing the arms at 0 steps (session 30)."""
    import os
    import pathlib
    import subprocess
    import time

    repo = pathlib.Path(__file__).resolve().parents[1]
    env = {**os.environ, "DRY": "1", "DRY_MODEL": str(tmp_path / "unused"), "ARMSET": "skill1",
           "L": str(tmp_path / "L"), "OUT": str(tmp_path / "out")}
    for part in ("wait", "collect"):
        t0 = time.monotonic()
        r = subprocess.run(["bash", "benchmarks/device/learning.sh", part, "300"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 3 and "NO LAUNCH ON THIS MACHINE" in r.stdout, r.stdout + r.stderr
        assert time.monotonic() - t0 < 30


def test_train_trend_linear_trend_and_pooling_hand_computed():
    tt = _script("train_trend")
    # y = 0, 1, 0, 1: centred steps -1.5 .. 1.5 (sum of squares 5), slope 1.0 / 5 = 0.2, change over
    # 3 steps 0.6; residuals -0.2, 0.6, -0.6, 0.2 (RSS 0.8, 2 dof, s^2 0.4); half-width
    # t(0.975, 2) x sqrt(0.4 / 5) x 3 = 4.302653 x 0.282843 x 3 = 3.650922
    t = tt.linear_trend([0, 1, 0, 1])
    assert t["change"] == pytest.approx(0.6) and t["resid_sd"] == pytest.approx(0.4 ** 0.5)
    assert (t["lo"], t["hi"]) == pytest.approx((0.6 - 3.650922, 0.6 + 3.650922), abs=1e-5) and t["n"] == 4
    # an exact line has a zero-width interval; a known per-step part is subtracted first
    assert tt.linear_trend([0.1, 0.2, 0.3, 0.4])["hi"] == pytest.approx(0.3)
    off = [0.5, -0.2, 0.3, 0.0, 0.1]
    t = tt.linear_trend([o + 0.05 * s for s, o in enumerate(off)], off)
    assert (t["change"], t["lo"], t["hi"]) == pytest.approx((0.2, 0.2, 0.2))
    with pytest.raises(ValueError, match=">= 3 finite"):
        tt.linear_trend([0.1, 0.2])
    with pytest.raises(ValueError, match=">= 3 finite"):
        tt.linear_trend([0.1, float("nan"), 0.2])
    # pooled over runs: 0.1 and 0.3 -> mean 0.2, sd 0.141421, half t(0.975, 1) x 0.141421 / sqrt(2) = 1.270620
    p = tt.pooled([0.1, 0.3])
    assert (p["mean"], p["sd"], p["runs"]) == pytest.approx((0.2, 0.141421, 2), abs=1e-6)
    assert (p["lo"], p["hi"]) == pytest.approx((0.2 - 1.270620, 0.2 + 1.270620), abs=1e-5)
    assert tt.pooled([0.3]) == {"mean": 0.3, "lo": 0.3, "hi": 0.3, "sd": 0.0, "runs": 1}


def test_train_trend_task_effects_recover_a_known_difficulty_and_slope():
    """Noise-free steps y = a_r + b_r s + mean of the step's task effects: the effects of other
    runs' steps come back up to a constant, and a held-out run's slope comes back exactly
    although its raw steps mix easy and hard tasks."""
    import numpy as np

    tt = _script("train_trend")
    rng = np.random.default_rng(0)
    n_tasks, T = 12, 3
    delta = rng.normal(0, 0.3, n_tasks)

    def run(a, b, steps):
        tasks = np.array([rng.permutation(n_tasks)[:T] for _ in range(steps)])
        s = np.arange(steps) - (steps - 1) / 2
        return {"tasks": tasks, "y": a + b * s + delta[tasks].mean(1)}

    others = [run(0.5, 0.01, 20), run(0.4, -0.02, 25), run(0.6, 0.0, 30)]
    got = tt.task_effects(others, n_tasks, ridge=1e-9)
    assert got - got.mean() == pytest.approx(delta - delta.mean(), abs=1e-5)
    held = run(0.3, 0.004, 16)
    raw, adj = tt.linear_trend(held["y"]), tt.linear_trend(held["y"], got[held["tasks"]].mean(1))
    assert adj["change"] == pytest.approx(0.004 * 15, abs=1e-5) and adj["resid_sd"] < 1e-5
    assert raw["resid_sd"] > 0.05                    # the task draw is what the raw fit sees
    with pytest.raises(ValueError, match="at least one other run"):
        tt.task_effects([], n_tasks)


def test_train_trend_replays_a_real_runs_task_stream(tmp_path):
    """campaign_2026-12-07's rc arm (seed 0, 25 steps x 8 tasks): the replayed TaskStream gives
    every task id its play_samples.jsonl logged (100 of 100), and a log that disagrees stops the
    run with the step, the task and both ids named."""
    import pathlib
    import shutil

    tt = _script("train_trend")
    arm = tt.RESULTS / "campaign_2026-12-07/skill1_grpo_rc"
    try:
        got = tt.run_steps(arm, {})
    except Exception as e:  # noqa: BLE001 - ALFWorld data absent
        if "alfworld" not in str(e).lower():
            raise
        pytest.skip(f"ALFWorld tasks unavailable: {e}")
    assert got["checked"] == 100 and got["tasks"].shape == (25, 8) and got["seed"] == 0
    assert got["y"][0] == pytest.approx(0.59375) and got["objective"] == "released_code"
    bad = tmp_path / "arm"
    shutil.copytree(arm, bad, ignore=shutil.ignore_patterns("eval", "*.png"))
    lines = (bad / "play_samples.jsonl").read_text().splitlines()
    rec = json.loads(lines[3])
    true_id = rec["samples"][0]["task_id"]
    rec["samples"][0]["task_id"] = "valid_train/made_up"
    lines[3] = json.dumps(rec)
    (bad / "play_samples.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"step 3 task 0 logged 'valid_train/made_up', the replayed stream gives "
                                         + repr(true_id).replace(".", r"\.")):
        tt.run_steps(pathlib.Path(bad), {})
    # a step logged twice (or missing) breaks the replay's order: refused, not misaligned
    (bad / "play_samples.jsonl").unlink()
    metrics = (bad / "metrics.jsonl").read_text().splitlines()
    (bad / "metrics.jsonl").write_text("\n".join(metrics + metrics[-1:]) + "\n")
    with pytest.raises(ValueError, match="RL steps are not 0..25 once each"):
        tt.run_steps(pathlib.Path(bad), {})
