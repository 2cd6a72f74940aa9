"""Skill1's run contract on CPU (the learning campaign): a tiny random policy (SmolLM2
tokenizer) on real TextWorld games, real MiniLM and SQLite library.

Run 1 = the ``sft`` arm: SFT (play + distil + query demos, skills in half the play
transcripts), ``steps = 0``, warm start saved; evaluates ``without_library`` only, on two
splits. Run 2 = the ``full`` arm: loads the warm start (SFT skipped), one RL step with the
learning-curve metrics, evaluates both conditions on both splits; its library is seeded from
the hand-written skills (``init_skills``) and ``skills/`` passes the Agent Skills validators.
Run 3 resumes run 2: its checkpoint wins over a warm start that does not exist (and over
``init_skills``: the library is not seeded again)."""

import json

import pytest

from skillax.config_defaults import skill1
from skillax.evaluation import read_records
from tests.methods.test_skillos_integration import tiny_model  # noqa: F401 (fixture)
from tests.methods.test_skills_wiring import HANDWRITTEN, assert_agent_skills

SPLITS = ("valid_seen", "valid_unseen")


def skill1_tiny_config(model_path: str, steps: int = 1):
    c = skill1(env_name="textworld")
    c.model.path = model_path
    c.model.dtype = "float32"
    c.model.max_len = 1280
    c.steps = steps
    c.tasks_per_step = 1
    c.group_size = 2
    c.checkpoint_every = 1
    c.env.tw_families = "tw-treasure_hunter:level=5"   # the default family's cached games
    c.env.tw_games_per_family = 2
    c.env.max_steps = 2
    c.rollout.query_tokens = 8
    c.rollout.rank_tokens = 8
    c.rollout.action_tokens = 8
    c.rollout.distil_tokens = 16
    c.rollout.distil_prompt_chars = 600
    c.play.max_admissible = 8
    c.play.max_obs_chars = 200
    c.play.max_skill_chars = 200
    c.train.lr = 1e-4
    c.train.total_steps = 2
    c.train.micro_batch = 2
    # 512 holds every RL row here (measured: batch_len 512 in both RL steps of the test below:
    # query, play and distil rows); 1280 covers model.max_len (config_check.check_buckets).
    # Was (1024, 1280): every update on rows padded to 1024
    c.train.length_buckets = (512, 1280)
    c.train.remat = False
    c.sft.steps = 0
    c.eval.n_tasks = 1
    c.eval.splits = ",".join(SPLITS)
    c.eval.batch_size = 1
    c.rl.skip_no_signal = False   # a tiny random policy wins nothing: keep its updates (the mechanics under test)
    return c


def _files(work):
    return sorted(p.name for p in (work / "eval").glob("*.jsonl"))


@pytest.mark.slow
def test_sft_arm_saves_warm_start_full_arm_loads_it_and_resume_wins(tiny_model, tmp_path, capsys):  # noqa: F811
    from skillax import modes

    ws = tmp_path / "ws"
    c = skill1_tiny_config(tiny_model, steps=0)
    c.sft.steps, c.sft.n_tasks, c.sft.batch_size, c.sft.max_len = 1, 2, 2, 1024
    c.sft.distil_demos = c.sft.query_demos = True
    c.sft.skill_fraction = 1.0
    c.warmstart.save_dir = str(ws)
    res = modes.run(c, str(tmp_path / "sft"))
    out = capsys.readouterr().out
    assert "SFT warm start:" in out and f"warm start saved to {ws}" in out
    sft = json.loads(out.split("SFT warm start:", 1)[1].splitlines()[0])
    assert sft["extra_transcripts"] == 4 and sum(sft["skill_episodes"].values()) == 2
    assert sft["updates"] == 1 and "steps" not in sft and sft["expert_env_steps"] >= 2   # issue 23 item 3
    assert json.loads((ws / "DONE.json").read_text())["summary"]["transcripts"] == sft["transcripts"]
    assert _files(tmp_path / "sft") == [f"without_library__{s}.jsonl" for s in SPLITS]
    assert set(res) == {"without_library", "library"} and set(res["without_library"]) == set(SPLITS)
    for s in SPLITS:
        (rec,) = read_records(tmp_path / "sft" / "eval" / f"without_library__{s}.jsonl")
        assert rec.retrieved == -1 and rec.extras == {"chosen_skill": None}
    assert not (tmp_path / "sft" / "metrics.jsonl").read_text().strip()      # no RL step

    c = skill1_tiny_config(tiny_model, steps=1)
    c.warmstart.load_dir = str(ws)
    c.warmstart.wait_s = 5.0
    c.init_skills = str(HANDWRITTEN)
    work = tmp_path / "full"
    res = modes.run(c, str(work))
    out = capsys.readouterr().out
    assert f"warm start loaded from {ws} (SFT skipped)" in out and "SFT warm start:" not in out
    assert "library seeded with 6 skills" in out
    assert _imported(work, step="0") == 6
    (m,) = [json.loads(x) for x in (work / "metrics.jsonl").read_text().splitlines()]
    for k in ("success_rate", "retrieval_rate", "library_size", "library_mean_utility", "rerank_ndcg",
              "distil_parse_ok", "distil_parse_rate", "library_tokens", "budget_evictions", "budget_rejections"):
        assert k in m, k
    assert m["budget_evictions"] == m["budget_rejections"] == 0          # library.token_budget = 0: off
    assert (m["library_tokens"] > 0) == (m["library_size"] > 0)
    assert _files(work) == sorted(f"{c}__{s}.jsonl" for c in ("with_library", "without_library") for s in SPLITS)
    for s in SPLITS:
        assert res["with_library"][s]["n"] == 1 and res["with_library"][s]["retrieval_rate"] is not None
        assert res["without_library"][s]["retrieval_rate"] is None
        (rec,) = read_records(work / "eval" / f"with_library__{s}.jsonl")
        assert rec.retrieved >= 0
    assert json.loads((work / "eval.json").read_text())["with_library"]["valid_seen"]["records"] == \
        "eval/with_library__valid_seen.jsonl"

    c = skill1_tiny_config(tiny_model, steps=2)
    c.warmstart.load_dir = str(tmp_path / "missing")                     # would raise if it were read
    c.eval.ablate_retrieval = False
    modes.run(c, str(work))
    out = capsys.readouterr().out
    assert "resumed from checkpoint: next step 1" in out and "library seeded" not in out
    assert [json.loads(x)["step"] for x in (work / "metrics.jsonl").read_text().splitlines()] == [0, 1]
    assert _imported(work, step="1") == 6


def _imported(work, step: str) -> int:
    """Skills of ``work/skills`` (all valid, provenance of this run and ``step``) imported ones."""
    from skillax.skills.skill_md import parse_skill_md

    n = 0
    for p in assert_agent_skills(work / "skills"):
        meta = parse_skill_md((p / "SKILL.md").read_text()).metadata
        assert (meta["method"], meta["run-id"], meta["step"]) == ("skill1", work.name, step)
        n += meta["source"] == "imported"
    return n
