"""SkillOS prompts: executor skills block, self-judgement, and the curator's tool-call prompt.

* Executor: the play prompt of :mod:`skillax.agents.agent_loop` with the BM25-retrieved skills
  in its skills block (:func:`executor_skill_text` renders one skill: name, description, body).
* Self-judged correctness (the paper's 1_ξ: the executor judges its own trajectory, since no
  ground truth exists at test time): :func:`self_judge_messages` asks the executor a yes/no
  question about its trajectory; :func:`parse_self_judgement` reads the answer (None when
  neither "yes" nor "no" is found: treated as failure, counted).
* Curator: a system turn stating the job plus the tool schemas (``TOOL_SCHEMAS``:
  insert_skill / update_skill / delete_skill) in **Qwen3's tool format**, and a user turn with
  the task, the self-judged outcome, the compact trajectory view (evidence), the retrieved
  skills and the names already in the repository (our addition: it lets the curator update
  or delete by name and avoid name collisions; the paper shows "related skills" only). The
  tools go through the chat template's ``tools`` argument when the template renders tools
  (Qwen3); otherwise (SmolLM2's template has no tools) :func:`tools_system_text` writes the
  same block into the system message. For the Qwen3 template both give identical text
  (tests/methods/test_skillos_prompts.py), so SFT transcripts (which embed the block) and RL
  prompts tokenize alike.
"""
from __future__ import annotations

import json
import re
from typing import Sequence

from skillax.engine.sampler import encode_conversation
from skillax.skills.evidence import EvidenceConfig, TrajStep, Trajectory as EvTrajectory, render_trajectory
from skillax.skills.skill_md import SkillDoc, render_skill_md
from skillax.skills.tool_calls import TOOL_SCHEMAS

CURATOR_SYSTEM = (
    "You curate a repository of skills: short SKILL.md notes that an agent reads before "
    "doing related tasks. After each task you see the agent's trajectory and the skills it "
    "retrieved. Keep the repository small and useful: insert a skill for a new kind of task, "
    "update a skill with what the trajectory taught, delete a skill that is wrong or redundant. "
    "Skill names use lowercase letters, digits and hyphens. Answer only with tool calls.")

QWEN3_TOOLS_HEAD = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
QWEN3_TOOLS_TAIL = ("\n</tools>\n\nFor each function call, return a json object with function name and "
                    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')

SELF_JUDGE_QUESTION = "Did you complete the task? Answer yes or no."
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)


def executor_skill_text(doc: SkillDoc) -> str:
    """One retrieved skill as injected into the executor's skills block:
    ``"<name>: <description>\\n<body>"`` (the play prompt caps its length)."""
    body = doc.body.strip()
    return f"{doc.name}: {doc.description}" + (f"\n{body}" if body else "")


def trajectory_view(task_id: str, goal: str, steps: Sequence[tuple[str, str]], outcome: str,
                    cfg: EvidenceConfig) -> str:
    """The compact view of one episode (the curator's evidence): task, key steps as
    ``> action`` + the observation that followed, and the outcome line
    (:func:`skillax.skills.evidence.render_trajectory`; step and character caps from ``cfg``).

    Args:
      steps: (action, observation after it) pairs in order.
      outcome: e.g. ``"success (self-judged)"``.
    """
    traj = EvTrajectory(task_id, goal, tuple(TrajStep(a, o) for a, o in steps), outcome)
    return render_trajectory(traj, cfg)


def self_judge_messages(goal: str, view: str) -> list[dict]:
    """Ask the executor whether its episode solved the task (the paper's self-judged 1_ξ)."""
    return [{"role": "system", "content": "You review your own attempt at a task."},
            {"role": "user", "content": f"Task: {goal}\n\nYour attempt:\n{view}\n\n{SELF_JUDGE_QUESTION}"}]


def parse_self_judgement(text: str) -> bool | None:
    """First standalone "yes"/"no" (case-insensitive) after any think block; None if absent."""
    if not isinstance(text, str):
        return None
    cut = text.rfind("</think>")
    m = _YES_NO.search(text[cut + 8:] if cut >= 0 else text)
    return None if m is None else m.group(1).lower() == "yes"


def format_retrieved(docs: Sequence[SkillDoc], max_chars: int) -> str:
    """Retrieved skills as numbered SKILL.md texts (each capped at ``max_chars``), or "(none)"."""
    if not docs:
        return "(none)"
    parts = []
    for i, d in enumerate(docs, 1):
        t = render_skill_md(d).strip()
        parts.append(f"[{i}]\n" + (t if len(t) <= max_chars else t[: max(0, max_chars - 3)] + "..."))
    return "\n".join(parts)


def curator_user_text(goal: str, judged_success: bool | None, view: str, retrieved: Sequence[SkillDoc],
                      names: Sequence[str], *, max_skill_chars: int = 800, max_names: int = 30) -> str:
    """The curator's user turn (module docstring)."""
    verdict = {True: "success", False: "failure", None: "unknown"}[judged_success]
    shown = list(names)[:max_names]
    more = f" (+{len(names) - len(shown)} more)" if len(names) > len(shown) else ""
    return (f"Task: {goal.strip()}\n"
            f"Outcome (judged by the agent): {verdict}\n\n"
            f"Trajectory:\n{view}\n\n"
            f"Retrieved skills:\n{format_retrieved(retrieved, max_skill_chars)}\n\n"
            f"Skills in the repository: {', '.join(shown) + more if shown else '(empty)'}\n\n"
            "Update the repository with insert_skill, update_skill or delete_skill calls.")


def curator_messages(goal: str, judged_success: bool | None, view: str, retrieved: Sequence[SkillDoc],
                     names: Sequence[str], system: str = CURATOR_SYSTEM, **kw) -> list[dict]:
    """[system, user] of one curator call (tools NOT included; see :func:`curator_prompt_ids`)."""
    return [{"role": "system", "content": system},
            {"role": "user", "content": curator_user_text(goal, judged_success, view, retrieved, names, **kw)}]


def tools_system_text(system: str, tools: Sequence[dict] = TOOL_SCHEMAS) -> str:
    """``system`` followed by the tool block exactly as Qwen3's chat template writes it
    (``# Tools ... <tools>{json per line}</tools> ... <tool_call>`` instructions); JSON as
    transformers' ``tojson`` filter writes it (``ensure_ascii=False``, default separators)."""
    block = QWEN3_TOOLS_HEAD + "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools) + QWEN3_TOOLS_TAIL
    return (system + "\n\n" + block) if system else block


def template_renders_tools(tokenizer) -> bool:
    """True when the tokenizer's chat template handles a ``tools`` argument."""
    t = getattr(tokenizer, "chat_template", None)
    return isinstance(t, str) and "tools" in t


def embed_tools(messages: Sequence[dict], tools: Sequence[dict] = TOOL_SCHEMAS) -> list[dict]:
    """Messages with the Qwen3 tool block written into the system turn (one is added if absent)."""
    msgs = [dict(m) for m in messages]
    if msgs and msgs[0]["role"] == "system":
        msgs[0]["content"] = tools_system_text(msgs[0]["content"], tools)
    else:
        msgs.insert(0, {"role": "system", "content": tools_system_text("", tools)})
    return msgs


def curator_prompt_ids(tokenizer, messages: Sequence[dict], *, prefix: str = "",
                       tools: Sequence[dict] = TOOL_SCHEMAS) -> list[int]:
    """Prompt token ids of one curator call: the template's ``tools`` argument when it renders
    tools, else :func:`embed_tools`; generation header appended (Qwen3: thinking off), then
    ``prefix`` (prefilled assistant text, context only; "" by default)."""
    if template_renders_tools(tokenizer):
        ids = encode_conversation(tokenizer, list(messages), tools=list(tools))
    else:
        ids = encode_conversation(tokenizer, embed_tools(messages, tools))
    if prefix:
        ids = ids + list(tokenizer.encode(prefix, add_special_tokens=False))
    return ids


def tool_call_text(name: str, arguments: dict) -> str:
    """One call in Qwen3's format: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"
