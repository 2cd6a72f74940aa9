"""benchmarks/device/jaxcache.sh: the XLA compilation cache travels between leases in parts that
come back through $OUT (<= 16 MiB a file) and go out in two carry folders; the device unpacks it
only once every part is there (a partial join would leave truncated cache entries)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "device" / "jaxcache.sh"


def _sh(*args, cwd, env=None):
    if shutil.which("split") is None or shutil.which("tar") is None:
        pytest.skip("coreutils split / tar not on PATH")
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=cwd, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, check=True).stdout


def test_pack_place_unpack_round_trip_waits_for_every_part(tmp_path):
    device, out, here = tmp_path / "device", tmp_path / "out", tmp_path / "here"
    for d in (device / "jaxcache", out, here):
        d.mkdir(parents=True)
    rng = __import__("random").Random(0)
    entries = {f"jit_step-{i:02d}": rng.randbytes(700_000) for i in range(4)}   # incompressible
    for name, data in entries.items():
        (device / "jaxcache" / name).write_bytes(data)

    msg = _sh("pack", str(device), str(out), cwd=tmp_path, env={"PART": "1m"})
    parts = sorted(p.name for p in out.glob("jaxcache.tgz.part_*"))
    assert parts == ["jaxcache.tgz.part_aa", "jaxcache.tgz.part_ab", "jaxcache.tgz.part_ac"], msg
    assert (out / "jaxcache.tgz.nparts").read_text().strip() == "3"
    assert all((out / p).stat().st_size <= 1 << 20 for p in parts)

    _sh("place", str(out), cwd=here)
    assert sorted(p.name for p in (here / ".dk5").iterdir()) == ["jaxcache.tgz.nparts"] + parts[:2]
    assert sorted(p.name for p in (here / ".dk6").iterdir()) == ["jaxcache.tgz.nparts"] + parts[2:]

    k = tmp_path / "k"   # kit.sh copies each carried folder into K, one call at a time
    shutil.copytree(here / ".dk5", k)
    assert "2 of 3 parts" in _sh("unpack", str(k), cwd=here)
    assert not (k / "jaxcache").exists()
    shutil.copytree(here / ".dk6", k, dirs_exist_ok=True)
    assert "4 entries unpacked" in _sh("unpack", str(k), cwd=here)
    for name, data in entries.items():
        assert (k / "jaxcache" / name).read_bytes() == data
    assert _sh("unpack", str(k), cwd=here) == ""   # once per machine


def test_pack_leaves_room_for_the_results_and_skips_a_missing_cache(tmp_path):
    device, out = tmp_path / "device", tmp_path / "out"
    (device / "jaxcache").mkdir(parents=True)
    out.mkdir()
    (device / "jaxcache" / "big").write_bytes(__import__("random").Random(1).randbytes(2 << 20))
    msg = _sh("pack", str(device), str(out), cwd=tmp_path, env={"OUT_MIB": "1"})
    assert "not packed (room in OUT" in msg and not list(out.iterdir())
    # the results already in OUT count: 2 MiB of cache beside 2.5 MiB of results in a 4 MiB OUT
    (out / "learning.tgz").write_bytes(b"r" * (5 << 19))
    msg = _sh("pack", str(device), str(out), cwd=tmp_path, env={"OUT_MIB": "4"})
    assert "not packed" in msg and [p.name for p in out.iterdir()] == ["learning.tgz"]
    # more than the 4 parts .dk5 and .dk6 carry
    msg = _sh("pack", str(device), str(out), cwd=tmp_path, env={"OUT_MIB": "60", "PART": "256k"})
    assert "in 9 parts: not packed" in msg and [p.name for p in out.iterdir()] == ["learning.tgz"]
    assert "none in" in _sh("pack", str(out), str(out), cwd=tmp_path)
