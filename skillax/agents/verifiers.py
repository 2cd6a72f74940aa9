"""Verifiers: turn an episode or an answer into a score in [0, 1].

* :func:`env_success` -- interactive environments: 1.0 iff ``info["won"]`` (ALFWorld,
  TextWorld, WebShop with reward 1).
* :func:`math_equal` / :func:`math_score` -- mathematical answer equivalence through
  HuggingFace ``math-verify`` (``parse`` + ``verify``): ``\\boxed{033}`` equals ``33``,
  ``\\frac{1}{2}`` equals ``0.5``; the prediction may be a whole solution (the last boxed /
  final answer is extracted).
* :func:`reasoning_gym_score` -- the procedural tasks of ``reasoning-gym`` scored by the
  dataset's own ``score_answer`` (reference scorer of each generator).
* :func:`extract_answer` -- the final answer of a free-form solution: the last
  ``<answer>…</answer>`` (reasoning-gym's convention), else the last ``\\boxed{…}``.

Thread safety: ``math-verify`` bounds its parsing time with ``signal.alarm``, which only works
in the main thread. :func:`math_equal` uses that timeout in the main thread and runs without
one elsewhere (the caller's thread pool then owns the time limit).
"""
from __future__ import annotations

import re
import threading
from typing import Any, Mapping

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


def env_success(info: Mapping[str, Any]) -> float:
    """1.0 when the environment reports ``won`` (truthy), else 0.0.

    Raises KeyError when ``info`` has no ``won`` key (every skillax env sets it)."""
    return 1.0 if info["won"] else 0.0


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` with balanced braces, or None
    (also None when the last one is unterminated)."""
    starts = [m.end() for m in _BOXED.finditer(text)]
    if not starts:
        return None
    i = starts[-1]
    depth = 1
    for j in range(i, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i:j].strip()
    return None


def extract_answer(text: str) -> str | None:
    """Final answer of a solution text: last ``<answer>`` tag content, else last boxed
    content, else None. Whitespace is stripped; an empty tag counts as no answer."""
    tags = _ANSWER_TAG.findall(text or "")
    if tags:
        inner = tags[-1].strip()
        boxed = last_boxed(inner)
        return (boxed if boxed is not None else inner) or None
    boxed = last_boxed(text or "")
    return boxed or None


def _mv_kwargs(in_main: bool, timeout_s: int | None) -> tuple[dict, dict]:
    t = timeout_s if in_main else None
    return {"parsing_timeout": t}, {"timeout_seconds": t}


def math_equal(gold: str, prediction: str, *, timeout_s: int | None = 5) -> bool:
    """Whether ``prediction`` states the same mathematical answer as ``gold``.

    Args:
      gold: reference answer, e.g. ``"33"``, ``"\\frac{1}{2}"``, ``"$x^2$"``.
      prediction: a bare answer or a full solution; an ``<answer>`` tag, if present, is
        used as the answer, otherwise ``math-verify`` extracts the last boxed / final value.
      timeout_s: per-call parse/verify limit in seconds (main thread only; see module doc).

    Returns:
      ``math_verify.verify(parse(gold), parse(prediction))`` (numeric comparison rounds to
      6 decimals, math-verify's default). False when either side yields nothing parsable
      or math-verify fails.

    Source: HuggingFace math-verify (github.com/huggingface/Math-Verify), ``parse``/``verify``.
    """
    from math_verify import parse, verify

    if not isinstance(gold, str) or not isinstance(prediction, str):
        raise TypeError("gold and prediction must be str")
    pk, vk = _mv_kwargs(threading.current_thread() is threading.main_thread(), timeout_s)
    tags = _ANSWER_TAG.findall(prediction)
    pred_text = prediction
    if tags:
        inner = tags[-1].strip()
        pred_text = inner if (last_boxed(inner) is not None or "$" in inner) else f"${inner}$"
    try:
        g = parse(gold, **pk) or parse(f"${gold}$", **pk)
        p = parse(pred_text, **pk)
        if not g or not p:
            return False
        return bool(verify(g, p, **vk))
    except Exception:  # math-verify's own timeouts / sympy failures count as "not equal"
        return False


def math_score(gold: str, prediction: str, *, timeout_s: int | None = 5) -> float:
    """1.0 if :func:`math_equal` else 0.0."""
    return 1.0 if math_equal(gold, prediction, timeout_s=timeout_s) else 0.0


def reasoning_gym_score(dataset: Any, entry: Mapping[str, Any], answer: str | None) -> float:
    """Score ``answer`` for one reasoning-gym item with the generator's own scorer.

    Args:
      dataset: the ``reasoning_gym`` dataset object that produced ``entry`` (its
        ``score_answer(answer, entry)`` is the reference scorer; some generators give partial
        credit, e.g. 0.01 for a well-formed wrong answer).
      entry: the item dict (``question``, ``answer``, ``metadata``).
      answer: the extracted final answer (see :func:`extract_answer`); None scores 0.

    Returns:
      float in [0, 1] (clipped); 0.0 if the scorer raises.
    """
    if answer is None:
        return 0.0
    try:
        s = float(dataset.score_answer(answer, entry))
    except Exception:
        return 0.0
    return min(1.0, max(0.0, s)) if s == s else 0.0
