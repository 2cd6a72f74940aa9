"""TextWorld games: deterministic generation from (challenge, settings, seed) and play.

Two classes:

* :class:`TWGameEnv` -- plays any game file through ``textworld.start`` and implements the
  :mod:`skillax.agents.envs.base` protocol (step counting, step cap, invalid actions, score
  deltas as rewards). :class:`~skillax.agents.envs.alfworld.AlfWorldEnv` reuses it.
* :class:`TextWorldEnv` -- games generated with TextWorld's challenge API
  (``textworld.challenges.CHALLENGES``: tw-simple, tw-cooking, tw-coin_collector,
  tw-treasure_hunter), compiled once into the cache (``$SKILLAX_CACHE/textworld/<version>/``).

Source: Cote et al., "TextWorld: A Learning Environment for Text-based Games" (2018);
textworld 1.7 ``textworld.challenges`` and ``textworld.generator.compile_game``.
Generation takes 1-5 s per game on one core; a step takes 1-13 ms.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from typing import Any, Iterable

from skillax.agents.envs.base import (MAX_ACTION_CHARS, Task, atomic_write_text, cache_dir,
                                      check_action, normalize_action, read_json)

# Settings each challenge needs, with the defaults we fill in (textworld's argparse defaults).
CHALLENGE_DEFAULTS: dict[str, dict[str, Any]] = {
    "tw-simple": {"rewards": "dense", "goal": "detailed", "test": False},
    "tw-cooking": {"recipe": 1, "take": 0, "go": 1, "open": False, "cook": False, "cut": False,
                   "drop": False, "recipe_seed": 0, "split": "train"},
    "tw-coin_collector": {"level": 1},
    "tw-treasure_hunter": {"level": 1},
}

# The standard task families (``tw_families`` unset or "default"): short games
# (walkthroughs of 3-7 steps) with detailed objectives, small enough for a 135M policy with
# ~400-token prompts; they need an episode step cap of >= 7 to be winnable.
DEFAULT_FAMILIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("tw-treasure_hunter", {"level": 5}),   # 3 steps: follow directions, take an object
    ("tw-coin_collector", {"level": 5}),    # 5 steps: navigate, take the coin
    ("tw-cooking", {"recipe": 1, "take": 1, "go": 1, "open": True}),  # 6 steps
    ("tw-cooking", {"recipe": 1, "take": 1, "go": 6}),  # 5-7 steps with navigation
)
# The embedded default's families (configs/default.py, ``tw_families = "one_step"``): the
# object to take lies in the start room (treasure hunter: a named object, 5-8 admissible
# commands with exits as distractors; coin collector: the coin, 4 commands), so the
# walkthrough is one action and a warm-started 135M policy can win within the 2-step cap of
# a two-step CPU run. Their SFT distil demonstrations pass library admission ("no navigation
# needed"), which one-move games' ("go south" / "take key": under 3 words) would not.
ONE_STEP_FAMILIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("tw-treasure_hunter", {"level": 1}),   # 1 step: take <object> (passkey, broom, knife, ...)
    ("tw-coin_collector", {"level": 1}),    # 1 step: take coin
)
# Named family sets for ``env.tw_families``.
FAMILY_SETS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "default": DEFAULT_FAMILIES, "one_step": ONE_STEP_FAMILIES}
DEFAULT_SEED_OFFSET = {"train": 0, "valid": 100_000, "test": 200_000}

_DROP_PREFIXES = ("-= Welcome to TextWorld", "Would you like to RESTART")
_BANNER_LINE = re.compile(r"\$\$|^[\s$\\|_/]+$|^>")  # art, rules, and the "> status" prompt line


def canonical_settings(challenge: str, settings: dict[str, Any] | None) -> dict[str, Any]:
    """Fill in defaults and check keys. Raises ValueError on an unknown challenge or key."""
    if challenge not in CHALLENGE_DEFAULTS:
        raise ValueError(f"unknown TextWorld challenge {challenge!r}; known: {sorted(CHALLENGE_DEFAULTS)}")
    out = dict(CHALLENGE_DEFAULTS[challenge])
    for k, v in (settings or {}).items():
        if k not in out:
            raise ValueError(f"unknown setting {k!r} for {challenge}; known: {sorted(out)}")
        out[k] = v
    return out


def family_name(challenge: str, settings: dict[str, Any]) -> str:
    """Grouping key: challenge + the settings that differ from the defaults, e.g.
    ``"tw-cooking/go=6,recipe=1,take=1"``."""
    s = canonical_settings(challenge, settings)
    diff = {k: v for k, v in s.items() if CHALLENGE_DEFAULTS[challenge][k] != v}
    return challenge + ("/" + ",".join(f"{k}={diff[k]}" for k in sorted(diff)) if diff else "")


def _setting_value(v: str):
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    try:
        return int(v)
    except ValueError:
        return v


def parse_families(spec: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """``"tw-cooking:recipe=1,take=1;tw-simple"`` -> ``(("tw-cooking", {"recipe": 1, "take": 1}),
    ("tw-simple", {}))``. Raises ValueError on a malformed ``key=value``."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        challenge, _, rest = part.partition(":")
        settings = {}
        for kv in filter(None, (x.strip() for x in rest.split(","))):
            k, eq, v = kv.partition("=")
            if not eq or not k.strip():
                raise ValueError(f"malformed TextWorld setting {kv!r} in {spec!r} (expected key=value)")
            settings[k.strip()] = _setting_value(v.strip())
        out.append((challenge.strip(), settings))
    return tuple(out)


def resolve_families(spec: str | None) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The families an ``env.tw_families`` value names: empty -> :data:`DEFAULT_FAMILIES`;
    a key of :data:`FAMILY_SETS` (``"default"``, ``"one_step"``) -> that set; anything else is
    parsed by :func:`parse_families` (``"challenge:key=value,...;challenge2"``)."""
    spec = (spec or "").strip()
    if not spec:
        return DEFAULT_FAMILIES
    if spec in FAMILY_SETS:
        return FAMILY_SETS[spec]
    return parse_families(spec)


def strip_banner(text: str) -> str:
    """Remove TextWorld's ASCII-art banner, the Inform ``>`` prompt/status line and ALFWorld's
    welcome line; collapse runs of blank lines; strip."""
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if not _BANNER_LINE.search(ln) and not ln.startswith(_DROP_PREFIXES)]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _game_paths(challenge: str, settings: dict[str, Any], seed: int, root: str | None) -> str:
    import textworld

    base = root or cache_dir(os.path.join("textworld", textworld.__version__))
    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
    return os.path.join(base, challenge, f"{key}-s{seed}")


def generate_game(challenge: str, settings: dict[str, Any] | None, seed: int,
                  root: str | None = None) -> dict[str, Any]:
    """Generate (or load from cache) one game; deterministic in (challenge, settings, seed).

    Returns the metadata dict ``{"game_file", "objective", "walkthrough", "max_score",
    "challenge", "settings", "seed"}``. The compiled ``.z8`` and textworld's ``.json`` are
    written atomically; the ``.meta.json`` sidecar is written last and marks completion, so
    concurrent workers never read a half-written game.
    """
    import textworld
    import textworld.challenges
    from textworld.generator import compile_game

    settings = canonical_settings(challenge, settings)
    stem = _game_paths(challenge, settings, int(seed), root)
    meta_path = stem + ".meta.json"
    if os.path.exists(meta_path):
        return read_json(meta_path, ("game_file", "objective", "walkthrough", "max_score", "challenge",
                                     "settings", "seed"))
    os.makedirs(os.path.dirname(stem), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(stem), prefix=".gen-")
    try:
        opts = textworld.GameOptions()
        opts.seeds = int(seed)
        opts.path = os.path.join(tmp, "game.z8")
        opts.force_recompile = True
        game = textworld.challenges.CHALLENGES[challenge][1](dict(settings), opts)
        compiled = compile_game(game, opts)
        os.replace(os.path.join(tmp, "game.json"), stem + ".json")
        os.replace(compiled, stem + ".z8")
        meta = {"game_file": stem + ".z8", "objective": game.objective,
                "walkthrough": list(game.metadata.get("walkthrough") or game.walkthrough or []),
                "max_score": game.max_score, "challenge": challenge, "settings": settings,
                "seed": int(seed), "textworld": textworld.__version__}
        atomic_write_text(meta_path, json.dumps(meta, indent=1))
        return meta
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def make_textworld_tasks(challenge: str, settings: dict[str, Any] | None, seeds: Iterable[int],
                         split: str = "train", root: str | None = None) -> list[Task]:
    """One :class:`Task` per seed (games generated/cached now, so ``goal`` is the objective).

    Task ids are ``"<family>#<seed>"``; ``payload`` holds challenge, settings, seed,
    game_file and walkthrough; ``attributes`` holds challenge and the settings.
    """
    settings = canonical_settings(challenge, settings)
    fam = family_name(challenge, settings)
    tasks = []
    for seed in seeds:
        meta = generate_game(challenge, settings, seed, root)
        tasks.append(Task(id=f"{fam}#{seed}", env="textworld", family=fam,
                          goal=strip_banner(meta["objective"]), split=split,
                          attributes={"challenge": challenge, **{k: str(v) for k, v in settings.items()}},
                          payload={k: meta[k] for k in ("challenge", "settings", "seed", "game_file",
                                                        "walkthrough", "max_score")}))
    return tasks


def default_textworld_tasks(n_per_family: int = 4, split: str = "train",
                            families: tuple = DEFAULT_FAMILIES, root: str | None = None) -> list[Task]:
    """A generated task set: ``n_per_family`` games of each of ``families`` (default
    :data:`DEFAULT_FAMILIES`); seeds ``offset + i`` with the offset from ``split``
    (train 0, valid 100000, test 200000) so splits never share a game."""
    out: list[Task] = []
    for challenge, settings, seed in family_seeds(n_per_family, split, families):
        out += make_textworld_tasks(challenge, settings, [seed], split, root)
    return out


def family_seeds(n_per_family: int = 4, split: str = "train",
                 families: tuple = DEFAULT_FAMILIES) -> list[tuple[str, dict[str, Any], int]]:
    """The ``(challenge, settings, seed)`` of :func:`default_textworld_tasks`' games, in its
    order, without generating anything (callers that keep a sample generate only that)."""
    if split not in DEFAULT_SEED_OFFSET:
        raise ValueError(f"split must be one of {sorted(DEFAULT_SEED_OFFSET)}, got {split!r}")
    off = DEFAULT_SEED_OFFSET[split]
    return [(challenge, settings, seed) for challenge, settings in families
            for seed in range(off, off + n_per_family)]


class TWGameEnv:
    """Plays one textworld game file per episode (the base of TextWorld and ALFWorld envs).

    Subclasses implement ``_game_file(task)`` and may override ``_wrappers()``,
    ``_extra_infos()`` and ``_clean(text)``. The loaded game is kept and reused when the
    next task uses the same file (G rollouts of one task reset cheaply).

    Rewards are score increases (``score_t - score_{t-1}``; ALFWorld scores 1 when won).
    Invalid actions (see :func:`~skillax.agents.envs.base.check_action`) are still played:
    empty/over-long ones are sent as the empty command, so the game answers as it does to
    nothing ("Nothing happens." in ALFWorld, "I beg your pardon?" in Inform games). A
    normalised action equal to an admissible command is sent in the game's own spelling.

    ``expert_plan``: False (no plan), True / "step" (textworld's ``policy_commands`` after the
    reset and after every step: a planner run each time), or "reset" (after the reset only;
    steps carry no ``expert_plan``). Raises ValueError for another value.
    """

    def __init__(self, max_steps: int = 50, max_action_chars: int = MAX_ACTION_CHARS,
                 expert_plan: bool | str = False):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.max_steps = int(max_steps)
        self.max_action_chars = int(max_action_chars)
        modes = {False: None, True: "step", "step": "step", "reset": "reset"}
        if not isinstance(expert_plan, (bool, str)) or expert_plan not in modes:
            raise ValueError(f"expert_plan must be False, True, 'step' or 'reset', got {expert_plan!r}")
        self.plan_at = modes[expert_plan]
        self._env = None
        self._path: str | None = None
        self._task: Task | None = None
        self._done = True

    # -- hooks -----------------------------------------------------------------------
    def _game_file(self, task: Task) -> str:
        raise NotImplementedError

    def _wrappers(self) -> list:
        return []

    def _extra_infos(self) -> list[str]:
        return []

    def _clean(self, text: str) -> str:
        return strip_banner(text)

    # -- protocol --------------------------------------------------------------------
    def _start(self, path: str) -> None:
        import textworld

        infos = textworld.EnvInfos(won=True, lost=True, score=True, max_score=True,
                                   admissible_commands=True, policy_commands=self.plan_at is not None,
                                   extras=self._extra_infos())
        self.close()
        with warnings.catch_warnings():
            # jericho does not know generated games; textworld tracks score/won itself.
            warnings.filterwarnings("ignore", message=".*is not fully supported.*")
            self._env = textworld.start(path, request_infos=infos, wrappers=self._wrappers())
        self._path = path

    def reset(self, task: Task) -> tuple[str, dict]:
        """Start ``task``'s game. Returns (observation, info) with ``step == 0``."""
        path = self._game_file(task)
        if self._env is None or self._path != path:
            self._start(path)
        if self.plan_at == "reset":
            self._plan_requests(True)
        state = self._env.reset()
        if self.plan_at == "reset":   # the steps follow that plan: no planner run per step
            self._plan_requests(False)
        self._task, self._steps, self._done = task, 0, False
        self._score = float(state.get("score") or 0)
        obs = self._clean(state.feedback)
        return obs, self._info(state, None, truncated=False)

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        """Play one action. Raises RuntimeError before reset or after the episode ended."""
        if self._env is None or self._task is None:
            raise RuntimeError("step() called before reset()")
        if self._done:
            raise RuntimeError("step() called after the episode ended; call reset()")
        cmd, reason = check_action(action, self._admissible, self.max_action_chars)
        if reason is None or reason == "not_admissible":
            cmd = self._spelling.get(cmd, cmd)
        state, _, done = self._env.step(cmd)
        self._steps += 1
        score = float(state.get("score") or 0)
        reward, self._score = score - self._score, score
        truncated = not done and self._steps >= self.max_steps
        self._done = bool(done) or truncated
        return self._clean(state.feedback), reward, self._done, self._info(state, reason, truncated)

    def _info(self, state, reason: str | None, truncated: bool) -> dict:
        adm = list(state.get("admissible_commands") or [])
        self._admissible = adm
        self._spelling = {normalize_action(c): c for c in adm}
        info = {"won": bool(state.get("won")), "admissible_commands": adm, "step": self._steps,
                "invalid": reason is not None, "invalid_reason": reason, "truncated": truncated,
                "lost": bool(state.get("lost")), "score": float(state.get("score") or 0),
                "max_score": float(state.get("max_score") or 0), "task_id": self._task.id}
        if self.plan_at == "step" or (self.plan_at == "reset" and self._steps == 0):
            info["expert_plan"] = list(state.get("policy_commands") or [])
        return info

    def _plan_requests(self, on: bool) -> None:
        """Switch textworld's ``policy_commands`` request on every layer of the wrapped env
        (each wrapper holds the request; the PDDL env plans on reset / step while it is on)."""
        e = self._env
        while e is not None:
            if getattr(e, "request_infos", None) is not None:
                e.request_infos.policy_commands = on
            e = getattr(e, "_wrapped_env", None)

    def close(self) -> None:
        """Release the game (idempotent)."""
        if self._env is not None:
            try:
                self._env.close()
            finally:
                self._env, self._path = None, None


class TextWorldEnv(TWGameEnv):
    """Generated TextWorld games (tasks from :func:`make_textworld_tasks`).

    Args:
      max_steps: episode step cap (default 20; default-family walkthroughs take <= 7).
      expert_plan: add ``info["expert_plan"]`` (textworld ``policy_commands``): True after
        the reset and every step, "reset" after the reset only (``TWGameEnv``).
      root: game cache directory (default ``$SKILLAX_CACHE/textworld/<version>``).
    A task whose cached file is missing (e.g. another machine) is regenerated from its
    (challenge, settings, seed) payload.
    """

    def __init__(self, max_steps: int = 20, max_action_chars: int = MAX_ACTION_CHARS,
                 expert_plan: bool | str = False, root: str | None = None):
        super().__init__(max_steps, max_action_chars, expert_plan)
        self.root = root

    def _game_file(self, task: Task) -> str:
        p = task.payload
        missing = [k for k in ("challenge", "settings", "seed") if k not in p]
        if missing:
            raise ValueError(f"task {task.id!r} is not a TextWorld task: payload lacks {missing}")
        path = p.get("game_file")
        if path and os.path.exists(path) and os.path.exists(os.path.splitext(path)[0] + ".json"):
            return path
        return generate_game(p["challenge"], p["settings"], p["seed"], self.root)["game_file"]
