"""One-line help for config keys, read from the text that already describes them (issue 23
item 7): the section docstrings of ``config_defaults`` (``key: text``), the methods' config
docstrings (````key```` mentions), the comments beside / above an assignment, and the config
file's own docstring and comments. A key none of them describes gets no help (``None``):
nothing is invented.

Sources in order (the first that describes a key wins): ``config_defaults.py``, the method's
``config.py`` (``skillax/methods/<mode>/config.py``), then the config file.
"""

from __future__ import annotations

import ast
import io
import pathlib
import re
import tokenize

import skillax

PKG = pathlib.Path(skillax.__file__).resolve().parent
DEFAULTS = PKG / "config_defaults.py"
# config_defaults functions that build one section (their keys are <name>.<key>)
SECTIONS = ("model", "mesh", "distributed", "warmstart", "train", "rl", "sft")
METHODS = ("skill1", "skillos", "skill_alpha")

_MENTION = re.compile(
    r"``(?P<tick>[A-Za-z_][\w.]*)``"                         # ``key`` anywhere
    r"|(?:^|(?<=[.,;] ))(?P<colon>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?=: )"   # key: text
    r"|^(?P<table>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?=\s{2,}\S)",               # key    text (tables)
    re.M)


def one_line(text: str, limit: int = 110) -> str:
    """Whitespace collapsed, cut after the first sentence and at ``limit`` characters."""
    t = " ".join(text.split()).strip(" ,;:")
    m = re.search(r"(?<=[a-z0-9)\"'])\. (?=[A-Z(`])", t)
    if m:
        t = t[:m.start() + 1]
    return t if len(t) <= limit else t[:limit - 4].rstrip() + " ..."


def _chunks(doc: str) -> list[str]:
    """Paragraphs and bullet items of a docstring (a line starting with '* ' or '- ' opens one)."""
    out, cur = [], []
    for line in doc.splitlines():
        s = line.strip()
        if not s or s.startswith(("* ", "- ")):
            if cur:
                out.append("\n".join(cur))
            cur = [s[2:]] if s else []
        else:
            cur.append(s)
    if cur:
        out.append("\n".join(cur))
    return out


def docstring_help(doc: str | None, keys: set[str], sections: set[str], prefix: str = "",
                   own_only: bool = False) -> dict[str, str]:
    """{key: help} for the keys ``doc`` describes: a mention (````key````, ``key: ``, a table
    row ``key   text``) resolved as ``prefix + name``, ``name``, or ``<section>.name`` where
    ``<section>`` is the chunk's first mentioned section (``own_only``: ``prefix + name`` alone);
    its help is the text up to the next mention of a key (shared with the next one when empty,
    e.g. ``a, b: text``). Mentions of other names stay part of the text."""
    out: dict[str, str] = {}
    for chunk in _chunks(doc or ""):
        found = list(_MENTION.finditer(chunk))
        context = next((m.group("tick") for m in found if m.group("tick") in sections), None)
        hits = []
        for m in found:
            name = m.group("tick") or m.group("colon") or m.group("table")
            cands = [prefix + name] if own_only else [prefix + name, name] + ([f"{context}.{name}"] if context else [])
            key = next((k for k in cands if k in keys), None)
            if key is not None or (m.group("tick") in sections and not own_only):
                hits.append((key, m))
        resolved = []
        for i, (key, m) in enumerate(hits):
            end = hits[i + 1][1].start() if i + 1 < len(hits) else len(chunk)
            resolved.append((key, chunk[m.end():end]))
        pending = []
        for key, text in resolved:
            if key is not None:
                pending.append(key)
            if one_line(text):
                for k in pending:
                    out.setdefault(k, one_line(text))
                pending = []
    return out


def _comments(src: str) -> dict[int, str]:
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string.lstrip("#").strip()
    return out


def _dotted(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return parts[::-1] if isinstance(node, ast.Name) and parts else None


def _dict_call(node):
    """The ``dict(...)`` call of ``ConfigDict(dict(...))`` / ``D(dict(...))`` / ``dict(...)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        if name == "dict":
            return node
        if name in ("ConfigDict", "D") and node.args:
            return _dict_call(node.args[0])
    return None


def comment_help(src: str, prefix_of) -> dict[str, str]:
    """{key: help} from comments beside an assignment (``c.a.b = v  # text``, or ``key=v,  #
    text`` alone on its line inside ``ConfigDict(dict(...))``) or in the comment block right
    above a one-key assignment. ``prefix_of(function name)`` -> the key prefix of that function's
    ``c`` ("" = the config root, None = skip the function)."""
    comments, lines = _comments(src), src.splitlines()
    out: dict[str, str] = {}

    def above(lineno: int) -> str:
        block, j = [], lineno - 1
        while j >= 1 and lines[j - 1].strip().startswith("#"):
            block.insert(0, lines[j - 1].strip().lstrip("#").strip())
            j -= 1
        return " ".join(block)

    def keywords(call, key: str):
        per_line: dict[int, int] = {}
        for kw in call.keywords:
            per_line[kw.value.end_lineno] = per_line.get(kw.value.end_lineno, 0) + 1
        for kw in call.keywords:
            if kw.arg is None:
                continue
            sub = _dict_call(kw.value)
            if sub is not None:
                keywords(sub, f"{key}.{kw.arg}")
            elif per_line[kw.value.end_lineno] == 1 and kw.value.end_lineno in comments:
                out.setdefault(f"{key}.{kw.arg}", one_line(comments[kw.value.end_lineno]))

    for fn in ast.parse(src).body:
        if not isinstance(fn, ast.FunctionDef) or prefix_of(fn.name) is None:
            continue
        prefix = prefix_of(fn.name)
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            parts = _dotted(node.targets[0])
            if not parts:
                continue
            key = prefix + ".".join(parts)
            call = _dict_call(node.value)
            if call is not None:
                keywords(call, key)
                continue
            text = comments.get(node.end_lineno) or above(node.lineno)
            if text:
                out.setdefault(key, one_line(text))
    return out


def key_help(cfg, config_path: str | None, mode: str) -> dict[str, str]:
    """{dotted key: one-line help} for the keys of ``cfg`` that the sources describe (module
    docstring); ``mode`` (the config's own ``mode``) picks the method's sources."""
    from skillax.config_keys import is_section, walk

    keys = {k for k, _ in walk(cfg)}
    sections = {k for k in cfg.keys() if is_section(cfg[k])}
    found: list[dict[str, str]] = []
    dsrc = DEFAULTS.read_text(encoding="utf-8")
    dtree = ast.parse(dsrc)
    for fn in dtree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in SECTIONS:
            found.append(docstring_help(ast.get_docstring(fn), keys, sections, prefix=fn.name + ".", own_only=True))
    found.append(comment_help(dsrc, lambda n: n + "." if n in SECTIONS else ("" if n in ("base", mode) else None)))
    method_cfg = PKG / "methods" / mode / "config.py" if mode in METHODS else None
    if method_cfg is not None and method_cfg.exists():
        msrc = method_cfg.read_text(encoding="utf-8")
        found.append(comment_help(msrc, lambda n: ""))
        found.append(docstring_help(ast.get_docstring(ast.parse(msrc)), keys, sections))
    for fn in dtree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == mode:
            found.append(docstring_help(ast.get_docstring(fn), keys, sections))
    if config_path:
        path = pathlib.Path(config_path.partition(":")[0])
        if path.exists():
            csrc = path.read_text(encoding="utf-8")
            found.append(comment_help(csrc, lambda n: ""))
            found.append(docstring_help(ast.get_docstring(ast.parse(csrc)), keys, sections))
    out: dict[str, str] = {}
    for d in found:
        for k, v in d.items():
            if k in keys:
                out.setdefault(k, v)
    return out
