"""Agent Skills export gate: a skill folder is written only if the ecosystem's validators accept it.

Rules (agentskills.io specification; checked against the reference validator `skills-ref`
0.1.1, which reads frontmatter with strictyaml, and Anthropic's skill-creator `quick_validate`):

  E-file   the file starts with a `---` line (no byte-order mark), the frontmatter is closed,
           its YAML is a mapping; UTF-8.
  E-keys   only the spec's top-level keys `SPEC_KEYS` (name, description, license,
           compatibility, metadata, allowed-tools).
  E-name   1..64 characters, lowercase ASCII letters, digits and single hyphens, no leading or
           trailing hyphen (`skill_md.NAME_RE`), equal to the folder name.
  E-desc   a string of 1..1024 characters with no `<` or `>` (Anthropic's validator).
  E-dash   no `---` anywhere in the frontmatter text: skills-ref (`content.split("---", 2)`)
           and agentskills-tools (`text.find("---", 3)`) end the frontmatter at the first
           `---`, even inside a value, so a description holding `---` is cut.
  E-meta   `metadata` a flat map of string keys to string values (after YAML parsing: an
           unquoted `28` is an int, a list or nested map is not a string).
  E-opt    `license`, `allowed-tools` non-empty strings; `compatibility` 1..500 characters.
  W-body   body over 500 lines or over ~5,000 tokens (estimated as characters / 4): a warning,
           the spec's advice for progressive disclosure, not an error.

`check_skill_text(text, folder)` applies the rules to a file; `make_spec_valid(doc)` repairs a
`SkillDoc` where it can (name slugged, `<`/`>` and `---` replaced, metadata flattened to strings,
over-long text cut at a word) and says why when it cannot; `export_skills(docs, dir)` writes
only files that pass `check_skill_text`, de-duplicates names, adds provenance metadata, records
what it wrote and skipped in `<dir>/.skillax-export.json`, and removes folders of its own earlier
export that are gone. Nothing here imports jax.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import re
import sys
from typing import Any, Iterable, Mapping, Sequence

from skillax import process
from skillax.skills.lenient import normalise_name
from skillax.skills.repo import SKILL_FILE, atomic_write_text
from skillax.skills.skill_md import (
    MAX_BODY_CHARS, MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, NAME_RE,
    OPTIONAL_FIELDS, SPEC_KEYS, SkillDoc, SkillFormatError, _BAD_CHARS_RE, _safe_yaml,
    parse_skill_md, render_skill_md, split_frontmatter,
)

MAX_BODY_LINES = 500            # spec advice: keep SKILL.md under 500 lines
MAX_BODY_TOKENS = 5000          # spec advice: < 5,000 tokens recommended for the body
CHARS_PER_TOKEN = 4             # token estimate for the warning (English text, ~4 chars/token)
MANIFEST = ".skillax-export.json"
_STOPWORDS = frozenset("""a an the and or of to in on at for from with by into onto it its them
this that these those some any your you my our is are be was were do does done then than as
task tasks today please use using when what which who how skill skills""".split())
_GENERIC_NAME_RE = re.compile(r"^(?:skill|new-skill|untitled|unnamed|my-skill|test)(?:-?[0-9]+)?$")
_TASK_LEAD_RE = re.compile(r"^\s*(?:your\s+)?task\s+(?:for\s+today\s+)?(?:is|was)\s+to\s*:?\s*", re.I)


@dataclasses.dataclass(frozen=True)
class SpecReport:
    """What the gate found in one file: `errors` (invalid when any) and `warnings`."""

    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    doc: SkillDoc | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclasses.dataclass(frozen=True)
class GateResult:
    """`make_spec_valid` output: a spec-valid `doc` and the `notes` on what changed, or
    `doc=None` and the `error` that made the skill unexportable."""

    doc: SkillDoc | None
    notes: tuple[str, ...] = ()
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class ExportReport:
    """`export_skills` output. `written`: folder names, in input order; `skipped`: (label,
    reason) for skills that could not be made valid; `notes` / `warnings`: per written name."""

    directory: str
    written: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    notes: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    warnings: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    removed: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.written)

    def to_json(self) -> dict:
        return {"written": list(self.written), "skipped": [list(s) for s in self.skipped],
                "notes": {k: list(v) for k, v in self.notes.items()},
                "warnings": {k: list(v) for k, v in self.warnings.items()},
                "removed": list(self.removed)}


# ----------------------------------------------------------------------------- checking
def estimate_tokens(text: str) -> int:
    """Rough token count for the body-size warning: ceil(characters / 4)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def body_warnings(body: str) -> list[str]:
    """W-body: the spec's size advice (warnings, never errors)."""
    out = []
    lines = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    if lines > MAX_BODY_LINES:
        out.append(f"body has {lines} lines (the spec advises under {MAX_BODY_LINES}; move detail "
                   "into referenced files)")
    tokens = estimate_tokens(body)
    if tokens > MAX_BODY_TOKENS:
        out.append(f"body is ~{tokens} tokens (the spec advises under {MAX_BODY_TOKENS})")
    return out


def _field_errors(front: dict, folder: str | None) -> list[str]:
    errs = []
    extra = [str(k) for k in front if k not in SPEC_KEYS]
    if extra:
        errs.append(f"fields {extra} are not in the spec (allowed: {list(SPEC_KEYS)})")
    name = front.get("name")
    if not isinstance(name, str) or not name:
        errs.append("name must be a non-empty string")
    else:
        if len(name) > MAX_NAME_CHARS or not NAME_RE.fullmatch(name):
            errs.append(f"name {name[:80]!r} is invalid (1-{MAX_NAME_CHARS} lowercase ASCII letters, "
                        "digits and single hyphens, no leading/trailing hyphen)")
        if folder is not None and folder != name:
            errs.append(f"name {name[:80]!r} differs from its folder {folder!r}")
    desc = front.get("description")
    if not isinstance(desc, str) or not desc.strip():
        errs.append("description must be a non-empty string")
    else:
        if len(desc) > MAX_DESCRIPTION_CHARS:
            errs.append(f"description has {len(desc)} characters (max {MAX_DESCRIPTION_CHARS})")
        if "<" in desc or ">" in desc:
            errs.append("description contains '<' or '>'")
    for key, _ in OPTIONAL_FIELDS:
        if key not in front:
            continue
        v = front[key]
        if not isinstance(v, str) or not v.strip():
            errs.append(f"{key} must be a non-empty string")
        elif key == "compatibility" and len(v) > MAX_COMPATIBILITY_CHARS:
            errs.append(f"compatibility has {len(v)} characters (max {MAX_COMPATIBILITY_CHARS})")
    if "metadata" in front:
        meta = front["metadata"]
        if not isinstance(meta, dict):
            errs.append(f"metadata must be a map, got {type(meta).__name__}")
        else:
            for k, v in meta.items():
                if not isinstance(k, str) or not isinstance(v, str):
                    errs.append(f"metadata.{k} must map a string to a string, got "
                                f"{type(k).__name__} -> {type(v).__name__}")
                    break
    return errs


def check_skill_text(text: str | bytes, folder: str | None = None) -> SpecReport:
    """Apply the module's rules to a SKILL.md text (`folder`: its folder name, for E-name).

    Never raises. `doc` is the strict parse when the file also parses strictly (CRLF files are
    spec-valid but parse only after normalisation, reported as a warning).
    """
    warns: list[str] = []
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            return SpecReport((f"file is not UTF-8 (byte {e.start})",))
    if text.startswith("\ufeff"):
        return SpecReport(("file starts with a byte-order mark (validators expect '---')",))
    if "\r" in text:
        warns.append("CRLF/CR line endings")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        yaml_text, body = split_frontmatter(text)
        front = _safe_yaml(yaml_text)
    except SkillFormatError as e:
        return SpecReport((e.reason,), tuple(warns))
    if not isinstance(front, dict):
        return SpecReport((f"frontmatter must be a YAML mapping, got {type(front).__name__}",), tuple(warns))
    errs = _field_errors(front, folder)
    if "---" in yaml_text:
        errs.append("frontmatter contains '---' (validators end the frontmatter there)")
    warns += body_warnings(body)
    doc = None
    if not errs:
        try:
            doc = parse_skill_md(text)
        except SkillFormatError as e:
            errs.append(e.reason)
    return SpecReport(tuple(errs), tuple(warns), doc)


def check_skill_folder(folder: str | os.PathLike) -> SpecReport:
    """`check_skill_text` of `<folder>/SKILL.md` with the folder's name."""
    folder = pathlib.Path(folder)
    path = folder / SKILL_FILE
    if not path.is_file():
        return SpecReport((f"{path} does not exist",))
    return check_skill_text(path.read_bytes(), folder.name)


# ----------------------------------------------------------------------------- repairing
def content_words(text: str) -> list[str]:
    """Lowercase ASCII words of `text` without stopwords and task lead-ins ('Your task is to:')."""
    text = _TASK_LEAD_RE.sub("", text)
    words = re.findall(r"[a-z0-9]+", text.lower())
    return [w for w in words if w not in _STOPWORDS]


def slugify(text: str, max_words: int = 6, max_chars: int = 48) -> str:
    """A skill name from free text: its first `max_words` content words joined by '-'
    ('Your task is to: put a clean mug in cabinet.' -> 'put-clean-mug-cabinet'); '' if none."""
    out: list[str] = []
    for w in content_words(text):
        if w in out:
            continue
        if len("-".join(out + [w])) > max_chars:
            break
        out.append(w)
        if len(out) == max_words:
            break
    return "-".join(out)


def is_generic_name(name: str) -> bool:
    """Names that say nothing about the skill: `skill-12`, `skill`, `new-skill`, `untitled`."""
    return bool(_GENERIC_NAME_RE.fullmatch(name))


def descriptive_name(name: str, description: str) -> str:
    """`name` when it is valid and not generic, else a slug of the description's first sentence
    (then of the whole description, then of the name); '' when none gives one."""
    if isinstance(name, str) and NAME_RE.fullmatch(name) and len(name) <= MAX_NAME_CHARS \
            and not is_generic_name(name):
        return name
    first = re.split(r"(?<=[.!?;:])\s", (description or "").strip(), maxsplit=1)[0]
    return slugify(first) or slugify(description or "") or \
        normalise_name(name if isinstance(name, str) else "")


def clean_field(text: str, *, angle: bool) -> str:
    """Replace what validators refuse: runs of 3+ hyphens -> '—'; with `angle`, '<='/'>=' ->
    '≤'/'≥', '->'/'<-' -> '→'/'←', other '<'/'>' -> '‹'/'›'; control characters removed."""
    text = _BAD_CHARS_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = re.sub(r"-{3,}", "—", text)
    if angle:
        for a, b in (("<=", "≤"), (">=", "≥"), ("->", "→"), ("<-", "←"), ("<", "‹"), (">", "›")):
            text = text.replace(a, b)
    return text


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[:cut if cut >= limit - 200 else limit].rstrip()


def _scalar_str(v: Any) -> str:
    if isinstance(v, str):
        return v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)


def flat_metadata(meta: Mapping[str, Any] | None) -> tuple[dict[str, str], list[str]]:
    """Metadata as the spec's flat string map: nested maps become dotted keys (`a.b`), every
    other non-string value its JSON text (28 -> '28', [1, 2] -> '[1, 2]', None -> 'null')."""
    out: dict[str, str] = {}
    notes: list[str] = []

    def walk(prefix: str, v: Any) -> None:
        if isinstance(v, Mapping) and v:
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else str(k), x)
            return
        if not isinstance(v, str):
            notes.append(f"metadata.{prefix}: {type(v).__name__} written as a string")
        key = clean_field(prefix, angle=False) or "_"
        out[key] = clean_field(_scalar_str(v), angle=False)

    for k, v in (meta or {}).items():
        walk(str(k), v)
    uniq = sorted(set(notes))
    return out, uniq[:5] + ([f"... and {len(uniq) - 5} more values"] if len(uniq) > 5 else [])


def make_spec_valid(doc: SkillDoc, *, name: str | None = None) -> GateResult:
    """Repair `doc` into a spec-valid skill (module docstring); `name` overrides the folder name.

    Returns `GateResult(doc, notes)` or `GateResult(None, notes, error)`; never raises.
    """
    notes: list[str] = []
    try:
        desc = doc.description
        if not isinstance(desc, str):
            return GateResult(None, (), f"description must be a string, got {type(desc).__name__}")
        new_desc = clean_field(desc, angle=True)
        if len(new_desc) > MAX_DESCRIPTION_CHARS:
            new_desc = _cut(new_desc.strip(), MAX_DESCRIPTION_CHARS)
        if new_desc != desc:
            notes.append("description: '<', '>', '---', control characters or length repaired")
        if not new_desc.strip():
            return GateResult(None, tuple(notes), "description is empty")
        target = name if name is not None else descriptive_name(doc.name, new_desc)
        if not target or not NAME_RE.fullmatch(target) or len(target) > MAX_NAME_CHARS:
            fixed = normalise_name(target or "")
            if not fixed:
                return GateResult(None, tuple(notes), f"no valid name from {doc.name!r}")
            target = fixed
        if target != doc.name:
            notes.append(f"name {doc.name!r} -> {target!r}")
        opt = {}
        for key, attr in OPTIONAL_FIELDS:
            v = getattr(doc, attr)
            if v is None:
                opt[attr] = None
                continue
            nv = clean_field(str(v), angle=False).strip()
            if key == "compatibility":
                nv = _cut(nv, MAX_COMPATIBILITY_CHARS)
            if nv != v:
                notes.append(f"{key} repaired")
            opt[attr] = nv or None
        meta, mnotes = flat_metadata(doc.metadata)
        notes += mnotes
        body = _BAD_CHARS_RE.sub("", doc.body.replace("\r\n", "\n").replace("\r", "\n"))
        if body != doc.body:
            notes.append("body: control characters or CR removed")
        if len(body) > MAX_BODY_CHARS:
            return GateResult(None, tuple(notes), f"body has {len(body)} characters (max {MAX_BODY_CHARS})")
        out = SkillDoc(target, new_desc, body, meta, **opt)
        rep = check_skill_text(render_skill_md(out), target)
        if not rep.ok:
            return GateResult(None, tuple(notes), "; ".join(rep.errors))
        return GateResult(out, tuple(notes))
    except (SkillFormatError, TypeError, ValueError, AttributeError) as e:
        return GateResult(None, tuple(notes), getattr(e, "reason", None) or f"{type(e).__name__}: {e}")


def unique_name(name: str, used: set[str]) -> str:
    """`name`, or `name-2`, `name-3`, ... (cut to 64 characters) when already in `used`."""
    if name not in used:
        return name
    k = 2
    while True:
        suffix = f"-{k}"
        cand = name[:MAX_NAME_CHARS - len(suffix)].rstrip("-") + suffix
        if cand not in used:
            return cand
        k += 1


# ----------------------------------------------------------------------------- exporting
def _previous(root: pathlib.Path) -> list[str]:
    try:
        return list(json.loads((root / MANIFEST).read_text(encoding="utf-8")).get("written", []))
    except (OSError, ValueError, AttributeError):
        return []


def export_skills(docs: Iterable[SkillDoc], directory: str | os.PathLike, *,
                  provenance: Mapping[str, Any] | None = None,
                  per_skill: Mapping[str, Mapping[str, Any]] | None = None,
                  texts: Mapping[str, str] | None = None, quiet: bool = False) -> ExportReport:
    """Write each doc as `<directory>/<name>/SKILL.md`, spec-valid, or skip it with the reason.

    Args:
      docs: skills (strict `SkillDoc`s; repaired by `make_spec_valid`).
      provenance: string facts added to every skill's metadata (`method`, `run-id`, `step`...);
        values are written as strings; they override the doc's keys of the same name.
      per_skill: optional doc.name -> provenance of that skill only (source task ids, reward at
        creation, Skill-alpha's `rule_provenance`), added after `provenance`.
      texts: optional doc.name -> original SKILL.md text; written byte-for-byte when the skill
        needed no repair, keeps its name and gets no provenance (import -> export is stable).
      quiet: do not print skipped skills to stderr.
    Returns an `ExportReport`; `<directory>/.skillax-export.json` holds the same. Folders that the
    previous export (its manifest) wrote and this one does not are removed (their SKILL.md; the
    folder itself only when empty). Other folders are never touched. In a multi-process run
    only process 0 writes (``skillax.process.is_writer``); the others return an empty report.
    """
    if not process.is_writer():
        return ExportReport(directory=str(directory))
    root = pathlib.Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    prov, _ = flat_metadata(provenance or {})
    used: set[str] = set()
    written, skipped = [], []
    notes: dict[str, tuple[str, ...]] = {}
    warns: dict[str, tuple[str, ...]] = {}
    for i, doc in enumerate(docs):
        label = getattr(doc, "name", None) or f"#{i}"
        res = make_spec_valid(doc)
        if res.doc is None:
            skipped.append((str(label), res.error or "invalid"))
            continue
        out = res.doc
        name = unique_name(out.name, used)
        n = list(res.notes) + ([f"name {out.name!r} taken; written as {name!r}"] if name != out.name else [])
        extra = {**prov, **flat_metadata((per_skill or {}).get(doc.name, {}))[0]}
        if extra:
            out = out.replace(metadata={**out.metadata, **extra})
        out = out.replace(name=name)
        text = render_skill_md(out)
        orig = (texts or {}).get(doc.name)
        if orig is not None and not n and not extra and check_skill_text(orig, name).ok:
            text = orig
        rep = check_skill_text(text, name)
        if not rep.ok:  # cannot happen after make_spec_valid; never write an invalid file
            skipped.append((str(label), "; ".join(rep.errors)))
            continue
        folder = root / name
        if folder.is_symlink() or (folder / SKILL_FILE).is_symlink():
            skipped.append((str(label), f"{folder} is a symlink; refused"))
            continue
        folder.mkdir(exist_ok=True)
        atomic_write_text(folder / SKILL_FILE, text, durable=False)
        used.add(name)
        written.append(name)
        if n:
            notes[name] = tuple(n)
        if rep.warnings:
            warns[name] = rep.warnings
    removed = []
    for old in _previous(root):
        if old in used or not isinstance(old, str) or not NAME_RE.fullmatch(old):
            continue
        folder = root / old
        if folder.is_dir() and not folder.is_symlink() and (folder / SKILL_FILE).is_file():
            (folder / SKILL_FILE).unlink()
            removed.append(old)
            try:
                folder.rmdir()
            except OSError:
                pass  # holds other files
    report = ExportReport(str(root), tuple(written), tuple(skipped), notes, warns, tuple(removed))
    atomic_write_text(root / MANIFEST, json.dumps({**report.to_json(), "provenance": prov},
                                                  indent=1, ensure_ascii=False) + "\n", durable=False)
    if skipped and not quiet:
        for label, reason in skipped:
            print(f"skills export: skipped {label!r}: {reason}", file=sys.stderr)
    return report


def export_repo_state(state: Mapping, directory: str | os.PathLike, *,
                      provenance: Mapping[str, Any] | None = None) -> ExportReport:
    """Export a `SkillRepo.state()` (SkillOS's repo) through the gate; texts that are already
    spec-valid and get no provenance are copied byte-for-byte."""
    texts = dict(state.get("skills", {})) if isinstance(state, Mapping) else {}
    docs, bad = [], []
    for n, t in texts.items():
        try:
            docs.append(parse_skill_md(t))
        except SkillFormatError as e:
            bad.append((n, e.reason))
    rep = export_skills(docs, directory, provenance=provenance, texts=texts)
    if bad:
        rep = dataclasses.replace(rep, skipped=rep.skipped + tuple(bad))
    return rep


def provenance(method: str, *, run_id: str | None = None, step: int | None = None,
               **extra: Any) -> dict[str, str]:
    """Run-level provenance for `export_skills(provenance=...)`: {'method', 'run-id', 'step',
    ...extra (underscores in keys become hyphens)}, all strings; None values left out."""
    out = {"method": method, "run-id": run_id, "step": step}
    out.update({k.replace("_", "-"): v for k, v in extra.items()})
    return {k: _scalar_str(v) for k, v in out.items() if v is not None}


def docs_of(texts: Mapping[str, str] | Sequence[SkillDoc]) -> list[SkillDoc]:
    """Strict docs from name -> text (skipping unparsable ones) or a list of docs."""
    if isinstance(texts, Mapping):
        out = []
        for t in texts.values():
            try:
                out.append(parse_skill_md(t))
            except SkillFormatError:
                pass
        return out
    return list(texts)


def rule_provenance(history: Sequence[Mapping], rule_ids: Iterable[str]) -> dict[str, str]:
    """Skill-alpha: which evidence chunk and edit action produced each rule of the final skill.

    `history`: the inference changelog records (`{"step", "chunk", "action", "after", "valid"}`,
    `methods.skill_alpha.inference.edit_record`); `rule_ids`: labels of the final skill's rules
    ('R3'). Returns {'rule-R3': 'chunk 5 UPDATE (step 5)', ...}; a rule no valid edit wrote
    came with z_0: 'z0'.
    """
    last: dict[str, str] = {}
    for rec in history:
        if rec.get("valid"):
            for rid in (rec.get("after") or {}):
                last[rid] = f"chunk {rec.get('chunk')} {rec.get('action')} (step {rec.get('step')})"
    return {f"rule-{rid}": last.get(rid, "z0") for rid in rule_ids}
