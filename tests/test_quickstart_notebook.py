"""examples/quickstart.ipynb (issue 23 item 10): a plain nbformat-4 notebook without stored
outputs whose code cells, run in order in one namespace, train, evaluate, export and plot.

The notebook reads two settings from the environment (its "Settings" cell): ``SKILLAX_QUICK=1``
(smallest sizes: no SFT warm start, 1 RL step, short generations) and ``SKILLAX_MODEL``. Here the
model is a tiny random Qwen3 with SmolLM2's tokenizer: this test is about the notebook's calls
and what they write (the loop's mechanics); real TextWorld games, MiniLM retrieval and SQLite
library as in the notebook's SmolLM2 run. Nothing is learnt by a random model, so the checks are
on structure and counts, plus the seeded skill going through the run into the export."""
from __future__ import annotations

import json
import math
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
NB = REPO / "examples" / "quickstart.ipynb"


def _cells():
    nb = json.loads(NB.read_text(encoding="utf-8"))
    return nb, nb["cells"]


def test_notebook_is_plain_nbformat4_without_outputs():
    nb, cells = _cells()
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 5)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    ids = [c["id"] for c in cells]
    assert len(set(ids)) == len(ids) and all(i and len(i) <= 64 for i in ids)
    kinds = [c["cell_type"] for c in cells]
    assert set(kinds) == {"markdown", "code"} and kinds[0] == "markdown"
    for i, c in enumerate(cells):
        assert isinstance(c["source"], list) and c["metadata"] == {}
        if c["cell_type"] == "code":
            assert c["outputs"] == [] and c["execution_count"] is None, f"cell {c['id']} stores output"
            assert kinds[i - 1] == "markdown", f"code cell {c['id']} has no explanation before it"
            src = "".join(c["source"])
            compile(src, c["id"], "exec")      # plain Python: no shell escapes or magics
            assert not any(line.lstrip().startswith(("!", "%")) for line in src.splitlines())
    # the settings the test uses are the ones the notebook documents and reads
    src = "".join("".join(c["source"]) for c in cells)
    assert 'os.environ.get("SKILLAX_QUICK") == "1"' in src and 'os.environ.get("SKILLAX_MODEL", "smollm2")' in src


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tests.methods.test_skillos_integration import _tiny_model_dir

    return _tiny_model_dir(str(tmp_path_factory.mktemp("model")))


def test_quickstart_notebook_runs_and_writes_what_it_shows(tiny_model, tmp_path, monkeypatch, capsys):
    from skillax.skills.spec import check_skill_folder

    monkeypatch.setenv("SKILLAX_QUICK", "1")
    monkeypatch.setenv("SKILLAX_MODEL", tiny_model)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__main__"}
    _, cells = _cells()
    for c in cells:
        if c["cell_type"] == "code":
            exec(compile("".join(c["source"]), f"{NB.name}[{c['id']}]", "exec"), ns)
    out = capsys.readouterr().out

    assert ns["QUICK"] is True and ns["MODEL"] == tiny_model
    cfg, work = ns["cfg"], tmp_path / ns["WORKDIR"]
    assert (cfg.steps, cfg.sft.steps, cfg.eval.n_tasks, cfg.model.path) == (1, 0, 2, tiny_model)
    # metrics: one line per RL step, the columns the notebook prints, finite
    metrics = [json.loads(x) for x in (work / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == list(range(cfg.steps)) and ns["metrics"] == metrics
    for m in metrics:
        assert 0.0 <= m["success_rate"] <= 1.0 and m["library_size"] >= 1
        assert math.isfinite(m["util/loss"]) and m["updates"] >= 1 and m["rows"] >= cfg.group_size
    # evaluation: both conditions on the same two games, counts consistent with the records
    ev = json.loads((work / "eval.json").read_text())
    assert ns["summary"]["with_library"] == ev["with_library"]
    for cond in ("with_library", "without_library"):
        (split, s), = ev[cond].items()
        recs = [json.loads(x) for x in (work / "eval" / f"{cond}__{split}.jsonl").read_text().splitlines()]
        assert s["n"] == len(recs) == 2 and s["successes"] == sum(r["won"] for r in recs)
        assert 0.0 <= s["ci95"][0] <= s["success"] <= s["ci95"][1] <= 1.0
    assert {r.task_id for r in ns["with_lib"]} == {r.task_id for r in ns["without"]}
    assert "with - without the library: {'n': 2" in out
    # the skill written in the notebook: seeded, kept through the step, exported with provenance
    assert ev["library"]["size"] >= 1
    exported = sorted((tmp_path / "exported_skills").glob("*/SKILL.md"))
    assert exported and ns["report"].written and not ns["report"].skipped
    for f in exported:
        assert check_skill_folder(f.parent).ok
    texts = [f.read_text() for f in exported]
    mine = [t for t in texts if "source: imported" in t]
    assert len(mine) == 1 and 'take it with "take <object>"' in mine[0] and "method: skill1" in mine[0]
    # the plot, the restored policy (step 0 = the one RL step) and its HF export
    png = (work / "quickstart_curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert ns["trained"].step == cfg.steps - 1
    assert "model.safetensors" in ns["info"]["files"] and (work / "hf" / "config.json").is_file()
