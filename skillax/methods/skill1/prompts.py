"""Skill1 prompts: query, rerank and distil (play prompts come from ``agents.agent_loop``).

Prompts are kept short (the embedded default is a 135M model on a 2-core CPU). Each
generation prompt ends with the assistant header followed by an *open tag* the policy
continues: ``<query>`` (DESIGN.md §1.3: "the prompt ends with an open <query> tag"),
``<rank>`` and `` ```json`` — the prefilled tag is part of the prompt (context, no loss),
and parsers see ``prefix + completion``.
"""

from __future__ import annotations

from typing import Sequence

from skillax.engine.sampler import encode_conversation

SYSTEM = "You are an agent in a text game. Skills are short notes on how to do kinds of tasks."

QUERY_PREFIX = "<query>"
RANK_PREFIX = "<rank>"
# Ends before the "{": BPE merges "{" with the next character ('{"' is one token in SmolLM2
# and Qwen3), so a prompt ending in a lone "{" would never match how a JSON answer tokenizes.
DISTIL_PREFIX = "```json\n"


def _ids(tokenizer, user: str, prefix: str) -> list[int]:
    ids = encode_conversation(tokenizer, [{"role": "system", "content": SYSTEM},
                                          {"role": "user", "content": user}])
    return ids + tokenizer.encode(prefix, add_special_tokens=False)


def _query_user(goal: str) -> str:
    return (f"Your task is to: {goal}.\n"
            "Write a short search query for a skill that would help (the kind of task, the object "
            "and the receptacle), as <query>...</query>.")


def query_prompt(tokenizer, goal: str) -> list[int]:
    """Ask for a retrieval query; ends with the open ``<query>`` tag (stop on ``</query>``)."""
    return _ids(tokenizer, _query_user(goal), QUERY_PREFIX)


def skill_line(i: int, head: str, strategy: str, max_chars: int = 160) -> str:
    s = " ".join(strategy.split())
    return f"[{i}] {head}: {s[:max_chars]}"


def _rerank_user(goal: str, candidates: Sequence[tuple[str, str]]) -> str:
    lines = "\n".join(skill_line(i + 1, h, s) for i, (h, s) in enumerate(candidates))
    return (f"Your task is to: {goal}.\nCandidate skills:\n{lines}\n"
            "Order the skills from most to least useful, e.g. <rank>2,1,3</rank>.")


def rerank_prompt(tokenizer, goal: str, candidates: Sequence[tuple[str, str]]) -> list[int]:
    """Ask for a 1-based permutation of the candidates (``<rank>2,1,3</rank>``)."""
    return _ids(tokenizer, _rerank_user(goal, candidates), RANK_PREFIX)


def rerank_demonstration(goal: str, candidates: Sequence[tuple[str, str]], order: Sequence[int]) -> list[dict]:
    """SFT transcript for the rerank stage: ``candidates`` ((description_head, strategy) each,
    as :func:`rerank_prompt` shows them) ranked as ``order`` (0-based candidate indices, most
    useful first; written 1-based: ``<rank>2,1,3</rank>``). The RL rerank prompt's ids are a
    prefix of this transcript's ids (tested). Raises ValueError unless ``order`` is a
    permutation of the candidates' indices."""
    if sorted(order) != list(range(len(candidates))):
        raise ValueError(f"order {list(order)} is not a permutation of {len(candidates)} candidates")
    body = ",".join(str(i + 1) for i in order)
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": _rerank_user(goal, candidates)},
            {"role": "assistant", "content": f"{RANK_PREFIX}{body}</rank>"}]


DISTIL_PROMPT_CHARS = 3000   # default character budget of the rendered trajectory
OBS_CHARS = 120              # characters kept of each observation in the compact view


def trajectory_view(steps: Sequence[tuple[str, str]], max_chars: int = DISTIL_PROMPT_CHARS,
                    obs_chars: int = OBS_CHARS) -> str:
    """The whole episode as a compact view for the distil prompt (issue 19 item 3).

    ``steps``: (action, observation the action produced) per step, in order. One line per
    step, ``"<t>. <action> -> <observation>"`` with the observation's whitespace collapsed and
    cut to ``obs_chars``. When the lines exceed ``max_chars`` the *middle* is elided: the
    first and last steps are kept (about a third and two thirds of the budget) around one
    ``"... (k steps omitted) ..."`` line, so the start (where the object was found) and the
    end (what finished or failed) stay visible. ``(no actions)`` for an empty episode.
    Raises ValueError for ``max_chars`` < 200 (no room for a step).
    """
    if max_chars < 200:
        raise ValueError(f"distil prompt budget must be >= 200 characters, got {max_chars}")
    if not steps:
        return "(no actions)"
    lines = []
    for t, (a, o) in enumerate(steps, 1):
        o = " ".join(str(o).split())
        o = o if len(o) <= obs_chars else o[: obs_chars - 3].rstrip() + "..."
        lines.append(f"{t}. {' '.join(str(a).split()) or '(empty)'} -> {o}")
    if sum(len(x) + 1 for x in lines) <= max_chars:
        return "\n".join(lines)
    used = 40                                        # room for the elision line
    h, k = 0, len(lines) - 1                         # lines[h..k] are not shown yet
    while h <= k and used + len(lines[h]) + 1 <= max_chars // 3:
        used += len(lines[h]) + 1
        h += 1
    while k >= h and used + len(lines[k]) + 1 <= max_chars:
        used += len(lines[k]) + 1
        k -= 1
    return "\n".join(lines[:h] + [f"... ({k - h + 1} steps omitted) ..."] + lines[k + 1:])


def distil_user(goal: str, steps: Sequence[tuple[str, str]], won: bool,
                max_chars: int = DISTIL_PROMPT_CHARS) -> str:
    """The user turn of the distil prompt: the goal, the whole trajectory
    (:func:`trajectory_view`), the outcome and the JSON keys to write."""
    return (f"Your task was to: {goal}.\nYour steps (action -> what happened):\n"
            f"{trajectory_view(steps, max_chars)}\n"
            f"Outcome: {'success' if won else 'failure'}.\n"
            "Write a JSON object with keys subtasks (list of {name, description, status}), "
            "task_success, action_lesson, navigation_lesson, description_head. Write lessons for "
            "this kind of task (object and receptacle types, no numbers).")


def distil_prompt(tokenizer, goal: str, steps: Sequence[tuple[str, str]], won: bool,
                  max_chars: int = DISTIL_PROMPT_CHARS) -> list[int]:
    """Ask the policy to reflect on its episode and emit the distil JSON (DESIGN.md §1.3)."""
    return _ids(tokenizer, distil_user(goal, steps, won, max_chars), DISTIL_PREFIX)


def distil_demonstration(goal: str, family: str, steps: Sequence[tuple[str, str]], won: bool,
                         max_chars: int = DISTIL_PROMPT_CHARS, priors: dict | None = None) -> list[dict]:
    """SFT transcript for the distil stage from an expert episode (no teacher model).

    The answer is a deterministic distil JSON of task-type-level lessons built from the
    episode (``methods.skill1.lessons.lessons``: where the goal object was found, the order of
    receptacle actions, receptacles to open; no instance numbers) and a ``description_head``
    that says which task type the skill is for. The assistant turn starts with
    ``DISTIL_PREFIX``, so the RL distil prompt's ids are a prefix of this transcript's ids
    (tested with the SmolLM2 tokenizer). It parses with ``skills.parsers.parse_distil``.
    ``priors`` (``sft.distil_level="generic"``): the lessons name the goal object X and the
    target Y and say where such objects usually are (``lessons.generic_lessons`` with these
    ``lessons.location_priors``); None, or a goal that names no object (TextWorld):
    ``lessons.lessons``.
    """
    import json

    from skillax.methods.skill1.lessons import generic_lessons, goal_parts, lessons

    acts = [a for a, _ in steps]
    if priors is None or not goal_parts(goal, family)["object"]:   # a goal without an object: episode level
        les = lessons(goal, family, acts, [o for _, o in steps], won)
    else:
        les = generic_lessons(goal, family, acts, won, priors)
    obj = {"subtasks": les["subtasks"], "task_success": bool(won), "action_lesson": les["action_lesson"],
           "navigation_lesson": les["navigation_lesson"], "description_head": les["description_head"]}
    body = json.dumps(obj, ensure_ascii=False)
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": distil_user(goal, steps, won, max_chars)},
            {"role": "assistant", "content": DISTIL_PREFIX + body + "\n```"}]


def query_demonstration(goal: str, family: str = "") -> list[dict]:
    """SFT transcript for the query stage: the task-type-level query
    (``lessons.query_text``) the library's description heads are matched against. The RL
    query prompt's ids are a prefix of this transcript's ids (tested)."""
    from skillax.methods.skill1.lessons import query_text

    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": _query_user(goal)},
            {"role": "assistant", "content": f"{QUERY_PREFIX}{query_text(goal, family)}</query>"}]


def skill_text(head: str, strategy: str, max_chars: int = 400) -> str:
    """The top-1 skill as injected into the play prompt."""
    return f"{head}\n{' '.join(strategy.split())[:max_chars]}"
