"""OpenAICompatWorker against a real HTTP server on loopback (tests/agents/loopback_servers.py)."""
import json
import logging

import pytest

from skillax.agents.workers import Completion, OpenAICompatWorker, Worker
from skillax.agents.workers.cache import CompletionCache, cache_key, is_cacheable
from tests.agents.loopback_servers import FakeOpenAIServer

SENTINEL = "sk-SENTINEL-9f8e7d6c5b4a-do-not-leak"
ENV = "SKILLAX_TEST_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(ENV, SENTINEL)


def make(server, **kw):
    kw = {"model": "tiny", "base_url": server.base_url, "api_key_env": ENV, "timeout_s": 0.5,
          "backoff_base_s": 0.01, "backoff_cap_s": 0.05, "max_retries": 3, **kw}
    return OpenAICompatWorker(**kw)


def conv(text):
    return [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]


def test_batch_answers_in_order_and_counts_tokens():
    with FakeOpenAIServer() as srv:
        w = make(srv, max_concurrency=4)
        assert isinstance(w, Worker)
        outs = w.chat([conv(f"q {i} x") for i in range(6)], temperature=0.7, max_tokens=50)
        assert [o.text for o in outs] == [f"echo: q {i} x" for i in range(6)]
        assert all(o.finish_reason == "stop" and o.error is None for o in outs)
        # prompt: "be brief" (2 words) + "q i x" (3) = 5; completion "echo: q i x" = 4 words.
        assert [(o.prompt_tokens, o.completion_tokens) for o in outs] == [(5, 4)] * 6
        assert w.usage.as_dict() == {"calls": 6, "requests": 6, "cache_hits": 0, "retries": 0,
                                     "failures": 0, "prompt_tokens": 30, "completion_tokens": 24}
        assert srv.request_count == 6
        # The key travels as a bearer token, i.e. the server did receive it.
        assert srv.requests[0]["headers"]["authorization"] == f"Bearer {SENTINEL}"


def test_length_finish_and_stop_strings():
    with FakeOpenAIServer(responder=lambda req: "a b c END d e") as srv:
        w = make(srv)
        out, = w.chat([conv("hi")], temperature=0.0, max_tokens=2)
        assert (out.text, out.finish_reason) == ("a b", "length")
        out, = w.chat([conv("hi")], temperature=0.0, max_tokens=50, stop=["END"])
        assert out.text == "a b c "  # stop string and what follows are cut
        assert json.loads(srv.requests[-1]["body"])["stop"] == ["END"]


def test_retries_429_500_timeout_malformed_then_succeeds():
    with FakeOpenAIServer(faults=[("429", 0.02), ("500", "boom"), ("slow", 1.0),
                                  ("malformed", None)]) as srv:
        w = make(srv, max_retries=4, max_concurrency=1)
        out, = w.chat([conv("hello")], temperature=1.0, max_tokens=10)
        assert out.error is None and out.text == "echo: hello"
        assert srv.request_count == 5
        assert w.usage.as_dict() == {"calls": 1, "requests": 5, "cache_hits": 0, "retries": 4,
                                     "failures": 0, "prompt_tokens": 3, "completion_tokens": 2}


def test_gives_up_after_limit_with_counted_failure():
    with FakeOpenAIServer(faults=[("500", "x")] * 10) as srv:
        w = make(srv, max_retries=2)
        outs = w.chat([conv("a")], temperature=1.0, max_tokens=10)
        assert outs[0].error is not None and "500" in outs[0].error
        assert (outs[0].text, outs[0].finish_reason) == ("", "error")
        assert srv.request_count == 3
        u = w.usage.as_dict()
        assert (u["calls"], u["requests"], u["retries"], u["failures"]) == (1, 3, 2, 1)
        assert (u["prompt_tokens"], u["completion_tokens"]) == (0, 0)


def test_non_retryable_400_fails_at_once():
    with FakeOpenAIServer(faults=[("400", "unknown model")]) as srv:
        w = make(srv, max_retries=5)
        out, = w.chat([conv("a")], temperature=0.0, max_tokens=5)
        assert "400" in out.error and srv.request_count == 1
        assert w.usage.failures == 1 and w.usage.retries == 0


def test_retry_after_header_is_honoured():
    import time
    with FakeOpenAIServer(faults=[("429", 0.3)]) as srv:
        w = make(srv, backoff_base_s=0.0, backoff_cap_s=1.0)
        t0 = time.monotonic()
        out, = w.chat([conv("a")], temperature=0.0, max_tokens=5)
        assert out.ok and time.monotonic() - t0 >= 0.3


def test_cache_hits_send_no_request(tmp_path):
    path = tmp_path / "cache.sqlite"
    with FakeOpenAIServer() as srv:
        w = make(srv, cache_path=str(path))
        first = w.chat([conv("x"), conv("y")], temperature=0.0, max_tokens=8)
        assert srv.request_count == 2 and not any(o.cached for o in first)
        again = w.chat([conv("x"), conv("y")], temperature=0.0, max_tokens=8)
        assert srv.request_count == 2  # unchanged
        assert [o.text for o in again] == [o.text for o in first] and all(o.cached for o in again)
        # A new worker on the same file also hits (on-disk).
        w2 = make(srv, cache_path=str(path))
        w2.chat([conv("x")], temperature=0.0, max_tokens=8)
        assert srv.request_count == 2 and w2.usage.cache_hits == 1
        # Other sampling params are other keys; temperature > 0 without seed is not cached.
        w.chat([conv("x")], temperature=0.0, max_tokens=9)
        assert srv.request_count == 3
        w.chat([conv("x")], temperature=0.7, max_tokens=8)
        w.chat([conv("x")], temperature=0.7, max_tokens=8)
        assert srv.request_count == 5
        assert w.usage.as_dict() == {"calls": 7, "requests": 5, "cache_hits": 2, "retries": 0,
                                     "failures": 0, "prompt_tokens": 15, "completion_tokens": 10}
        # With a seed, sampled requests are cacheable.
        ws = make(srv, cache_path=str(path), seed=3)
        ws.chat([conv("x")], temperature=0.7, max_tokens=8)
        ws.chat([conv("x")], temperature=0.7, max_tokens=8)
        assert srv.request_count == 6 and ws.usage.cache_hits == 1


def test_failures_are_not_cached(tmp_path):
    with FakeOpenAIServer(faults=[("500", "x")]) as srv:
        w = make(srv, cache_path=str(tmp_path / "c.sqlite"), max_retries=0)
        assert not w.chat([conv("x")], temperature=0.0, max_tokens=8)[0].ok
        assert w.chat([conv("x")], temperature=0.0, max_tokens=8)[0].ok
        assert srv.request_count == 2


def test_api_key_never_leaks(caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    # The server echoes the Authorization header back inside its error message: the worker
    # must scrub it from the returned error and from its log lines.
    with FakeOpenAIServer(faults=[("500", f"bad key {SENTINEL}"), ("401", f"invalid {SENTINEL}")]) as srv:
        w = make(srv, max_retries=1, cache_path=str(tmp_path / "c.sqlite"))
        out, = w.chat([conv("a")], temperature=0.0, max_tokens=5)
        assert not out.ok and "***" in out.error
        texts = [repr(w), str(w), repr(w.config), repr(out), out.error, caplog.text,
                 repr(w.usage), repr(w._cache)]
        for t in texts:
            assert SENTINEL not in t
        assert "401" in out.error


def test_missing_key_uses_placeholder(monkeypatch):
    monkeypatch.delenv(ENV)
    with FakeOpenAIServer() as srv:
        w = make(srv)
        assert w.chat([conv("a")], temperature=0.0, max_tokens=5)[0].ok
        assert srv.requests[0]["headers"]["authorization"] == "Bearer EMPTY"


def test_connection_refused_is_a_counted_failure():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    w = OpenAICompatWorker(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=ENV,
                           max_retries=1, timeout_s=0.5, backoff_base_s=0.0)
    out, = w.chat([conv("a")], temperature=0.0, max_tokens=5)
    assert not out.ok and "Connection" in out.error
    assert w.usage.failures == 1 and w.usage.requests == 2


def test_bad_input_raises_before_sending():
    with FakeOpenAIServer() as srv:
        w = make(srv)
        with pytest.raises(ValueError, match="list of conversations"):
            w.chat("hello", temperature=0.0, max_tokens=5)
        with pytest.raises(ValueError, match="role"):
            w.chat([[{"role": "bot", "content": "x"}]], temperature=0.0, max_tokens=5)
        with pytest.raises(ValueError, match="max_tokens"):
            w.chat([conv("x")], temperature=0.0, max_tokens=0)
        with pytest.raises(ValueError, match="temperature"):
            w.chat([conv("x")], temperature=-1.0, max_tokens=5)
        assert srv.request_count == 0
        assert w.chat([], temperature=0.0, max_tokens=5) == []
    with pytest.raises(ValueError, match="max_retries"):
        OpenAICompatWorker(model="m", max_retries=-1)


def test_cache_key_is_canonical_and_cacheability():
    m = [{"role": "user", "content": "x"}]
    assert cache_key("a", m, {"t": 0, "m": 5}) == cache_key("a", m, {"m": 5, "t": 0})
    assert cache_key("a", m, {"t": 0}) != cache_key("b", m, {"t": 0})
    assert is_cacheable(0.0, None) and is_cacheable(0.5, 1) and not is_cacheable(0.5, None)
    c = CompletionCache(":memory:")
    with pytest.raises(ValueError):
        c.put("k", Completion("", "error", error="x"))
