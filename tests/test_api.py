"""The notebook API (issue 23 item 10): ``import skillax`` is cheap and exposes the names;
configs by name equal their files; chat / sample equal the Sampler's greedy decoding; a tiny
run's checkpoint restores, exports (policy and skills) and reloads to the same weights."""
from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import skillax

REPO = pathlib.Path(__file__).resolve().parents[1]
NAMES = ("Policy", "load_policy", "restore", "chat", "sample", "run", "export_skills", "export_policy")


def test_import_is_cheap_and_exposes_the_api():
    code = ("import sys, time; t = time.perf_counter(); import skillax; dt = time.perf_counter() - t; "
            "heavy = [m for m in ('jax', 'numpy', 'ml_collections') if m in sys.modules]; "
            "print(dt, heavy, sorted(skillax.__all__))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    dt, heavy, names = out.stdout.split(" ", 2)
    assert float(dt) < 1.0 and heavy == "[]", out.stdout
    assert set(NAMES) | {"configs"} <= set(eval(names))
    for n in NAMES:
        assert callable(getattr(skillax, n)) and getattr(skillax, n).__doc__
    assert callable(skillax.configs.get)
    with pytest.raises(AttributeError, match="no attribute 'chatt'"):
        skillax.chatt


def _from_file(name):
    spec = importlib.util.spec_from_file_location(f"ref_{name}", REPO / "configs" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config()


@pytest.mark.parametrize("name", ["default", "skill1_alfworld_learning", "skillos_tiny"])
def test_configs_get_equals_the_file(name):
    got = skillax.configs.get(name)
    assert got.to_dict() == _from_file(name).to_dict()
    assert name in skillax.configs.names()
    with pytest.raises(AttributeError):   # locked as the CLI's --config locks it: typos raise
        got.stpes = 3


def test_configs_overrides_paths_and_errors(tmp_path):
    c = skillax.configs.get("default", {"steps": 1, "model.max_len": 512})
    assert (c.mode, c.steps, c.model.max_len) == ("skill1", 1, 512)
    assert skillax.configs.get(str(REPO / "configs" / "sft.py")).to_dict() == _from_file("sft").to_dict()
    with pytest.raises(KeyError, match="stpes"):
        skillax.configs.get("default", {"stpes": 1})
    with pytest.raises(ValueError, match=r"unknown config 'defualt'; did you mean 'default'\? Available: .*"
                                         r"skill1_alfworld_learning"):
        skillax.configs.get("defualt")
    with pytest.raises(ValueError, match="Available: default, export"):
        skillax.configs.get("no_such_config")
    # the shipped copy (skillax/_configs, package data of the wheel) is the repo's configs/
    assert skillax.configs.CONFIG_DIR.resolve() == (REPO / "configs").resolve()
    assert '"_configs/*.py"' in (REPO / "pyproject.toml").read_text()
    # found from any working directory (an installed package does not run from the repo)
    code = "import skillax; print(skillax.configs.get('default').steps)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and out.stdout.strip() == "2", out.stderr[-2000:]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tests.engine.conftest import make_hf_model, make_tokenizer

    folder = tmp_path_factory.mktemp("api") / "tiny-llama"
    make_hf_model("llama").save_pretrained(str(folder), safe_serialization=True)
    make_tokenizer().save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def policy(model_dir):
    return skillax.load_policy(str(model_dir), max_len=128)


MESSAGES = [{"role": "system", "content": "You play text games."},
            {"role": "user", "content": "You see a drawer 2. Your task is to: open drawer 1"}]


def test_chat_and_sample_equal_the_samplers_greedy_text(policy):
    from skillax.engine import Sampler, SamplingParams

    tok = policy.tokenizer
    ids = tok.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    ids = tok.encode(ids, add_special_tokens=False)
    ref = Sampler(policy.config, tok, max_len=128, dtype=jnp.float32).generate(
        policy.params, [ids], SamplingParams(temperature=0, max_new_tokens=12))
    assert ref.lengths[0] > 3 and ref.texts[0].strip()          # a real reply, not an instant stop
    assert skillax.chat(policy, MESSAGES, max_new_tokens=12) == ref.texts[0]
    # a bare string is one user message; a list of conversations gives a list, prompt-major
    user_only = [MESSAGES[1]]
    assert skillax.chat(policy, MESSAGES[1]["content"], max_new_tokens=12) == \
        skillax.chat(policy, user_only, max_new_tokens=12)
    both = skillax.chat(policy, [MESSAGES, user_only], max_new_tokens=12)
    assert both[0] == ref.texts[0] and len(both) == 2
    # raw continuation: token ids in, the same greedy tokens' text out
    assert skillax.sample(policy, [ids], max_new_tokens=12, temperature=0) == [ref.texts[0]]
    text = "You open the fridge 1."
    raw = skillax.sample(policy, text, max_new_tokens=6, temperature=0)
    assert raw == skillax.sample(policy, [tok.encode(text, add_special_tokens=False)], max_new_tokens=6,
                                 temperature=0)[0]
    assert len(skillax.sample(policy, text, max_new_tokens=4, n=3, seed=1)) == 3
    with pytest.raises(ValueError, match="max_len"):
        skillax.chat(policy, MESSAGES, max_new_tokens=200)


def test_restore_and_export_round_trip(model_dir, policy, tmp_path):
    from skillax.rl.checkpoint import Checkpointer
    from skillax.skills.library import SkillLibrary

    trained = jax.tree.map(lambda x: x * 1.25, policy.params)
    run = tmp_path / "run-a"
    lib = SkillLibrary(tmp_path / "lib.db", capacity=4)
    lib.add("Your task is to: heat an egg.", "", "Action lesson: use the microwave.", step=0)
    with Checkpointer(run / "checkpoints") as ck:
        ck.save(3, {"params": trained, "opt_state": optax.adam(1e-3).init(trained), "step": jnp.int32(3)},
                {"step": 3}, {"library": lib.state_bytes()})
    lib.close()
    (run / "config.json").write_text(json.dumps({"mode": "skill1", "model": {"path": str(model_dir),
                                                                              "max_len": 128}}))
    got = skillax.restore(run)
    assert got.step == 3 and got.max_len == 128 and got.path == str(model_dir)
    for a, b in zip(jax.tree.leaves(got.params), jax.tree.leaves(trained)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    info = skillax.export_policy(run, tmp_path / "hf")
    assert info["step"] == 3 and "model.safetensors" in info["files"]
    back = skillax.load_policy(str(tmp_path / "hf"), max_len=128)
    for a, b in zip(jax.tree.leaves(back.params), jax.tree.leaves(trained)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert skillax.chat(back, MESSAGES, max_new_tokens=8) == skillax.chat(got, MESSAGES, max_new_tokens=8)

    rep = skillax.export_skills(run, tmp_path / "skills")
    assert rep.written == ("heat-egg",) and not rep.skipped
    md = (tmp_path / "skills" / "heat-egg" / "SKILL.md").read_text()
    assert "use the microwave" in md and "run-a" in md
    text = md
    rep2 = skillax.export_skills({"heat-egg": text, "bad": "no front matter"}, tmp_path / "skills2")
    assert rep2.written == ("heat-egg",)
    assert (tmp_path / "skills2" / "heat-egg" / "SKILL.md").read_text() == text   # byte-for-byte

    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        skillax.restore(tmp_path / "empty", model=str(model_dir))
    with pytest.raises(ValueError, match="model.path"):
        skillax.export_policy(tmp_path / "empty", tmp_path / "hf2")
