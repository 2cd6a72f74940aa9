"""``mode=plot`` (issue 23 item 7: a mode the registry listed but did not ship): redraw a
run's curves from its metrics.jsonl, no model loaded."""
import json

import pytest

from skillax import modes
from skillax.rl.metrics import MetricsWriter


def _config(**plot):
    from configs.plot import get_config

    c = get_config()
    for k, v in plot.items():
        c.plot[k] = v
    return c


def test_plot_draws_the_logged_metrics(tmp_path, capsys):
    w = MetricsWriter(tmp_path / "metrics.jsonl", total_steps=3)
    for step, (s, n) in enumerate([(0.25, 3), (0.5, 5), (0.75, 8)]):
        w.write(step, {"success_rate": s, "library_size": n, "note": "text is not drawn"})
    w.close()
    info = modes.run(_config(), str(tmp_path))
    assert info["keys"] == ["library_size", "success_rate"] and json.loads(capsys.readouterr().out.splitlines()[-1]) == info
    png = (tmp_path / "metrics.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    info = modes.run(_config(keys="success_rate", out=str(tmp_path / "s.png")), str(tmp_path))
    assert info == {"png": str(tmp_path / "s.png"), "keys": ["success_rate"]}


def test_plot_errors(tmp_path):
    with pytest.raises(ValueError, match="--workdir"):
        modes.run(_config(), None)
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        modes.run(_config(), str(tmp_path))
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0, "success_rate": 0.5}) + "\n")
    with pytest.raises(ValueError, match="not found"):
        modes.run(_config(keys="reward"), str(tmp_path))
    with pytest.raises(ValueError, match="unknown config.mode 'eval'"):
        c = _config()
        c.mode = "eval"
        modes.run(c, str(tmp_path))
