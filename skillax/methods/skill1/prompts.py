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
DISTIL_PREFIX = "```json\n{"


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


def distil_prompt(tokenizer, goal: str, actions: Sequence[str], final_observation: str, won: bool,
                  max_actions: int = 12) -> list[int]:
    """Ask the policy to reflect on its episode and emit the distil JSON (DESIGN.md §1.3)."""
    acts = list(actions)[-max_actions:]
    user = (f"Your task was to: {goal}.\nYour actions: {'; '.join(acts) if acts else '(none)'}.\n"
            f"Last observation: {' '.join(final_observation.split())[:200]}\n"
            f"Outcome: {'success' if won else 'failure'}.\n"
            "Write a JSON object with keys subtasks (list of {name, description, status}), "
            "task_success, action_lesson, navigation_lesson, description_head.")
    return _ids(tokenizer, user, DISTIL_PREFIX)


def skill_text(head: str, strategy: str, max_chars: int = 400) -> str:
    """The top-1 skill as injected into the play prompt."""
    return f"{head}\n{' '.join(strategy.split())[:max_chars]}"
