"""The skills layer is host-side text/files: importing it must not pull jax (ARCHITECTURE.md)."""
import subprocess
import sys


def test_skills_layer_imports_no_jax():
    code = ("import sys, skillax.skills, skillax.skills.retrieval, skillax.skills.library; "
            "bad = [m for m in ('jax', 'flax', 'torch', 'sentence_transformers') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
