"""Skill-alpha on CPU with a tiny random Llama (SmolLM2's real tokenizer, saved with
transformers) as editor and frozen worker, on real TextWorld games (no ../shared needed).

One full training unit: evidence chunk of real trajectories -> editor prompt -> G sampled
candidates -> control + edited-skill worker runs (lock-step game play) -> rollback rewards
-> GRPO rows -> one engine update; plus hand-written edits through the same tiny worker, the
inference writer, and the worker-call accounting (invalid edits spend none)."""
import functools
import json
import pathlib

import numpy as np
import pytest

from skillax.methods.skill_alpha.config import skill_alpha
from tests.models.hf_fixtures import save_hf_model


@functools.lru_cache(maxsize=1)
def _tiny_model_dir(root: str) -> str:
    from skillax.tokenizers.loader import load_tokenizer

    folder = pathlib.Path(root) / "tiny-llama-smollm2-tok"
    tok = load_tokenizer("smollm2")
    save_hf_model("llama_tied", folder, vocab_size=len(tok), layers=2)
    tok.save_pretrained(str(folder))
    return str(folder)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return _tiny_model_dir(str(tmp_path_factory.mktemp("model")))


def tiny_config(model_path: str):
    c = skill_alpha("experience")
    c.model.path = model_path
    c.model.dtype = "float32"
    c.model.max_len = 512
    c.steps = 1
    c.lanes = 1
    c.unit.group_size = 4
    c.unit.max_new_tokens = 12
    c.evidence.units_per_chunk = 2
    c.evidence.max_steps = 3
    c.evidence.max_traj_chars = 300
    c.evidence.max_prompt_tokens = 480
    c.evidence.n_evidence_per_family = 1
    c.evidence.n_anchor_per_family = 1
    c.env.name = "textworld"
    c.env.train_split = "train"
    c.env.eval_split = "train"
    c.env.max_steps = 2
    c.env.tw_games_per_family = 2
    c.env.families = ("tw-treasure_hunter/level=5", "tw-coin_collector/level=5")
    c.worker.action_tokens = 6
    c.worker.max_tokens = 16
    c.play.max_admissible = 6
    c.play.max_obs_chars = 120
    c.play.max_skill_chars = 400
    c.eval.n_tasks = 2
    c.train.lr = 1e-4
    c.train.total_steps = 2
    c.train.micro_batch = 4
    c.train.length_buckets = (512,)
    c.train.remat = False
    c.rl.skip_no_signal = False   # a tiny random policy wins nothing: keep its updates (the mechanics under test)
    return c


@pytest.fixture(scope="module")
def rig(tiny_model, tmp_path_factory):
    """Engine, frozen worker and the TextWorld setting (stream of real trajectories)."""
    from skillax.methods.common.engine import PolicyEngine
    from skillax.methods.skill_alpha import setting as setting_lib
    from skillax.methods.skill_alpha.loop import unit_config

    cfg = tiny_config(tiny_model)
    work = tmp_path_factory.mktemp("run")
    engine = PolicyEngine.create(cfg, work)
    worker = setting_lib.build_worker(cfg, engine)
    z0 = setting_lib.initial_skill(cfg)
    ucfg = unit_config(cfg)
    st = setting_lib.build_setting(cfg, worker, z0, work, ucfg.max_prompt_tokens)
    yield cfg, engine, worker, z0, ucfg, st, work
    st.scorer.close()
    engine.close()


def test_stream_from_real_trajectories(rig):
    cfg, engine, worker, z0, ucfg, st, work = rig
    assert len(st.stream) == 2                      # 2 TextWorld families x 1 chunk
    for item in st.stream.items:
        # evidence.source = "worker" (paper): the worker's own run; the walkthrough is teacher-only
        assert len(item.units) == 1 and "| worker]" in item.units[0]
        assert len(item.teacher_units) == 1 and "| expert]" in item.teacher_units[0]
        assert all(st.stream.tasks[a].family == item.family for a in item.anchor_ids)
        assert not set(item.anchor_ids) & {u.split("]")[0] for u in item.units}
    assert (work / "evidence_stream.json").exists()


def test_one_training_unit_and_update(rig):
    from skillax.methods.common.rows import build_batch
    from skillax.methods.skill_alpha import objectives as obj_lib
    from skillax.methods.skill_alpha.loop import _inputs, Lane, step_metrics
    from skillax.methods.skill_alpha.unit import run_units

    cfg, engine, worker, z0, ucfg, st, work = rig
    editor = engine.policy_sampler(1.0)
    calls0 = worker.usage.calls
    (res,), times = run_units(_inputs([Lane(0, 0, 0, z0)], st.stream, cfg), editor, st.scorer, ucfg)
    assert res.skipped is None and len(res.candidates) == 4
    assert all(c.generation is not None and len(c.generation.completion_ids) <= 12 for c in res.candidates)
    n_edit_runs = len({c.edit.skill.body for c in res.candidates if c.valid and c.action != "NOOP"})
    assert res.worker_jobs == 1 + n_edit_runs       # control + distinct valid edits only
    assert worker.usage.calls > calls0               # the control game was played by the frozen worker
    assert res.r_ctrl in (0.0, 1.0)
    assert all(c.reward == 0.0 for c in res.candidates if not c.valid)
    m = step_metrics([res], times)
    assert m["units"] == 1 and m["worker_jobs"] == res.worker_jobs and 0 <= m["valid_rate"] <= 1
    gens, advs, stats = obj_lib.training_rows([res])
    assert stats["rows"] == 4 and np.all(np.isfinite(advs["edit"]))
    objectives = obj_lib.objective_configs(cfg.rl)
    batch = build_batch(gens, advs, list(objectives), length_buckets=tuple(cfg.train.length_buckets),
                        rows_multiple=4, pad_id=int(engine.tokenizer.pad_token_id or 0))
    before = np.asarray(engine.state["params"]["final_norm"]).copy()
    tm = engine.train(batch, objectives)
    assert np.isfinite(tm["edit/loss"])
    assert np.abs(tm["edit/ratio_mean"] - 1.0) < 1e-3   # on-policy first update (PITFALLS 5)
    after = np.asarray(engine.state["params"]["final_norm"])
    assert not np.array_equal(before, after) or np.all(advs["edit"] == 0)


def test_hand_written_edits_with_tiny_worker(rig):
    """Valid edits do reach the worker (one game per distinct edited skill); invalid ones do not."""
    from skillax.methods.skill_alpha.unit import UnitInput, score_candidates

    cfg, engine, worker, z0, ucfg, st, work = rig
    item = st.stream.items[0]
    anchors = st.stream.draw_anchors(item, 1, seed=0)
    texts = ['<think>\nx</think>\n{"action": "CREATE", "content": "Read the goal, then follow it step by step."}',
             '<think>\nx</think>\n{"action": "NOOP"}',
             '<think>\nx</think>\n{"action": "PRUNE", "target": ["R1"]}',   # no rules yet: invalid
             "garbage"]
    played = st.scorer.jobs_run
    (res,) = score_candidates([UnitInput(z0, item.units, anchors, item.kind, item.family)], [texts],
                              st.scorer, ucfg)
    assert st.scorer.jobs_run - played == 2 == res.worker_jobs   # control + the CREATE
    assert [c.valid for c in res.candidates] == [True, True, False, False]
    r = res.rewards
    assert r[2] == r[3] == 0.0
    assert r[1] == (0.0 if res.candidates[0].r_edit > res.r_ctrl else 1.0)
    assert r[0] == (1.0 if res.candidates[0].r_edit > res.r_ctrl else 0.0)


def test_inference_writes_skill_folder(rig):
    from skillax.methods.skill_alpha.inference import action_histogram, infer, write_skill_folder
    from skillax.skills.rules import rules_of
    from skillax.skills.skill_md import parse_skill_md
    from skillax.skills.spec import check_skill_folder

    cfg, engine, worker, z0, ucfg, st, work = rig
    z, history, _ = infer(st.stream, engine.policy_sampler(0.0), z0, max_new_tokens=8,
                          max_prompt_tokens=ucfg.max_prompt_tokens)
    folder = write_skill_folder(work / "skill", z, history, provenance={"method": "skill_alpha", "step": 3})
    out = parse_skill_md((folder / "SKILL.md").read_text())
    assert (out.name, out.description, out.body) == (z.name, z.description, z.body) and folder.name == z.name
    assert rules_of(out) == rules_of(z)              # ids and the high-water mark survive the export
    assert check_skill_folder(folder).ok and out.metadata["method"] == "skill_alpha" and out.metadata["step"] == "3"
    rule_src = {k: v for k, v in out.metadata.items() if k.startswith("rule-")}
    assert set(rule_src) == {f"rule-{r.label}" for r in rules_of(z).rules}
    written = {rid for rec in history if rec["valid"] for rid in rec["after"]}
    for r in rules_of(z).rules:                      # z0 rules no valid edit rewrote say so
        assert (rule_src[f"rule-{r.label}"] == "z0") == (r.label not in written)
    recs = [json.loads(l) for l in (folder / "changelog.jsonl").read_text().splitlines()]
    assert len(recs) == len(st.stream) and {"action", "target", "before", "after", "valid"} <= set(recs[0])
    assert sum(action_histogram(history).values()) == len(st.stream)
    assert (folder / "CHANGELOG.md").read_text().startswith("# Changelog")
