"""SkillOS executor over a real OpenAI-compatible HTTP endpoint (loopback) on real TextWorld
games: skills reach the play prompt, self-judgement, and a failing endpoint is counted, not fatal."""
import json

import pytest

from skillax.agents.agent_loop import PlayConfig
from skillax.agents.envs import env_spec
from skillax.agents.envs.runner import EnvPool
from skillax.agents.envs.textworld_env import default_textworld_tasks
from skillax.agents.workers.openai_compat import OpenAICompatConfig, OpenAICompatWorker
from skillax.methods.skillos.executor import Executor, WorkerChat
from tests.agents.loopback_servers import FakeOpenAIServer

FAMILY = (("tw-treasure_hunter", {"level": 5}),)


def walkthrough_responder(tasks):
    """Answers play prompts with the game's walkthrough step (found from the task sentence and
    the step number in the prompt) and self-judgement questions with "yes"."""
    def respond(req):
        user = req["messages"][-1]["content"]
        if "Answer yes or no" in user:
            return "yes"
        task = next(t for t in tasks if t.goal.strip() in user)
        step = int(user.split("\n\nStep ", 1)[1].split(".", 1)[0]) - 1
        walk = task.payload["walkthrough"]
        return f"<think>next</think><action>{walk[min(step, len(walk) - 1)]}"   # stop string cut off
    return respond


@pytest.fixture(scope="module")
def tasks():
    return default_textworld_tasks(n_per_family=2, split="train", families=FAMILY)


def make(url, retries=0):
    w = OpenAICompatWorker(OpenAICompatConfig(model="m", base_url=url, max_retries=retries, timeout_s=5.0))
    return Executor(WorkerChat(w, 0.0), PlayConfig(max_admissible=8), action_tokens=32, max_steps=5,
                    self_judge="executor")


def test_executor_plays_with_skills_and_judges_itself(tasks):
    with FakeOpenAIServer(walkthrough_responder(tasks)) as srv, EnvPool(env_spec("textworld"), 0) as pool:
        ex = make(srv.base_url)
        trajs = ex.play(pool, tasks, [["go-first: Go where the task says first."], []])
        assert [t.won for t in trajs] == [True, True]
        assert [t.n_steps for t in trajs] == [3, 3]
        users = [json.loads(r["body"])["messages"][-1]["content"] for r in srv.requests]
        with_skill = [u for u in users if "Skills:\n[1] go-first: Go where the task says first." in u]
        assert len(with_skill) == 3 and all(tasks[0].goal.strip() in u for u in with_skill)  # task 0 only
        assert ex.judge(trajs, ["view", "view"]) == [True, True]
        assert ex.stats["errors"] == 0 and ex.stats["requests"] == 3 * 2 + 2


def test_failing_endpoint_is_counted_and_fails_the_episode(tasks):
    with FakeOpenAIServer(walkthrough_responder(tasks)) as srv, EnvPool(env_spec("textworld"), 0) as pool:
        srv.inject(*[("500", "down")] * 100)
        ex = make(srv.base_url)
        trajs = ex.play(pool, tasks, [[], []])
        assert not any(t.won for t in trajs)
        assert all(t.n_invalid == t.n_steps > 0 for t in trajs)   # no action could be parsed
        assert ex.judge(trajs, ["v", "v"]) == [False, False]       # unparsable judgement -> failure
        assert ex.stats["errors"] == sum(t.n_steps for t in trajs) + 2
        assert ex.stats["judge_unparsed"] == 2


def test_env_self_judge_mode(tasks):
    with FakeOpenAIServer(walkthrough_responder(tasks)) as srv, EnvPool(env_spec("textworld"), 0) as pool:
        ex = make(srv.base_url)
        ex.self_judge = "env"
        trajs = ex.play(pool, tasks[:1], [[]])
        assert ex.judge(trajs, ["v"]) == [True] and ex.stats["requests"] == 3
    with pytest.raises(ValueError, match="self_judge"):
        Executor(None, PlayConfig(), self_judge="oracle")
