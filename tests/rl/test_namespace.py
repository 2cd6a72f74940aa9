"""The lazy skillax.rl namespace and its import hygiene."""
import subprocess
import sys

import skillax.rl as rl


def test_all_exports_resolve():
    for name in rl.__all__:
        assert getattr(rl, name) is not None, name


def test_ndcg_and_masks_free_of_heavy_imports():
    code = ("import sys, skillax.rl.ndcg; "
            "bad = [m for m in ('jax', 'orbax', 'grain', 'matplotlib') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
