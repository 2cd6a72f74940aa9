"""SkillOS and Skill-alpha with their frozen executor / worker served by ``mode=serve`` (loopback
HTTP through ``OpenAICompatWorker``) give the same rewards as with the in-process frozen copy,
for the same seeds. Written against the methods' own APIs (no method code changed).

Every sampler here is greedy (executor / worker temperature 0, curator 0): the engine's
sampler-call counter, which the in-process executor advances and a remote one does not, then
cannot make the two runs' draws differ (at temperature > 0 the curator's and editor's draws
differ by design, so rewards would too).

* SkillOS: one rollout step (1 group of 3 real TextWorld games x 2 rollouts): per rollout
  r_task, r_fc, r_comp, r and every task record (success, steps, the executor trajectory's
  evidence tokens in the curator prompt, the curator's completion); and a whole ``steps = 0``
  run's eval.json.
* Skill-alpha: the evidence stream (the worker plays the evidence games) and a training unit's
  rollback rewards (r_ctrl, r_edit, rewards) for hand-written candidate edits.
"""
import json

import pytest



def _serve(model_path, max_len, name="served"):
    from configs.serve import get_config
    from skillax.modes import serve

    c = get_config()
    c.model.path, c.model.dtype, c.model.max_len = model_path, "float32", max_len
    c.serve.port, c.serve.model_name, c.serve.batch_window_ms = 0, name, 20.0
    return serve.start(c)


def _record(obj, name, log):
    """Keep every answer ``obj.name`` returns (the real call still answers)."""
    inner = getattr(obj, name)

    def call(*a, **kw):
        out = inner(*a, **kw)
        log.extend(getattr(o, "text", o) for o in out)
        return out
    setattr(obj, name, call)


def _stop(srv, service):
    srv.shutdown()
    srv.server_close()
    service.batcher.close()


@pytest.fixture(scope="module")
def skillos_model(tmp_path_factory):
    from tests.methods.test_skillos_integration import _tiny_model_dir

    return _tiny_model_dir(str(tmp_path_factory.mktemp("model")))


@pytest.fixture(scope="module")
def skillos_server(skillos_model):
    """(service, info) of one server of the SkillOS model for the module's two SkillOS tests
    (it keeps no state between requests: one model load and compile instead of two)."""
    srv, service, info = _serve(skillos_model, int(_skillos_cfg(skillos_model).model.max_len))
    yield service, info
    _stop(srv, service)


def _skillos_cfg(model, steps=1):
    from tests.methods.test_skillos_integration import tiny_config

    c = tiny_config(model, steps=steps)
    c.executor.temperature = 0.0
    c.eval.temperature = 0.0
    return c


def _skillos_rollouts(cfg, work):
    from skillax.agents.envs.textworld_env import default_textworld_tasks
    from skillax.methods.common.engine import PolicyEngine
    from skillax.methods.skillos.groups import make_groups
    from skillax.methods.skillos.rollout import rollout_step, score_rollouts
    from skillax.methods.skillos.train import make_executor, make_pool, rollout_config

    eng = PolicyEngine.create(cfg, work)
    frozen = eng.frozen_copy() if cfg.executor.kind == "policy" else None
    ex = make_executor(cfg, eng, frozen)
    answers = []
    _record(ex.backend, "chat", answers)
    tasks = default_textworld_tasks(3, "train", (("tw-treasure_hunter", {"level": 5}),))
    with make_pool(cfg) as pool:
        rolls = rollout_step(make_groups(tasks, 3), 2, eng.policy_sampler(0.0), ex, pool, work / "r",
                             rollout_config(cfg))
    score_rollouts(rolls, lambda s: len(eng.tokenizer.encode(s, add_special_tokens=False)))
    eng.close()
    out = []
    for r in rolls:
        recs = [(x.task_id, x.retrieved, x.success, x.failed, x.n_steps, x.evidence_tokens, x.prompt_tokens,
                 x.generation.completion_ids if x.generation else None) for x in r.records]
        out.append(dict(r_task=r.r_task, r_fc=r.r_fc, r_comp=r.r_comp, r=r.r, records=recs,
                        repo=sorted(r.repo.names())))
    return out, ex, answers


def test_skillos_served_executor_gives_the_same_rewards(skillos_model, skillos_server, tmp_path):
    service, info = skillos_server
    local, _, local_answers = _skillos_rollouts(_skillos_cfg(skillos_model), tmp_path / "local")
    calls0 = service.batcher.stats["calls"]
    c = _skillos_cfg(skillos_model)
    c.executor.kind, c.executor.openai.base_url, c.executor.openai.model = "openai", info["url"], info["model"]
    c.executor.openai.max_retries = 0
    served, ex, served_answers = _skillos_rollouts(c, tmp_path / "served")
    assert ex.stats["errors"] == 0 and service.batcher.stats["calls"] > calls0
    assert len(local) == 2 and all(len(r["records"]) == 3 for r in local)
    assert len(local_answers) >= 12 and any(local_answers)          # 2 x 3 episodes x <= 2 steps
    assert served_answers == local_answers                          # the executor's every answer
    assert served == local


def test_skillos_steps0_run_served_executor_same_eval(skillos_model, skillos_server, tmp_path):
    from skillax.methods.skillos import run

    service, info = skillos_server
    run(_skillos_cfg(skillos_model, steps=0), str(tmp_path / "local"))
    calls0 = service.batcher.stats["calls"]
    c = _skillos_cfg(skillos_model, steps=0)
    c.executor.kind, c.executor.openai.base_url, c.executor.openai.model = "openai", info["url"], info["model"]
    run(c, str(tmp_path / "served"))
    assert service.batcher.stats["calls"] > calls0                 # the eval's executor was the server

    def ev(w):
        d = json.loads((w / "eval.json").read_text())
        d.pop("seconds", None)
        return d
    assert ev(tmp_path / "served") == ev(tmp_path / "local")


def test_skill_alpha_served_worker_gives_the_same_rewards(tmp_path):
    from skillax.methods.common.engine import PolicyEngine
    from skillax.methods.skill_alpha import setting as setting_lib
    from skillax.methods.skill_alpha.loop import unit_config
    from skillax.methods.skill_alpha.unit import UnitInput, score_candidates
    from tests.methods.test_skill_alpha_integration import _tiny_model_dir, tiny_config

    model = _tiny_model_dir(str(tmp_path / "model"))
    texts = ['<think>\nx</think>\n{"action": "CREATE", "content": "Read the goal, then follow it step by step."}',
             '<think>\nx</think>\n{"action": "CREATE", "content": "Go north first, then take what you see."}',
             '<think>\nx</think>\n{"action": "NOOP"}',
             "garbage"]

    def unit(cfg, work):
        engine = PolicyEngine.create(cfg, work)
        worker = setting_lib.build_worker(cfg, engine)
        answers = []
        _record(worker, "chat", answers)
        z0 = setting_lib.initial_skill(cfg)
        ucfg = unit_config(cfg)
        st = setting_lib.build_setting(cfg, worker, z0, work, ucfg.max_prompt_tokens)
        item = st.stream.items[0]
        anchors = st.stream.draw_anchors(item, 1, seed=0)
        (res,) = score_candidates([UnitInput(z0, item.units, anchors, item.kind, item.family)], [texts],
                                  st.scorer, ucfg)
        st.scorer.close()
        engine.close()
        return dict(stream=json.loads(st.stream.to_json()), r_ctrl=res.r_ctrl, rewards=list(res.rewards),
                    r_edit=[c.r_edit for c in res.candidates], valid=[c.valid for c in res.candidates],
                    jobs=res.worker_jobs, answers=answers), worker

    local, _ = unit(tiny_config(model), tmp_path / "local")
    srv, service, info = _serve(model, int(tiny_config(model).model.max_len))
    try:
        c = tiny_config(model)
        c.worker.kind = "openai"
        c.worker.openai.model, c.worker.openai.base_url = info["model"], info["url"]
        served, worker = unit(c, tmp_path / "served")
    finally:
        _stop(srv, service)
    assert worker.usage.failures == 0 and worker.usage.calls > 0
    assert local["valid"] == [True, True, True, False] and local["jobs"] == 3
    assert len(local["answers"]) >= 8 and any(local["answers"])     # evidence games + unit games
    assert served["answers"] == local["answers"]
    assert served == local
