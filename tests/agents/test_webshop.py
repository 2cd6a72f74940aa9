"""WebShopEnv against a loopback server speaking WebShop's routes and page shapes."""
import pytest

from skillax.agents.envs.base import INFO_KEYS, Task
from skillax.agents.envs.webshop import (WebShopEnv, WebShopError, options_from_url, parse_page,
                                         webshop_tasks)
from tests.agents.loopback_servers import GOAL, FakeWebShopServer


@pytest.fixture
def site():
    with FakeWebShopServer() as srv:
        yield srv


def task(idx=7):
    return Task(id=f"webshop/{idx}", env="webshop", family="webshop", goal="", payload={"goal_idx": idx})


def test_scripted_purchase_yields_the_page_reward(site):
    env = WebShopEnv(site.base_url, timeout_s=2.0)
    obs, info = env.reset(task(7))
    assert set(INFO_KEYS) <= set(info) and info["step"] == 0 and not info["won"]
    assert env.session_id.endswith("_fixed_7") and "fixed" in env.session_id
    assert info["instruction"] == GOAL["instruction_text"]
    assert obs == f"WebShop [SEP] Instruction: [SEP] {GOAL['instruction_text']} [SEP] Search"
    assert info["admissible_commands"] == ["search[<query>]"]  # the Search button is not clickable

    obs, r, done, info = env.step("search[Navy Running Shoes]")
    assert (r, done, info["invalid"]) == (0.0, False, False)
    assert "/search_results/" in info["url"]
    assert "b0test0001" in [c[6:-1] for c in info["admissible_commands"]]
    assert "Navy running shoes, lightweight mesh [SEP] $39.99" in obs
    assert "back to search" in env.page.clickables and "search[<query>]" not in info["admissible_commands"]

    obs, r, done, info = env.step("click[B0TEST0001]")
    assert "/item_page/" in info["url"] and not done
    assert {"click[navy blue]", "click[black]", "click[8]", "click[9]", "click[10]", "click[buy now]",
            "click[description]", "click[< back to results]"} <= set(info["admissible_commands"])
    assert "Price: $39.99" in obs

    obs, r, done, info = env.step("click[navy blue]")
    assert info["options"] == {"color": "navy blue"} and not done
    obs, r, done, info = env.step("click[9]")
    assert info["options"] == {"color": "navy blue", "size": "9"}

    obs, r, done, info = env.step("click[Buy Now]")
    assert (r, done, info["won"], info["step"]) == (1.0, True, True, 5)
    assert obs.startswith("Thank you for shopping with us!")
    assert "B0TEST0001" not in obs  # the hidden goal/answer dump is not observed
    assert site.purchases == [(env.session_id, "B0TEST0001", {"color": "navy blue", "size": "9"})]
    # The buy was a POST to the done route, reached by the site's own form.
    assert [r["method"] for r in site.requests][-1] == "POST"
    assert site.requests[-1]["path"].startswith(f"/done/{env.session_id}/B0TEST0001/")
    with pytest.raises(RuntimeError, match="reset"):
        env.step("click[buy now]")


def test_partial_options_give_partial_reward(site):
    env = WebShopEnv(site.base_url, timeout_s=2.0)
    env.reset(task(3))
    env.step("search[running shoes]")
    env.step("click[b0test0001]")
    env.step("click[navy blue]")
    env.step("click[description]")  # sub page keeps the options
    obs, _, _, info = env.step("click[< back to item page]")
    assert info["options"] == {"color": "navy blue"} and "/item_page/" in info["url"]
    _, r, done, info = env.step("click[buy now]")
    assert (r, done, info["won"]) == (0.5, True, False)


def test_invalid_actions_change_nothing(site):
    env = WebShopEnv(site.base_url, timeout_s=2.0)
    obs0, _ = env.reset(task(1))
    n_req = site.request_count
    for bad, reason in [("click[buy now]", "not_admissible"), ("click[search]", "not_admissible"),
                        ("go north", "not_admissible"), ("", "empty"), ("search[ ]", "empty"),
                        ("search[" + "x" * 300 + "]", "too_long")]:
        obs, r, done, info = env.step(bad)
        assert (obs, r, done, info["invalid"], info["invalid_reason"]) == (obs0, 0.0, False, True, reason), bad
    assert site.request_count == n_req  # nothing was sent
    env.step("search[socks]")
    _, _, _, info = env.step("search[socks]")  # no search bar on the results page
    assert info["invalid_reason"] == "not_admissible"


def test_step_cap_truncates(site):
    env = WebShopEnv(site.base_url, timeout_s=2.0, max_steps=2)
    env.reset(task(1))
    assert env.step("search[socks]")[2] is False
    _, r, done, info = env.step("click[b0test0003]")
    assert (r, done, info["truncated"], info["won"]) == (0.0, True, True, False)


def test_server_errors_are_clear(site):
    env = WebShopEnv(f"http://127.0.0.1:{site.port}/nope/x", timeout_s=2.0)
    with pytest.raises(WebShopError, match="HTTP 404"):
        env.reset(task(1))
    site.__exit__()
    env = WebShopEnv(site.base_url, timeout_s=1.0)
    with pytest.raises(WebShopError, match="unreachable"):
        env.reset(task(1))
    with pytest.raises(ValueError, match="session_prefix"):
        WebShopEnv(session_prefix="a_b")


def test_parse_page_reward_and_hidden():
    page = parse_page('<div style="display: none"><pre>secret</pre></div>'
                      '<h3 id="reward">Your score (min 0.0, max 1.0)<pre>0.75</pre></h3>', "http://x/done/s/A/{}")
    assert page.reward == 0.75 and page.text == "Your score (min 0.0, max 1.0) [SEP] 0.75"
    with pytest.raises(ValueError, match="not a number"):
        parse_page('<h3 id="reward">score<pre>n/a</pre></h3>', "http://x/done")
    assert options_from_url("http://x/item_page/s/A/k/1/%7B%27size%27%3A%20%279%27%7D") == {"size": "9"}
    assert options_from_url("http://x/search_results/s/k/1") == {}


def test_webshop_tasks_splits():
    assert [t.payload["goal_idx"] for t in webshop_tasks("test", n=3)] == [0, 1, 2]
    assert len(webshop_tasks("test")) == 500 and len(webshop_tasks("eval")) == 1000
    tr = webshop_tasks("train", num_goals=1600)
    assert (len(tr), tr[0].id, tr[0].split, tr[0].env) == (100, "webshop/1500", "train", "webshop")
    assert [t.payload["goal_idx"] for t in webshop_tasks("test", indices=[9, 4])] == [9, 4]
    with pytest.raises(ValueError, match="split"):
        webshop_tasks("dev")


def test_registry_builds_env(site):
    from skillax.agents.envs import Env, env_spec

    env = env_spec("webshop", base_url=site.base_url, max_steps=5).build()
    assert isinstance(env, WebShopEnv) and isinstance(env, Env) and env.max_steps == 5
    assert env.reset(task(0))[1]["instruction"] == GOAL["instruction_text"]
