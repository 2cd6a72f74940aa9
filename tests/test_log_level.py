"""Issue 23, item 6: orbax's absl INFO lines are hidden by default; "info" or absl's
--verbosity shows them again."""
import subprocess
import sys

import pathlib

import pytest
from absl import logging as absl_logging

import skillax
from skillax import log_level

ROOT = str(pathlib.Path(skillax.__file__).parent.parent)   # the checkout under test, not an installed copy

SCRIPT = """
import sys
from absl import app
def main(argv):
    import jax.numpy as jnp
    from skillax import log_level
    from skillax.rl.checkpoint import Checkpointer
    log_level.apply(sys.argv[1])
    with Checkpointer(sys.argv[2]) as ck:
        ck.save(0, {"w": jnp.zeros(3)}, {"a": 1})
    print("saved")
app.run(main, argv=[sys.argv[0]] + sys.argv[3:])
"""


def _info_lines(tmp_path, level, *flags):
    out = subprocess.run([sys.executable, "-c", SCRIPT, level, str(tmp_path / level / "ck"), *flags],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "saved"
    return [x for x in out.stderr.splitlines() if x.startswith("I") and "checkpoint" in x.lower()]


def test_quiet_by_default_and_info_on_request(tmp_path):
    assert _info_lines(tmp_path, "warning") == []
    assert len(_info_lines(tmp_path, "error", "--verbosity=0")) > 5   # the absl flag wins
    with pytest.raises(ValueError, match="log_level must be one of"):
        log_level.apply("loud")
    before = absl_logging.get_verbosity()
    try:
        log_level.apply("info")
        assert absl_logging.get_verbosity() == absl_logging.INFO
    finally:
        absl_logging.set_verbosity(before)
