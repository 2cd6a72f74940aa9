"""Held-out evaluations on common random numbers (ARCHITECTURE.md, "Sampling keys"): Skill-alpha's
``evaluate_conditions`` and SkillOS's ``evaluate`` play game g of a split with the same keys
whatever the training counter, the chunking (``eval.batch_size``) and the conditions an arm
evaluates. Real components throughout: a tiny random Qwen3 sampling at T = 1 (so the keys
decide the tokens) as frozen worker / executor and curator, on the toy game of
``tests.agents._toy_env`` (2 steps a game); records compared field by field (``first_response``
is the first turn's sampled text)."""
import jax.numpy as jnp
import pytest

from skillax.agents.agent_loop import PlayConfig
from skillax.agents.envs import ENV_REGISTRY, EnvSpec, Task
from skillax.agents.envs.runner import EnvPool
from skillax.engine import Buckets, Sampler
from skillax.evaluation import read_records
from skillax.methods.common.policy import (EVAL_CALL_OFFSET, EVAL_SPLIT_STRIDE, CallCounter, PolicySampler,
                                           evaluation_episode)
from tests.agents._toy_env import ToyEnv
from tests.models.hf_fixtures import save_hf_model

TOY = f"{ToyEnv.__module__}:ToyEnv"
STEPS = 2
# two splits of 3 and 2 games: game ids 0..2 and 2^20 + 0..1
SPLITS = {s: [Task(f"{s}/g{i}", "toy", "toy", f"toy goal {s} {i}", split=s) for i in range(n)]
          for s, n in (("s1", 3), ("s2", 2))}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(sampler, tokenizer, params): a 2-layer random Qwen3 with SmolLM2's tokenizer (the
    curator's ~930-token prompt; a toy tokenizer's is 2.3x longer) in one fp32 sampler: three
    programs (16 rows x 256 and 4 rows x 256 for play and self-judgement, 4 x 1024 for the curator)."""
    from skillax.models.hf_io import load_hf_checkpoint
    from skillax.tokenizers.loader import load_tokenizer

    tok = load_tokenizer("smollm2")
    folder = save_hf_model("qwen3_tied_gqa42", tmp_path_factory.mktemp("qwen3"), vocab_size=len(tok), layers=2)
    params, cfg = load_hf_checkpoint(folder, dtype=jnp.float32)
    sampler = Sampler(cfg, tok, max_len=1056, dtype=jnp.float32,
                      buckets=Buckets(batch=(4, 16), prompt=(256, 1024), new_tokens=(8,), cache=(288, 1056)))
    return sampler, tok, params


def _policy(model, counter: CallCounter) -> PolicySampler:
    sampler, tok, params = model
    return PolicySampler(sampler, tok, lambda: params, seed=3, temperature=1.0, counter=counter)


def _dicts(records) -> list[dict]:
    return [r.to_dict() for r in records]


def test_evaluation_episode_ids():
    assert evaluation_episode(0, 5) == 5 and evaluation_episode(2, 5) == 2 * EVAL_SPLIT_STRIDE + 5
    assert evaluation_episode(2047, EVAL_SPLIT_STRIDE - 1) == (1 << 31) - 1       # int32-safe
    for bad in ((0, EVAL_SPLIT_STRIDE), (0, -1), (-1, 0), (2048, 0)):
        with pytest.raises(ValueError):
            evaluation_episode(*bad)


# ------------------------------------------------------------------------------------- Skill-alpha
def _alpha(model, workdir, conds, batch_size, counter) -> dict:
    """Skill-alpha's held-out evaluation of ``conds`` -> {(condition, split): record dicts}."""
    from skillax.methods.skill_alpha.anchors import EnvScorer
    from skillax.methods.skill_alpha.evaluate import evaluate_conditions
    from skillax.methods.skill_alpha.setting import policy_worker
    from skillax.skills.rules import make_rule_body, with_rules
    from skillax.skills.skill_md import make_skill

    policy = _policy(model, counter)
    z = with_rules(make_skill("toy-skill", "How to play the toy game."), make_rule_body(["Say win to win."]))
    skills = {"no_skill": None, "with_skill": z, "handwritten": None}     # handwritten: empty, = no_skill
    scorer = EnvScorer(policy_worker(policy.tokenizer, policy, None), "toy", max_steps=STEPS, temperature=1.0,
                       max_tokens=8, play_cfg=PlayConfig(max_admissible=2, max_obs_chars=40, max_skills=1))
    before = policy.calls
    try:
        evaluate_conditions(scorer, SPLITS, {c: skills[c] for c in conds}, workdir, batch_size=batch_size)
    finally:
        scorer.close()
    assert policy.calls == before                       # the training counter did not move
    return {(c, s): _dicts(read_records(workdir / "eval" / f"{c}__{s}.jsonl")) for c in conds for s in SPLITS}


@pytest.fixture(scope="module")
def alpha_sft(model, tmp_path_factory):
    """The sft arm: no_skill, with_skill and (empty) handwritten in one lock-step chunk, with
    the training counter at 0."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(ENV_REGISTRY, "toy", TOY)
        return _alpha(model, tmp_path_factory.mktemp("sft"), ("no_skill", "with_skill", "handwritten"), 0,
                      CallCounter(0))


def test_skill_alpha_sampling_is_not_trivial(alpha_sft):
    firsts = [r["first_response"] for r in alpha_sft[("with_skill", "s1")] + alpha_sft[("with_skill", "s2")]]
    assert len(set(firsts)) == len(firsts)            # every game samples its own text
    assert alpha_sft[("handwritten", "s1")] == alpha_sft[("no_skill", "s1")]   # same prompt, same keys


def test_skill_alpha_eval_ignores_the_training_counter(alpha_sft, model, tmp_path, monkeypatch):
    """(a) The same conditions after 37 more training words: the same episodes."""
    monkeypatch.setitem(ENV_REGISTRY, "toy", TOY)
    again = _alpha(model, tmp_path, ("no_skill", "with_skill", "handwritten"), 0, CallCounter(37))
    assert again == alpha_sft


def test_skill_alpha_eval_ignores_the_conditions_and_the_chunking(alpha_sft, model, tmp_path, monkeypatch):
    """(b, c) The rl arm's layout -- with_skill alone, in chunks of 2 -- gives the sft arm's
    with_skill episodes."""
    monkeypatch.setitem(ENV_REGISTRY, "toy", TOY)
    rl = _alpha(model, tmp_path, ("with_skill",), 2, CallCounter(5))
    assert rl == {k: v for k, v in alpha_sft.items() if k[0] == "with_skill"}


# ------------------------------------------------------------------------------------------- SkillOS
def _skillos(model, root, conds, batch_size, counter) -> dict:
    """SkillOS's held-out evaluation (groups of 2 + 1 and 2 games) -> {(condition, split): record dicts}."""
    from skillax.methods.skillos import evaluate as ev
    from skillax.methods.skillos.executor import Executor, PolicyChat
    from skillax.methods.skillos.groups import TaskGroup
    from skillax.methods.skillos.rollout import RolloutConfig

    sampler = model[0]
    splits = {"s1": [TaskGroup(0, "toy", tuple(SPLITS["s1"][:2])), TaskGroup(1, "toy", tuple(SPLITS["s1"][2:]))],
              "s2": [TaskGroup(0, "toy", tuple(SPLITS["s2"]))]}
    executor = Executor(PolicyChat(_policy(model, counter), sampler.max_len),
                        PlayConfig(max_admissible=2, max_obs_chars=40), action_tokens=8, max_steps=STEPS,
                        self_judge="executor", judge_tokens=4)
    curator = _policy(model, counter)                   # one engine: one counter
    cfg = RolloutConfig(curator_tokens=8, max_prompt_tokens=1000, curator_prefix="<tool_call>\n")
    before = counter.value
    with EnvPool(EnvSpec(TOY, {"max_steps": STEPS}), 0, max_steps=STEPS) as pool:
        recs, _ = ev.evaluate(splits, conds, curator, executor, pool, root / "rollouts", cfg, batch_size=batch_size)
    assert counter.value == before                      # the training counter did not move
    return {k: _dicts(v) for k, v in recs.items()}


@pytest.fixture(scope="module")
def skillos_sft(model, tmp_path_factory):
    """The sft arm: no_memory and curated, every game / group in one chunk, counter at 0."""
    return _skillos(model, tmp_path_factory.mktemp("sft"), ("no_memory", "curated"), 0, CallCounter(0))


def test_skillos_curated_first_game_plays_as_no_memory(skillos_sft):
    """Position 0 of a curated group retrieves from the empty repo: the no_memory prompt, and
    the same keys, so the same episode."""
    play = ("won", "steps", "invalid_actions", "failed", "invalid_reasons", "env_invalid", "first_response",
            "first_invalid")
    for s in ("s1", "s2"):
        nm, cu = skillos_sft[("no_memory", s)], skillos_sft[("curated", s)]
        firsts = [(n, c) for n, c in zip(nm, cu) if c["extras"]["position"] == 0]
        assert len(firsts) == (2 if s == "s1" else 1)
        for n, c in firsts:
            assert c["retrieved"] == 0 and {k: n[k] for k in play} == {k: c[k] for k in play}
    firsts = [r["first_response"] for s in ("s1", "s2") for r in skillos_sft[("no_memory", s)]]
    assert len(set(firsts)) == len(firsts)            # every game samples its own text


def test_skillos_eval_ignores_the_training_counter(skillos_sft, model, tmp_path):
    """(a) no_memory (the same flat layout) after 37 more training words: the same episodes."""
    again = _skillos(model, tmp_path, ("no_memory",), 0, CallCounter(37))
    assert again == {k: v for k, v in skillos_sft.items() if k[0] == "no_memory"}


def test_skillos_eval_ignores_the_conditions_and_the_chunking(skillos_sft, model, tmp_path):
    """(b, c) The rl arm's layout -- curated alone, in chunks of 2 groups, 5 training words
    later -- gives the sft arm's curated episodes (curator and executor keyed alike)."""
    rl = _skillos(model, tmp_path, ("curated",), 2, CallCounter(5))
    assert rl == {k: v for k, v in skillos_sft.items() if k[0] == "curated"}


def test_evaluation_stream_starts_at_the_offset(model):
    from skillax.methods.skillos.executor import Executor, PolicyChat

    counter = CallCounter(9)
    ex = Executor(PolicyChat(_policy(model, counter), 512), PlayConfig(), max_steps=STEPS)
    ev = ex.evaluation_stream()
    assert ev.backend.policy.calls == EVAL_CALL_OFFSET and ev.stats is ex.stats and counter.value == 9


# -------------------------------------------------------------------------------------------- Skill1
def _skill1(model, conds, batch_size, counter) -> dict:
    """Skill1's held-out evaluation (``evaluate_condition``, the library and index empty) of
    split s1's 3 games per condition -> {condition: record dicts}."""
    from skillax.methods.skill1.evaluate import evaluate_condition
    from skillax.methods.skill1.rollout import RolloutConfig
    from skillax.skills.library import SkillLibrary
    from skillax.skills.retrieval import DenseIndex

    policy = _policy(model, counter)
    library, index = SkillLibrary(":memory:"), DenseIndex(lambda texts: None)
    play = PlayConfig(max_admissible=2, max_obs_chars=40)
    before = counter.value
    out = {}
    with EnvPool(EnvSpec(TOY, {"max_steps": STEPS}), 0, max_steps=STEPS) as pool:
        for c in conds:
            rcfg = RolloutConfig(query_tokens=8, action_tokens=8, max_steps=STEPS, distil="off",
                                 use_retrieval=c == "with_library")
            out[c] = _dicts(evaluate_condition(SPLITS["s1"], policy, library, index, pool, play, rcfg,
                                               batch_size=batch_size))
    assert counter.value == before                      # the training counter did not move
    return out


@pytest.fixture(scope="module")
def skill1_sft(model):
    """Both conditions, every game in one chunk, counter at 0."""
    return _skill1(model, ("with_library", "without_library"), 0, CallCounter(0))


def test_skill1_eval_samples_each_game_and_aligns_the_conditions(skill1_sft):
    firsts = [r["first_response"] for r in skill1_sft["without_library"]]
    assert len(set(firsts)) == len(firsts)            # every game samples its own text
    # an empty library: with_library's play prompt is without_library's and its turns key on
    # the same words (the selection words are skipped without retrieval), so the same episodes
    play = ("won", "steps", "invalid_actions", "first_response")
    assert [{k: r[k] for k in play} for r in skill1_sft["with_library"]] == \
        [{k: r[k] for k in play} for r in skill1_sft["without_library"]]


def test_skill1_eval_ignores_the_training_counter_and_the_chunking(skill1_sft, model):
    """(a) after 37 training words, (b) in chunks of 2 (the games 0-1 and 2) and of 1, with
    without_library alone: the same episodes. Before 2026-12-07 a later chunk's games keyed
    on other words and episode indices."""
    for batch_size, counter in ((0, 37), (2, 5), (1, 0)):
        again = _skill1(model, ("without_library",), batch_size, CallCounter(counter))
        assert again["without_library"] == skill1_sft["without_library"], batch_size
