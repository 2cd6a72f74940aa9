"""Document-to-skill inputs: a document (paragraph evidence) and tasks over it (rubric-graded).

Embedded example (our choice; the paper uses CL-Bench, which is not available offline): the
**TextWorld game documentation shipped in the installed ``textworld`` package**, read at run
time (nothing is copied into this repository):

* the in-game ``help`` text -- the command list TextWorld compiles into every game, parsed
  from ``textworld/generator/inform7/world2inform7.py`` (one paragraph per command);
* the four challenge descriptions -- the module docstrings of ``textworld.challenges``'
  Cooking, Coin Collector, Treasure Hunter and Simple games, and the difficulty / settings
  notes of their ``make()`` docstrings (one paragraph per bullet).

Tasks over it (:data:`TEXTWORLD_QUESTIONS`, written for this repository): 16 short questions a
player of these games needs answered, each with 1-3 rubrics that hold exactly for the
statements in the text above; the anchored query of a unit is one of the *train* questions,
the held-out evaluation uses the *eval* ones. Verification: :class:`RubricJudge`
(all-or-nothing, CL-Bench style) on the worker's answer.

Own data: ``document.path`` (a UTF-8 text/Markdown file; paragraphs at blank lines) and
``document.questions`` (JSONL of ``{"id"?, "question", "rubrics": [...], "split"?: "train"|"eval"}``).
"""
from __future__ import annotations

import importlib
import inspect
import json
import pathlib
import re
import textwrap

from skillax.agents.envs.base import Task

# (id, split, question, rubrics) -- each rubric is checkable against the documentation text.
TEXTWORLD_QUESTIONS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("goal", "train", "In a TextWorld game, which command prints the goal of the game?",
     ("The answer names the command 'goal'.",)),
    ("inventory", "train", "In TextWorld, which command shows what the player is carrying?",
     ("The answer names the command 'inventory'.",)),
    ("take-from", "train", "In TextWorld, what command takes an object out of a container or off a supporter?",
     ("The answer gives the pattern 'take ... from ...' (e.g. 'take apple from fridge').",)),
    ("insert", "train", "In TextWorld, what command places an object into a container?",
     ("The answer gives the pattern 'insert ... into ...'.",)),
    ("unlock", "train", "In TextWorld, how do you get through a locked door?",
     ("The answer says to unlock it with a key ('unlock ... with ...').",
      "The answer says the door must then be opened (or uses 'open').")),
    ("go", "train", "In TextWorld, in which directions can the 'go' command move the player?",
     ("The answer lists north, east, south and west.",)),
    ("cooking-goal", "train", "What is the overall objective of the TextWorld Cooking game?",
     ("The answer mentions finding the kitchen or reading the cookbook.",
      "The answer mentions fetching and processing the recipe's ingredients.",
      "The answer mentions preparing the meal and eating it.")),
    ("coin", "train", "In the TextWorld Coin Collector game, what must the agent collect and where is it?",
     ("The answer says the object is a coin.",
      "The answer says it is at the other end of the chain of rooms from the start.")),
    ("treasure", "train", "In the TextWorld Treasure Hunter game, where does the agent start and what must it do?",
     ("The answer says the agent spawns in a randomly generated maze.",
      "The answer says it must find the specific object mentioned in the objective.")),
    ("hard-mode", "train", "In hard Treasure Hunter levels, what extra obstacles can block the way?",
     ("The answer mentions locked doors or locked containers.",
      "The answer says the needed keys are in the inventory or must be used to unlock them.")),
    ("look", "eval", "In a TextWorld game, which command describes the current room?",
     ("The answer names the command 'look'.",)),
    ("put-on", "eval", "In TextWorld, what command places an object on a supporter such as a table?",
     ("The answer gives the pattern 'put ... on ...'.",)),
    ("eat", "eval", "In TextWorld, which command consumes edible food?",
     ("The answer names the command 'eat'.",)),
    ("easy-rooms", "eval", "How many rooms do Treasure Hunter levels 1 to 10 have?",
     ("The answer says 5 rooms.",)),
    ("medium-mode", "eval", "What do medium Treasure Hunter levels add compared with easy ones?",
     ("The answer mentions closed doors and/or containers that may need to be opened.",)),
    ("ftwp", "eval", "For which competition was the TextWorld Cooking game used?",
     ("The answer names First TextWorld Problems.",)),
)

_CHALLENGES = (
    ("textworld.challenges.tw_cooking.cooking", "The Cooking Game"),
    ("textworld.challenges.tw_coin_collector.coin_collector", "Coin Collector"),
    ("textworld.challenges.tw_treasure_hunter.treasure_hunter", "Treasure Hunter"),
    ("textworld.challenges.tw_simple.simple", "A Simple Game"),
)
_SAY = re.compile(r'say "\s*([a-z<>. ]+?):\s+(.+?)\[line break\]";')


def _rst_paragraphs(doc: str) -> list[str]:
    """Plain paragraphs of an RST docstring: directives, title underlines, the references
    section and literal blocks (maps drawn with '+' and '|') removed."""
    doc = doc.split("References\n")[0]
    out = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc(doc)):
        lines = [ln for ln in para.splitlines()
                 if ln.strip() and not ln.startswith("..") and not re.fullmatch(r"[=\-~^]+", ln.strip())]
        if not lines or any(re.search(r"[+|]\s*$|^\s*[+|]", ln) for ln in lines) or lines == ["::"]:
            continue
        text = " ".join(ln.strip() for ln in lines)
        text = re.sub(r"\[\d+\]_|\[[A-Za-z0-9]+\]_", "", text).replace("::", ":")
        text = re.sub(r"\s+([.,;:])", r"\1", text).strip()
        if text:
            out.append(text)
    return out


def _notes_bullets(fn) -> list[str]:
    """The bullets / sentences of the 'Notes:' section of a ``make()`` docstring."""
    doc = inspect.getdoc(fn) or ""
    if "Notes:" not in doc:
        return []
    notes = textwrap.dedent(doc.split("Notes:", 1)[1])
    out = []
    for block in re.split(r"\n\s*\n|\n\s*(?=\* )", notes):
        text = " ".join(ln.strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith(".."))
        text = text.lstrip("* ").strip()
        if text and text != "...":
            out.append(text)
    return out


def textworld_help_lines() -> list[str]:
    """The in-game help ('Available commands') compiled into every TextWorld game."""
    src = pathlib.Path(importlib.import_module("textworld.generator.inform7.world2inform7").__file__).read_text()
    lines = [f"{cmd.strip()}: {desc.strip()}" for cmd, desc in _SAY.findall(src)]
    if not lines:
        raise RuntimeError("could not find TextWorld's help text in world2inform7.py (textworld changed?)")
    return lines


def textworld_documentation() -> str:
    """The embedded document (module docstring): paragraphs separated by blank lines."""
    paras = ["TextWorld game commands. Type 'help' in any game to see them."]
    paras += [f"Command {line}" for line in textworld_help_lines()]
    for module, title in _CHALLENGES:
        mod = importlib.import_module(module)
        body = _rst_paragraphs(mod.__doc__ or "")
        body = [p for p in body if p.strip() != title]
        paras.append(f"{title}.")
        paras += body
        paras += [f"{title} settings: {b}" for b in _notes_bullets(getattr(mod, "make"))]
    return "\n\n".join(paras) + "\n"


def question_tasks(questions, doc_name: str) -> list[Task]:
    """Questions -> Tasks (env "document", family ``doc_name``, payload rubrics)."""
    tasks = []
    for i, q in enumerate(questions):
        if isinstance(q, dict):
            qid, split, text, rubrics = q.get("id", f"q{i}"), q.get("split", "train"), q["question"], q["rubrics"]
        else:
            qid, split, text, rubrics = q
        if not isinstance(text, str) or not text.strip() or not rubrics or \
                not all(isinstance(r, str) and r.strip() for r in rubrics):
            raise ValueError(f"question {i} ({qid!r}) needs a question text and non-empty rubric strings")
        if split not in ("train", "eval"):
            raise ValueError(f"question {qid!r}: split must be 'train' or 'eval', got {split!r}")
        tasks.append(Task(id=f"{doc_name}/{qid}", env="document", family=doc_name, goal=text.strip(),
                          split=split, payload={"rubrics": list(rubrics)}))
    return tasks


def load_document(cfg_doc) -> tuple[str, str, list[Task]]:
    """(name, text, tasks) from ``config.document``: the embedded TextWorld docs when
    ``path`` is empty, else the given file and questions JSONL."""
    if not cfg_doc.get("path"):
        return "textworld-docs", textworld_documentation(), question_tasks(TEXTWORLD_QUESTIONS, "textworld-docs")
    path = pathlib.Path(cfg_doc["path"])
    text = path.read_text(encoding="utf-8")
    qpath = cfg_doc.get("questions")
    if not qpath:
        raise ValueError("document.questions (JSONL of question/rubrics) is required with document.path")
    qs = [json.loads(ln) for ln in pathlib.Path(qpath).read_text(encoding="utf-8").splitlines() if ln.strip()]
    name = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "document"
    return name, text, question_tasks(qs, name)
