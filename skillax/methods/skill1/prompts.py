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


def query_prompt(tokenizer, goal: str) -> list[int]:
    """Ask for a retrieval query; ends with the open ``<query>`` tag (stop on ``</query>``)."""
    user = (f"Your task is to: {goal}.\n"
            "Write a short search query for a skill that would help, as <query>...</query>.")
    return _ids(tokenizer, user, QUERY_PREFIX)


def skill_line(i: int, head: str, strategy: str, max_chars: int = 160) -> str:
    s = " ".join(strategy.split())
    return f"[{i}] {head}: {s[:max_chars]}"


def rerank_prompt(tokenizer, goal: str, candidates: Sequence[tuple[str, str]]) -> list[int]:
    """Ask for a 1-based permutation of the candidates (``<rank>2,1,3</rank>``)."""
    lines = "\n".join(skill_line(i + 1, h, s) for i, (h, s) in enumerate(candidates))
    user = (f"Your task is to: {goal}.\nCandidate skills:\n{lines}\n"
            "Order the skills from most to least useful, e.g. <rank>2,1,3</rank>.")
    return _ids(tokenizer, user, RANK_PREFIX)


def distil_user(goal: str, actions: Sequence[str], final_observation: str, won: bool,
                max_actions: int = 12) -> str:
    """The user turn of the distil prompt."""
    acts = list(actions)[-max_actions:]
    return (f"Your task was to: {goal}.\nYour actions: {'; '.join(acts) if acts else '(none)'}.\n"
            f"Last observation: {' '.join(final_observation.split())[:200]}\n"
            f"Outcome: {'success' if won else 'failure'}.\n"
            "Write a JSON object with keys subtasks (list of {name, description, status}), "
            "task_success, action_lesson, navigation_lesson, description_head.")


def distil_prompt(tokenizer, goal: str, actions: Sequence[str], final_observation: str, won: bool,
                  max_actions: int = 12) -> list[int]:
    """Ask the policy to reflect on its episode and emit the distil JSON (DESIGN.md §1.3)."""
    return _ids(tokenizer, distil_user(goal, actions, final_observation, won, max_actions), DISTIL_PREFIX)


def distil_demonstration(goal: str, actions: Sequence[str], final_observation: str, won: bool,
                         max_subtasks: int = 3) -> list[dict]:
    """SFT transcript for the distil stage from an expert episode (no teacher model).

    The answer is a deterministic distil JSON built from the expert's actions: the last
    ``max_subtasks`` actions as completed subtasks, the non-navigation actions as the action
    lesson, the ``go to`` targets as the navigation lesson, the goal as the description head.
    The assistant turn starts with ``DISTIL_PREFIX``, so the RL distil prompt's ids are a
    prefix of this transcript's ids (tested with the SmolLM2 tokenizer). It parses with
    ``skills.parsers.parse_distil``.
    """
    import json

    acts = [a for a in actions if a]
    moves = [a for a in acts if a.startswith("go ")]  # ALFWorld "go to X", TextWorld "go east"
    work = [a for a in acts if not a.startswith("go ")]
    obj = {
        "subtasks": [{"name": a.split(" ")[0], "description": a,
                      "status": "completed" if won else "incomplete"} for a in acts[-max_subtasks:]],
        "task_success": bool(won),
        "action_lesson": "; ".join(work[-6:]) or "none",
        "navigation_lesson": ", then ".join(moves[-4:]) if moves else "no navigation needed",
        "description_head": " ".join(goal.split())[:120],
    }
    body = json.dumps(obj, ensure_ascii=False)
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": distil_user(goal, acts, final_observation, won)},
            {"role": "assistant", "content": DISTIL_PREFIX + body + "\n```"}]


def skill_text(head: str, strategy: str, max_chars: int = 400) -> str:
    """The top-1 skill as injected into the play prompt."""
    return f"{head}\n{' '.join(strategy.split())[:max_chars]}"
