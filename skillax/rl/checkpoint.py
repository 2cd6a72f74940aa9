"""Checkpoints with orbax's ``CheckpointManager``: device state + host-state payload.

One checkpoint step holds three items (orbax ``Composite``):

* ``state``  -- the device pytree, conventionally ``{"params", "opt_state", "step", "rng"}``
  (any pytree of arrays works). New-style typed PRNG keys are stored as their raw
  ``key_data`` and re-wrapped on restore with the target's key implementation.
* ``host``   -- a JSON-able dict (``JsonSave``): data-iterator state, method loop counters,
  the Skill1 library records, config echo, ...
* ``files``  -- optional ``{name: bytes}`` blobs (skill repo / library snapshots; see
  :func:`pack_dir` / :func:`unpack_dir`), stored as uint8 arrays.

Keep-last-k through ``max_to_keep``; :meth:`Checkpointer.latest_step`. Restoring onto a
different mesh: pass a ``target`` whose leaves carry the new shardings (``jax.Array``s
already placed as wanted, or ``jax.ShapeDtypeStruct(shape, dtype, sharding=...)``), or pass
``shardings`` separately; orbax reads each array straight into the requested layout.

Damaged checkpoints (issue 23, item 2): :meth:`Checkpointer.restore_latest` restores the
newest step that reads back completely (every array, the host JSON, the files); a newer step
that fails to read while an older one reads with the same target is damaged (a truncated
tensor file, a cut ``host/metadata``): it is moved to ``<directory>.damaged/<step>-<unix
time>`` with a one-line warning naming it and its cause, so the run resumes from the older
step and can save that step number again. When no step reads, :class:`CheckpointError` says
so in one paragraph and nothing is moved (the cause may be the target, not the files).

Saves are synchronous by default (``async_save=False``) so a crash right after ``save``
never loses that step; with ``async_save=True`` call :meth:`wait` before exiting.
Reference: orbax-checkpoint 0.12 ``CheckpointManager`` / ``args.Composite`` API.
"""
from __future__ import annotations

import io
import pathlib
import shutil
import tarfile
import time
from typing import Any, Mapping

import jax
import numpy as np
import orbax.checkpoint as ocp


def _is_key(x) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and jax.dtypes.issubdtype(dt, jax.dtypes.prng_key)


def _keys_to_data(tree):
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def _abstract(x, sharding=None):
    """Leaf -> ShapeDtypeStruct with its target sharding (typed keys -> their key_data)."""
    if _is_key(x):
        s = jax.eval_shape(jax.random.key_data, x)
        return jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding)
    sh = sharding if sharding is not None else getattr(x, "sharding", None)
    return jax.ShapeDtypeStruct(np.shape(x), np.dtype(x.dtype), sharding=sh)


class CheckpointError(RuntimeError):
    """No checkpoint under a directory reads back (each step's cause in the message)."""


def _root_cause(e: BaseException) -> str:
    """``Type: first line`` of the innermost exception of ``e``'s chain (orbax wraps the
    actual read error -- e.g. tensorstore's OUT_OF_RANGE on a cut file -- several times)."""
    seen = []
    while e is not None and e not in seen:
        seen.append(e)
        e = e.__cause__ or e.__context__
    root = seen[-1]
    text = (str(root).strip().splitlines() or [""])[0]
    return f"{type(root).__name__}: {text[:300]}"


class Checkpointer:
    """Keep-last-k checkpoints of (device state, host JSON, host files) under ``directory``.

    Args:
      directory: root folder (created); one sub-folder per step.
      max_to_keep: keep the newest k steps (None keeps all).
      async_save: orbax background writes (call :meth:`wait` / :meth:`close`).
    """

    def __init__(self, directory: str | pathlib.Path, *, max_to_keep: int | None = 3, async_save: bool = False):
        self.directory = pathlib.Path(directory).absolute()
        opts = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                            enable_async_checkpointing=async_save)
        handlers = {"state": ocp.StandardCheckpointHandler(), "host": ocp.JsonCheckpointHandler(),
                    "files": ocp.StandardCheckpointHandler()}
        self._mgr = ocp.CheckpointManager(self.directory, options=opts, item_handlers=handlers)

    def save(self, step: int, state: Any, host: Mapping[str, Any] | None = None,
             files: Mapping[str, bytes] | None = None, *, force: bool = True) -> bool:
        """Save ``state`` (pytree of arrays), ``host`` (JSON-able dict) and ``files`` at ``step``.

        Returns True when a checkpoint was written. Raises ValueError for a non-dict host
        payload or non-bytes files (before anything is written).
        """
        host = dict(host or {})
        if not isinstance(host, dict):
            raise ValueError("host payload must be a JSON-able dict")
        files = dict(files or {})
        for k, v in files.items():
            if not isinstance(v, (bytes, bytearray)):
                raise ValueError(f"files[{k!r}] must be bytes, got {type(v).__name__}")
        key_impls = [str(jax.random.key_impl(x)) if _is_key(x) else None for x in jax.tree.leaves(state)]
        items = {"state": ocp.args.StandardSave(_keys_to_data(state)),
                 "host": ocp.args.JsonSave({"payload": host, "file_names": sorted(files),
                                            "key_impls": key_impls})}
        if files:
            items["files"] = ocp.args.StandardSave(
                {k: np.frombuffer(bytes(v), np.uint8) if len(v) else np.zeros((0,), np.uint8)
                 for k, v in files.items()})
        return self._mgr.save(int(step), args=ocp.args.Composite(**items), force=force)

    def latest_step(self) -> int | None:
        """Newest saved step, or None when the directory holds no checkpoint."""
        return self._mgr.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self._mgr.all_steps())

    def restore(self, step: int | None = None, *, target: Any, shardings: Any = None
                ) -> tuple[Any, dict, dict[str, bytes]]:
        """Restore (state, host, files) of ``step`` (default: the latest).

        Args:
          target: pytree with the structure of the saved state (concrete arrays or
            ShapeDtypeStructs, e.g. ``jax.eval_shape(init_fn)``); its leaves give shapes,
            dtypes, and -- unless ``shardings`` is given -- shardings.
          shardings: optional pytree of ``jax.sharding.Sharding`` matching ``target``: restore
            onto this (possibly different) mesh.
        Raises:
          FileNotFoundError: no checkpoint (or not that step) in the directory.
        """
        step = self.latest_step() if step is None else int(step)
        if step is None or step not in self._mgr.all_steps():
            raise FileNotFoundError(f"no checkpoint step {step} under {self.directory}")
        if shardings is None:
            abstract = jax.tree.map(_abstract, target)
        else:
            abstract = jax.tree.map(_abstract, target, shardings)
        meta = self._mgr.restore(step, args=ocp.args.Composite(host=ocp.args.JsonRestore()))["host"]
        items = {"state": ocp.args.StandardRestore(abstract), "host": ocp.args.JsonRestore()}
        if meta["file_names"]:
            items["files"] = ocp.args.StandardRestore()
        out = self._mgr.restore(step, args=ocp.args.Composite(**items))
        leaves, treedef = jax.tree.flatten(out["state"])
        impls = meta.get("key_impls") or [None] * len(leaves)
        if len(impls) != len(leaves):
            raise ValueError(f"checkpoint has {len(impls)} state leaves, target {len(leaves)}")
        state = treedef.unflatten([x if impl is None else jax.random.wrap_key_data(x, impl=impl)
                                   for x, impl in zip(leaves, impls)])
        files = {k: np.asarray(v).tobytes() for k, v in (out["files"] or {}).items()} if meta["file_names"] else {}
        return state, dict(meta["payload"]), files

    def restore_latest(self, *, target: Any, shardings: Any = None, quarantine: bool = True,
                       log=print) -> tuple[int, Any, dict, dict[str, bytes]] | None:
        """(step, state, host, files) of the newest checkpoint that reads back completely
        (:meth:`restore`); None when the directory holds no checkpoint.

        A newer step that fails while an older one reads is damaged: with ``quarantine`` it is
        moved out of the way (module docstring); ``log`` gets one line per damaged step
        naming its folder, the cause and the step used instead. Raises CheckpointError (one
        paragraph, every step's cause; nothing moved) when no step reads."""
        steps = self.all_steps()[::-1]
        bad: list[tuple[int, str]] = []
        for step in steps:
            try:
                state, host, files = self.restore(step, target=target, shardings=shardings)
            except Exception as e:  # noqa: BLE001 -- any read failure: try the next older step
                bad.append((step, _root_cause(e)))
                continue
            for b, cause in bad:
                where = self.directory / str(b)
                if quarantine:
                    moved = self.quarantine(b)
                    log(f"warning: checkpoint step {b} ({where}) is damaged ({cause}); moved to {moved}; "
                        f"resuming from step {step}")
                else:
                    log(f"warning: checkpoint step {b} ({where}) is damaged ({cause}); using step {step}")
            return step, state, host, files
        if not bad:
            return None
        causes = "; ".join(f"step {b} ({self.directory / str(b)}): {c}" for b, c in bad)
        raise CheckpointError(
            f"none of the {len(bad)} checkpoints under {self.directory} could be restored -- {causes}. "
            "If the files are damaged, move that folder away (the run then starts over) or put back a "
            "copy; if they are intact, the model or its config differs from the one that saved them "
            "(use the original config or another workdir). Nothing was changed on disk.")

    def quarantine(self, step: int) -> pathlib.Path:
        """Move step ``step``'s folder to ``<directory>.damaged/<step>-<unix time>`` (kept for
        inspection, out of orbax's sight) and return the new path."""
        dest = self.directory.parent / f"{self.directory.name}.damaged" / f"{int(step)}-{int(time.time())}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(self.directory / str(int(step))), str(dest))
        self._mgr.reload()
        return dest

    def restore_arrays(self, step: int | None = None) -> tuple[Any, dict, dict[str, bytes]]:
        """(state as a tree of numpy arrays, host, files) of ``step`` (default: the latest),
        read through the host CPU device whatever layout wrote it -- for inspecting or
        exporting a run without building its model (``mode=export``, tests). Typed PRNG keys
        come back as their raw key data. Raises FileNotFoundError."""
        step = self.latest_step() if step is None else int(step)
        if step is None or step not in self._mgr.all_steps():
            raise FileNotFoundError(f"no checkpoint step {step} under {self.directory}")
        cpu = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])
        tree = self._mgr.item_metadata(step)["state"]
        tree = getattr(tree, "tree", tree)
        abstract = jax.tree.map(lambda m: jax.ShapeDtypeStruct(tuple(m.shape), np.dtype(m.dtype), sharding=cpu),
                                tree, is_leaf=lambda m: hasattr(m, "shape") and hasattr(m, "dtype"))
        meta = self._mgr.restore(step, args=ocp.args.Composite(host=ocp.args.JsonRestore()))["host"]
        items = {"state": ocp.args.StandardRestore(abstract)}
        if meta["file_names"]:
            items["files"] = ocp.args.StandardRestore()
        out = self._mgr.restore(step, args=ocp.args.Composite(**items))
        state = jax.tree.map(np.asarray, out["state"])
        files = {k: np.asarray(v).tobytes() for k, v in (out["files"] or {}).items()} if meta["file_names"] else {}
        return state, dict(meta["payload"]), files

    def restore_host(self, step: int | None = None) -> tuple[dict, dict[str, bytes]]:
        """(host payload, files) of ``step`` (default: the latest) without the device state --
        for inspecting a run (``mode=library``) with no model. Raises FileNotFoundError."""
        if step is None:           # the newest step that reads (a damaged newer one is skipped)
            steps, bad = self.all_steps()[::-1], []
            for s in steps:
                try:
                    return self.restore_host(s)
                except Exception as e:  # noqa: BLE001
                    bad.append(f"step {s}: {_root_cause(e)}")
                    if s != steps[-1]:
                        print(f"warning: checkpoint step {s} ({self.directory / str(s)}) is damaged "
                              f"({_root_cause(e)}); reading the previous one")
            if bad:
                raise CheckpointError(f"no checkpoint under {self.directory} could be read: {'; '.join(bad)}")
            raise FileNotFoundError(f"no checkpoint step under {self.directory}")
        step = int(step)
        if step not in self._mgr.all_steps():
            raise FileNotFoundError(f"no checkpoint step {step} under {self.directory}")
        meta = self._mgr.restore(step, args=ocp.args.Composite(host=ocp.args.JsonRestore()))["host"]
        files = {}
        if meta["file_names"]:
            out = self._mgr.restore(step, args=ocp.args.Composite(files=ocp.args.StandardRestore()))
            files = {k: np.asarray(v).tobytes() for k, v in (out["files"] or {}).items()}
        return dict(meta["payload"]), files

    def wait(self) -> None:
        """Block until pending async saves are on disk."""
        self._mgr.wait_until_finished()

    def close(self) -> None:
        self._mgr.wait_until_finished()
        self._mgr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def pack_dir(path: str | pathlib.Path) -> bytes:
    """A directory as gzip'd tar bytes (relative paths, sorted, mtimes zeroed: deterministic)."""
    path = pathlib.Path(path)
    if not path.is_dir():
        raise ValueError(f"{path} is not a directory")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for p in sorted(path.rglob("*")):
            info = tar.gettarinfo(str(p), arcname=str(p.relative_to(path)))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if p.is_file():
                with open(p, "rb") as f:
                    tar.addfile(info, f)
            elif p.is_dir():
                tar.addfile(info)
    return buf.getvalue()


def unpack_dir(blob: bytes, path: str | pathlib.Path) -> pathlib.Path:
    """Extract :func:`pack_dir` bytes into ``path`` (created); refuses paths escaping it."""
    path = pathlib.Path(path)
    path.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        tar.extractall(path, filter="data")
    return path
