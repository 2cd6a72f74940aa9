"""A skill repository: a directory of `<name>/SKILL.md` files with an append-only changelog.

* Every file write is atomic: temp file in the same folder -> write -> fsync -> `os.replace` ->
  fsync of the folder (set `durable=False` to skip the fsyncs for throw-away RL rollout repos;
  the temp-file + `os.replace` atomicity stays).
* Every mutating call appends one JSON line to `<root>/.changelog.jsonl`:
  `{"op", "args", "applied", "error", "step", "time"}` -- also for calls that fail validation.
* The repo keeps an in-memory dict name -> SKILL.md text. `snapshot()` shares that dict
  (copy-on-write: the next write copies it), so a snapshot per candidate edit costs O(1);
  `restore(snap)` rewrites only the files whose text differs and deletes the extra ones.
* `state()` / `load_state()` give a JSON-serialisable dict for checkpoints.
* A name can never address a path outside the repository: names must match
  `skill_md.NAME_RE` (no '/', '.', leading '-'), and the resolved path is checked to sit directly
  under the (resolved) root; symlinked skill folders/files are refused.
* Token budget (issue 22 item 7; `token_budget`, 0 = off): the repo's size is the sum of
  `count_tokens(SKILL.md text)` over its skills (`size_tokens()`; cached per skill). An
  `insert` or `update` that would push it over budget (`skills.budget.pushes_over`: above the
  budget and larger than before) raises `SkillBudgetError` (a `SkillRepoError`; logged as a
  failed call; nothing written). `import_skill`, `put`, `delete` and `restore` are not checked:
  seeded skills count towards the size, and a delete always shrinks it.
* Only strict-valid SKILL.md files are ever written (`render_skill_md` validates), so every file
  in the repo parses with `parse_skill_md`.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import tempfile
import time
import types
from typing import Any, Callable, Iterator, Mapping

from skillax.skills import budget as budget_lib
from skillax.skills.skill_md import (
    SkillDoc, SkillFormatError, make_skill, parse_skill_md, render_skill_md, validate_name,
)

SKILL_FILE = "SKILL.md"
CHANGELOG = ".changelog.jsonl"
STATE_FORMAT = "skillax.skill_repo/1"


class SkillRepoError(ValueError):
    """An operation on the repository failed; `.reason` says why (the repo is unchanged)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class SkillBudgetError(SkillRepoError):
    """An insert/update refused because it would push the repo over its token budget."""


@dataclasses.dataclass(frozen=True)
class RepoSnapshot:
    """Immutable view of the repository content: name -> SKILL.md text."""

    texts: Mapping[str, str]

    def __len__(self) -> int:
        return len(self.texts)


def _fsync_dir(path: pathlib.Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: pathlib.Path, text: str, *, durable: bool = True) -> None:
    """Write `text` (UTF-8) to `path` atomically: same-dir temp file, fsync, replace, fsync dir."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix="~")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        _fsync_dir(path.parent)


class SkillRepo:
    """Directory of skills. See the module docstring for guarantees.

    Args:
      root: folder (created if missing when `create`).
      durable: fsync files and folders on every write (default True).
      strict_load: when opening an existing folder, raise `SkillRepoError` on any skill folder
        (a sub-folder holding a SKILL.md; other entries are ignored) whose SKILL.md is not strict-valid or whose name differs from the folder; when False such
        folders are skipped and listed in `load_problems`.
      token_budget: tokens the whole repo may hold (module docstring; 0 = off).
      count_tokens: SKILL.md text -> tokens (`skills.budget.token_counter`; default its fallback).
    """

    def __init__(self, root: str | os.PathLike, *, durable: bool = True, create: bool = True,
                 strict_load: bool = True, token_budget: int = 0,
                 count_tokens: Callable[[str], int] | None = None):
        root = pathlib.Path(root)
        if create:
            root.mkdir(parents=True, exist_ok=True)
        if not root.is_dir():
            raise SkillRepoError(f"repository folder {root} does not exist")
        self.root = root.resolve()
        self.durable = durable
        self._texts: dict[str, str] = {}
        self._docs: dict[str, SkillDoc] = {}
        self._shared = False
        self.load_problems: list[str] = []
        self.token_budget = budget_lib.check_budget(token_budget)
        self.count_tokens = count_tokens or budget_lib.fallback_count
        self._ntok: dict[str, int] = {}       # name -> count_tokens(text), dropped on write/remove
        self._load(strict_load)

    # ------------------------------------------------------------------ reading
    def _load(self, strict: bool) -> None:
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False) \
                    or not os.path.lexists(os.path.join(entry.path, SKILL_FILE)):
                continue  # not a skill folder (no SKILL.md)
            problem = None
            try:
                path = self.path_of(entry.name)
                text = path.read_text(encoding="utf-8")
                doc = parse_skill_md(text)
                if doc.name != entry.name:
                    problem = f"{entry.name}/{SKILL_FILE}: name {doc.name!r} differs from its folder"
            except (SkillRepoError, SkillFormatError) as e:
                problem = f"{entry.name}/{SKILL_FILE}: {e.reason}"
            except (OSError, UnicodeDecodeError) as e:
                problem = f"{entry.name}/{SKILL_FILE}: {type(e).__name__}: {e}"
            if problem:
                if strict:
                    raise SkillRepoError(problem)
                self.load_problems.append(problem)
                continue
            self._texts[doc.name] = text
            self._docs[doc.name] = doc

    def path_of(self, name: str) -> pathlib.Path:
        """Path of `<root>/<name>/SKILL.md`; raises `SkillRepoError` for any name that could
        escape the repository (invalid name, symlinked folder/file, resolved path elsewhere)."""
        try:
            validate_name(name)
        except SkillFormatError as e:
            raise SkillRepoError(e.reason) from None
        folder = self.root / name
        if folder.is_symlink() or (folder / SKILL_FILE).is_symlink():
            raise SkillRepoError(f"skill folder {name!r} is a symlink; refused")
        path = (folder / SKILL_FILE).resolve()
        if path.parent.parent != self.root or path.parent.name != name:
            raise SkillRepoError(f"name {name!r} resolves outside the repository")
        return folder / SKILL_FILE

    def names(self) -> list[str]:
        return sorted(self._texts)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._texts

    def __len__(self) -> int:
        return len(self._texts)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> SkillDoc:
        """The skill called `name`; raises `SkillRepoError` if absent."""
        if not isinstance(name, str):
            raise SkillRepoError(f"skill name must be a string, got {type(name).__name__}")
        if name not in self._texts:
            raise SkillRepoError(f"no skill named {name!r}")
        doc = self._docs.get(name)
        if doc is None:
            doc = self._docs[name] = parse_skill_md(self._texts[name])
        return doc

    def text(self, name: str) -> str:
        self.get(name)
        return self._texts[name]

    def docs(self) -> list[SkillDoc]:
        return [self.get(n) for n in self.names()]

    def size_tokens(self, count_fn: Callable[[str], int] | None = None) -> int:
        """Sum of `count_fn(SKILL.md text)` over all skills (e.g. tokenizer length; for r_comp);
        default: the repo's own `count_tokens` (cached per skill)."""
        if count_fn is None or count_fn is self.count_tokens:
            return int(sum(self._skill_tokens(n) for n in self._texts))
        return int(sum(count_fn(t) for t in self._texts.values()))

    def _skill_tokens(self, name: str) -> int:
        n = self._ntok.get(name)
        if n is None:
            n = self._ntok[name] = int(self.count_tokens(self._texts[name]))
        return n

    def _check_budget(self, name: str, text: str) -> None:
        """Raise `SkillBudgetError` if writing `text` as `name` pushes the repo over budget."""
        if not self.token_budget:
            return
        before = self.size_tokens()
        after = before - (self._skill_tokens(name) if name in self._texts else 0) + int(self.count_tokens(text))
        if budget_lib.pushes_over(before, after, self.token_budget):
            raise SkillBudgetError(budget_lib.budget_reason(after, self.token_budget, "the repo"))

    def size_chars(self) -> int:
        return sum(len(t) for t in self._texts.values())

    # ------------------------------------------------------------------ changelog
    @property
    def changelog_path(self) -> pathlib.Path:
        return self.root / CHANGELOG

    def log(self, op: str, args: dict, applied: bool, error: str | None,
            step: int | None = None) -> None:
        """Append one record to the changelog (used for calls rejected before reaching the repo)."""
        self._log(op, args, applied, error, step)

    def _log(self, op: str, args: dict, applied: bool, error: str | None, step: int | None) -> None:
        rec = {"op": op, "args": args, "applied": applied, "error": error, "step": step,
               "time": time.time()}
        line = json.dumps(rec, ensure_ascii=True, default=repr) + "\n"
        with open(self.changelog_path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            if self.durable:
                os.fsync(f.fileno())

    def read_changelog(self) -> list[dict]:
        if not self.changelog_path.exists():
            return []
        with open(self.changelog_path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def _run(self, op: str, args: dict, step: int | None, fn: Callable[[], Any]) -> Any:
        try:
            out = fn()
        except (SkillRepoError, SkillFormatError) as e:
            self._log(op, args, False, e.reason, step)
            raise (type(e) if isinstance(e, SkillRepoError) else SkillRepoError)(e.reason) from None
        self._log(op, args, True, None, step)
        return out

    # ------------------------------------------------------------------ writing
    def _own(self) -> None:
        if self._shared:
            self._texts = dict(self._texts)
            self._shared = False

    def _write(self, doc: SkillDoc, text: str | None = None) -> SkillDoc:
        """Write `doc` (as `text`, already known to parse to `doc`, or freshly rendered)."""
        text = render_skill_md(doc) if text is None else text
        path = self.path_of(doc.name)
        if not path.parent.exists():
            path.parent.mkdir()
            if self.durable:
                _fsync_dir(self.root)
        atomic_write_text(path, text, durable=self.durable)
        self._own()
        self._texts[doc.name] = text
        self._docs[doc.name] = doc
        self._ntok.pop(doc.name, None)
        return doc

    def _remove(self, name: str) -> None:
        path = self.path_of(name)
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        if self.durable:
            _fsync_dir(path.parent)
        try:
            path.parent.rmdir()
            if self.durable:
                _fsync_dir(self.root)
        except OSError:
            pass  # folder holds other files (scripts, references): left in place
        self._own()
        self._texts.pop(name, None)
        self._docs.pop(name, None)
        self._ntok.pop(name, None)

    def insert(self, name: str, description: str, body: str = "", metadata: Mapping | None = None,
               *, step: int | None = None) -> SkillDoc:
        """Create a new skill; raises `SkillRepoError` if it exists or any field is invalid."""
        def fn():
            self.path_of(name)
            if name in self._texts:
                raise SkillRepoError(f"skill {name!r} already exists (use update)")
            doc = make_skill(name, description, body, metadata)
            text = render_skill_md(doc)
            self._check_budget(name, text)
            return self._write(doc, text)
        return self._run("insert", {"name": name, "description": description, "body": body,
                                    **({"metadata": metadata} if metadata else {})}, step, fn)

    def update(self, name: str, *, description: str | None = None, body: str | None = None,
               metadata: Mapping | None = None, step: int | None = None) -> SkillDoc:
        """Change only the given fields of an existing skill (at least one must be given)."""
        args = {k: v for k, v in (("name", name), ("description", description), ("body", body),
                                  ("metadata", metadata)) if v is not None}

        def fn():
            self.path_of(name)
            if name not in self._texts:
                raise SkillRepoError(f"no skill named {name!r} to update")
            if description is None and body is None and metadata is None:
                raise SkillRepoError("update needs at least one of description, body, metadata")
            old = self.get(name)  # the spec's license / compatibility / allowed-tools are kept
            doc = make_skill(
                name, old.description if description is None else description,
                old.body if body is None else body,
                old.metadata if metadata is None else metadata, license=old.license,
                compatibility=old.compatibility, allowed_tools=old.allowed_tools)
            text = render_skill_md(doc)
            self._check_budget(name, text)
            return self._write(doc, text)
        return self._run("update", args, step, fn)

    def delete(self, name: str, *, step: int | None = None) -> None:
        """Remove a skill (its SKILL.md, and its folder when empty)."""
        def fn():
            self.path_of(name)
            if name not in self._texts:
                raise SkillRepoError(f"no skill named {name!r} to delete")
            self._remove(name)
        self._run("delete", {"name": name}, step, fn)

    def import_skill(self, doc: SkillDoc, *, text: str | None = None, source: str | None = None,
                     step: int | None = None) -> SkillDoc:
        """Insert or overwrite an imported skill (`skills.importing`); `text`, when given, must
        parse strictly to `doc` and is written byte-for-byte. Logged as op "import"."""
        def fn():
            if text is not None and parse_skill_md(text) != doc:
                raise SkillRepoError(f"text of imported skill {doc.name!r} does not parse to it")
            return self._write(doc, text)
        return self._run("import", {"name": doc.name, "source": source, "verbatim": text is not None},
                         step, fn)

    def put(self, doc: SkillDoc, *, step: int | None = None) -> SkillDoc:
        """Insert or overwrite `doc` as is."""
        return self._run("put", {"name": doc.name, "description": doc.description,
                                 "body": doc.body}, step, lambda: self._write(doc))

    # ------------------------------------------------------------------ snapshots / state
    def snapshot(self) -> RepoSnapshot:
        """O(1) immutable snapshot (copy-on-write of the in-memory name -> text dict)."""
        self._shared = True
        return RepoSnapshot(types.MappingProxyType(self._texts))

    def restore(self, snap: RepoSnapshot | Mapping[str, str], *, step: int | None = None) -> int:
        """Make the repo equal to `snap`, touching only differing files. Returns files changed."""
        texts = snap.texts if isinstance(snap, RepoSnapshot) else snap
        written, deleted = [], []

        def fn():
            docs = {n: parse_skill_md(t) for n, t in texts.items() if self._texts.get(n) != t}
            for n, d in docs.items():
                if d.name != n:
                    raise SkillRepoError(f"snapshot entry {n!r} holds skill {d.name!r}")
            for n in [n for n in self._texts if n not in texts]:
                self._remove(n)
                deleted.append(n)
            for n, d in docs.items():
                self._write(d, texts[n])
                written.append(n)
            return len(written) + len(deleted)
        n = self._run("restore", {"written": written, "deleted": deleted}, step, fn)
        return n

    def state(self) -> dict:
        """JSON-serialisable checkpoint payload: {"format", "skills": {name: SKILL.md text}}."""
        return {"format": STATE_FORMAT, "skills": dict(self._texts)}

    def load_state(self, state: Mapping, *, step: int | None = None) -> int:
        """Restore from `state()` output; raises `SkillRepoError` on a foreign format."""
        if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
            raise SkillRepoError(f"not a skill repo state (expected format {STATE_FORMAT!r})")
        return self.restore(dict(state["skills"]), step=step)

    @classmethod
    def from_state(cls, root: str | os.PathLike, state: Mapping, **kwargs) -> "SkillRepo":
        repo = cls(root, **kwargs)
        repo.load_state(state)
        return repo

    def verify(self) -> list[str]:
        """Re-read every skill folder from disk; list any problem (empty list = consistent)."""
        problems = []
        on_disk = {e.name for e in os.scandir(self.root)
                   if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
                   and os.path.exists(os.path.join(e.path, SKILL_FILE))}
        for name in sorted(on_disk | set(self._texts)):
            try:
                text = self.path_of(name).read_text(encoding="utf-8")
                doc = parse_skill_md(text)
                if doc.name != name:
                    problems.append(f"{name}: holds skill {doc.name!r}")
                if self._texts.get(name) != text:
                    problems.append(f"{name}: differs from the in-memory copy")
            except Exception as e:  # noqa: BLE001 -- a report, not control flow
                problems.append(f"{name}: {type(e).__name__}: {e}")
        return problems
