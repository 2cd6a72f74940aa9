"""``mode=serve`` on loopback: the ``openai`` package and skillax's own client against a tiny
random Qwen2 (q/k/v biases) with a real byte-level BPE tokenizer; answers equal the in-process
sampler's; batching, seeds, stops, per-request max_tokens, logprobs, bad input (4xx JSON, the
server keeps serving), a full queue (429), an API key, and serving a run's checkpoint."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skillax.engine import Sampler, SamplingParams
from skillax.engine.sampler import encode_conversation

openai = pytest.importorskip("openai")

MODEL = "tiny-qwen2"
CHATS = [[{"role": "user", "content": "go north"}],
         [{"role": "system", "content": "You play a text game."}, {"role": "user", "content": "open drawer 1"}],
         [{"role": "user", "content": "the quick brown fox"}],
         [{"role": "user", "content": "Your task is to: put a clean apple in the fridge."}]]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tests.models.hf_fixtures import save_tiny_chat_model

    return save_tiny_chat_model(tmp_path_factory.mktemp("serve") / "tiny-qwen2")


def serve_config(model_dir, **serve):
    from configs.serve import get_config

    c = get_config()
    c.model.path = str(model_dir)
    c.model.dtype = "float32"
    c.model.max_len = 256
    c.serve.port = 0
    c.serve.model_name = MODEL
    c.serve.batch_window_ms = 200.0
    c.serve.batch_quiet_ms = 200.0
    c.serve.default_max_tokens = 16
    for k, v in serve.items():
        c.serve[k] = v
    return c


@pytest.fixture(scope="module")
def server(model_dir, tmp_path_factory):
    """(base_url, service, sampler, params, tokenizer) of a running server."""
    from skillax.modes import serve

    work = tmp_path_factory.mktemp("serve-work")
    srv, service, info = serve.start(serve_config(model_dir), str(work))
    assert json.loads((work / "serve.json").read_text()) == info
    yield info["url"], service, service.params, service.tokenizer
    srv.shutdown()
    srv.server_close()
    service.batcher.close()


def _sampler_of(service):
    return service.sampler


def _reference(service, params, prompt_ids, max_new, **kw):
    """The in-process sampler's answer (same sampler, same params) for one prompt."""
    sp = SamplingParams(temperature=0.0, max_new_tokens=max_new, **kw)
    out = _sampler_of(service).generate(params, [prompt_ids], sp)
    n = int(out.lengths[0])
    return out.tokens[0, :n].tolist(), out.logprobs[0, :n].tolist(), out.stop_reason[0]


def _client(url, key="EMPTY"):
    return openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=120)


def _post(url, path, body, raw=None, headers=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url.removesuffix("/v1") + path, data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


def test_models_and_greedy_chat_equal_in_process_sampler(server):
    url, service, params, tok = server
    client = _client(url)
    assert [m.id for m in client.models.list().data] == [MODEL]
    resp = client.chat.completions.create(model=MODEL, messages=CHATS[1], temperature=0, max_tokens=12)
    ids = encode_conversation(tok, CHATS[1])
    ref_ids, _, reason = _reference(service, params, ids, 12)
    assert resp.choices[0].message.content == tok.decode(ref_ids, skip_special_tokens=True)
    assert resp.choices[0].finish_reason == ("length" if reason == "length" else "stop")
    assert resp.usage.prompt_tokens == len(ids) and resp.usage.completion_tokens == len(ref_ids)
    assert resp.usage.total_tokens == len(ids) + len(ref_ids) and resp.model == MODEL


def test_completions_with_logprobs_and_token_prompts(server):
    url, service, params, tok = server
    client = _client(url)
    prompt = "<think>I should go north.</think><action>"
    ids = tok.encode(prompt, add_special_tokens=False)
    ref_ids, ref_lp, _ = _reference(service, params, ids, 10)
    for p in (prompt, ids):
        resp = client.completions.create(model=MODEL, prompt=p, temperature=0, max_tokens=10, logprobs=1)
        c = resp.choices[0]
        assert c.text == tok.decode(ref_ids, skip_special_tokens=True)
        np.testing.assert_allclose(c.logprobs.token_logprobs, ref_lp, atol=1e-5)
        assert c.logprobs.tokens == [tok.decode([i]) for i in ref_ids]
    two = client.completions.create(model=MODEL, prompt=[prompt, "go"], temperature=0, max_tokens=4, n=2)
    assert [c.index for c in two.choices] == [0, 1, 2, 3] and two.choices[0].text == two.choices[1].text


def test_concurrent_requests_are_batched_and_equal_sequential(server):
    url, service, params, tok = server
    client = _client(url)
    calls0 = service.batcher.stats["calls"]
    results = [None] * len(CHATS)
    barrier = threading.Barrier(len(CHATS))

    def one(i):
        barrier.wait()
        results[i] = client.chat.completions.create(model=MODEL, messages=CHATS[i], temperature=0,
                                                     max_tokens=6 + i)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(CHATS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert service.batcher.stats["calls"] - calls0 < len(CHATS)        # shared sampler calls
    for i, r in enumerate(results):
        ref_ids, _, _ = _reference(service, params, encode_conversation(tok, CHATS[i]), 6 + i)
        assert r.choices[0].message.content == tok.decode(ref_ids, skip_special_tokens=True), i
        assert r.usage.completion_tokens == len(ref_ids) <= 6 + i        # cut back to its own max_tokens


def test_seeded_sampling_is_reproducible_and_n_choices(server):
    url, *_ = server
    client = _client(url)
    kw = dict(model=MODEL, messages=CHATS[2], temperature=1.0, top_p=0.9, max_tokens=8, n=3, seed=11)
    a = client.chat.completions.create(**kw)
    b = client.chat.completions.create(**kw)
    texts = [c.message.content for c in a.choices]
    assert len(texts) == 3 and texts == [c.message.content for c in b.choices]
    assert len(set(texts)) > 1                                          # distinct rows per sample
    c = client.chat.completions.create(**{**kw, "seed": 12})
    assert [x.message.content for x in c.choices] != texts


def test_stop_strings(server):
    url, service, params, tok = server
    client = _client(url)
    ids = encode_conversation(tok, CHATS[0])
    ref_ids, _, _ = _reference(service, params, ids, 16)
    text = tok.decode(ref_ids, skip_special_tokens=True)
    if len(text) < 3:
        pytest.skip("greedy answer too short to pick a stop string")
    stop = text[1:3]
    r = client.chat.completions.create(model=MODEL, messages=CHATS[0], temperature=0, max_tokens=16, stop=[stop])
    assert r.choices[0].message.content == text[:text.index(stop)] and r.choices[0].finish_reason == "stop"


def test_our_openai_compat_worker_equals_local_worker(server):
    """skillax.agents.workers.openai_compat against the server == LocalWorker in process."""
    from skillax.agents.workers.local import LocalWorker
    from skillax.agents.workers.openai_compat import OpenAICompatWorker
    from skillax.engine.sampler import make_generate_fn

    url, service, params, tok = server
    remote = OpenAICompatWorker(model=MODEL, base_url=url, max_retries=0, max_concurrency=4)
    local = LocalWorker(tok, make_generate_fn(_sampler_of(service), params))
    got = remote.chat(CHATS, temperature=0.0, max_tokens=10)
    want = local.chat(CHATS, temperature=0.0, max_tokens=10)
    assert [c.error for c in got] == [None] * 4
    assert [c.text for c in got] == [c.text for c in want]
    assert [c.completion_tokens for c in got] == [c.completion_tokens for c in want]
    assert [c.prompt_tokens for c in got] == [c.prompt_tokens for c in want]
    assert remote.usage.failures == 0 and remote.usage.calls == 4
    remote.close()


BAD = [
    ("/v1/chat/completions", None, b"{not json", 400, "not valid JSON"),
    ("/v1/chat/completions", {"messages": CHATS[0]}, None, 400, "'model' is required"),
    ("/v1/chat/completions", {"model": "gpt-4o", "messages": CHATS[0]}, None, 404, "does not exist"),
    ("/v1/chat/completions", {"model": MODEL, "messages": "hi"}, None, 400, "non-empty list"),
    ("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "bot", "content": "x"}]}, None, 400, "role in"),
    ("/v1/chat/completions", {"model": MODEL, "messages": CHATS[0], "temperature": -1}, None, 400, "'temperature'"),
    ("/v1/chat/completions", {"model": MODEL, "messages": CHATS[0], "n": 0}, None, 400, "'n' must be in"),
    ("/v1/chat/completions", {"model": MODEL, "messages": CHATS[0], "stream": True}, None, 400, "streaming"),
    ("/v1/chat/completions", {"model": MODEL, "messages": CHATS[0], "max_tokens": 1000}, None, 400,
     "exceed this server's context length of 256"),
    ("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "go north " * 200}]},
     None, 400, "context length is 256"),
    ("/v1/chat/completions", {"model": MODEL, "messages": CHATS[0], "top_logprobs": 2}, None, 400, "top_logprobs"),
    ("/v1/chat/completions", {"model": MODEL, "messages": CHATS[0], "stop": ["a"] * 9}, None, 400, "'stop'"),
    ("/v1/chat/completions", {"model": MODEL, "messages": CHATS[0],
                              "tools": [{"type": "function", "function": {"name": "f"}}]}, None, 400, "tools"),
    ("/v1/chat/completions", {"model": MODEL, "messages": CHATS[0], "presence_penalty": 1}, None, 400, "penalty"),
    ("/v1/completions", {"model": MODEL, "prompt": [1, 2, 99999]}, None, 400, "token ids must be"),
    ("/v1/completions", {"model": MODEL, "prompt": ""}, None, 400, "at least one token"),
    ("/v1/completions", {"model": MODEL, "prompt": "x", "logprobs": 5}, None, 400, "'logprobs'"),
    ("/v1/embeddings", {"model": MODEL, "input": "x"}, None, 404, "no route"),
    ("/v1/chat/completions", None, json.dumps([1, 2]).encode(), 400, "JSON object"),
]


@pytest.mark.parametrize("path,body,raw,status,text", BAD)
def test_bad_input_gets_a_json_4xx_and_the_server_keeps_serving(server, path, body, raw, status, text):
    url, *_ = server
    code, got, _ = _post(url, path, body, raw)
    assert code == status and text in got["error"]["message"], got
    assert set(got["error"]) == {"message", "type", "param", "code"}
    with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=30) as r:
        health = json.loads(r.read())
    assert health["status"] == "ok" and health["stats"].get("rejected", 0) == 0, health


def test_oversize_body_is_413(server, monkeypatch):
    url, service, *_ = server
    monkeypatch.setattr(service, "max_body_bytes", 64)
    code, got, _ = _post(url, "/v1/chat/completions", {"model": MODEL, "messages": CHATS[3]})
    assert code == 413 and "exceeds 64 bytes" in got["error"]["message"]


def test_tool_calls_are_parsed_from_the_output():
    from tests.engine.conftest import make_tokenizer
    from skillax.modes.serving.protocol import GenRequest, RowResult, chat_response

    tok = make_tokenizer()
    text = '<tool_call>{"name": "insert_skill", "arguments": {"name": "find-key"}}</tool_call>'
    req = GenRequest("chat", MODEL, [[1]], 1, 0.0, 1.0, 0, 32, (), None, True, tools=True)
    ids = tok.encode(text, add_special_tokens=False)
    out = chat_response(req, [RowResult(ids, [-0.5] * len(ids), "eos")], tok)
    msg = out["choices"][0]["message"]
    assert out["choices"][0]["finish_reason"] == "tool_calls" and msg["content"] is None
    assert msg["tool_calls"][0]["function"] == {"name": "insert_skill", "arguments": '{"name": "find-key"}'}
    assert [e["logprob"] for e in out["choices"][0]["logprobs"]["content"]] == [-0.5] * len(ids)
    req.tools = False
    assert chat_response(req, [RowResult(ids, [0.0] * len(ids), "eos")], tok)["choices"][0]["message"] == {
        "role": "assistant", "content": text}


def _held_server(service, tok, **batcher_kw):
    """A second server on ``service``'s model whose sampler calls wait for the returned event
    (60 s at most): (server, its Service, batcher, release event)."""
    from skillax.modes.serving.batcher import Batcher
    from skillax.modes.serving.http import Service, make_server

    release = threading.Event()
    inner = service.batcher.generate

    def held(*a):
        release.wait(60)
        return inner(*a)

    batcher = Batcher(held, max_len=256, max_rows=4, window_s=0.0, **batcher_kw)
    svc = Service(tok, service.limits, batcher)
    srv = make_server(svc)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, svc, batcher, release


def test_full_queue_answers_429(server):
    """A sampler call held open: one request runs, max_queue=1 waits, the next gets 429."""
    url, service, params, tok = server
    srv, _, batcher, release = _held_server(service, tok, max_queue=1)
    base = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    body = {"model": MODEL, "messages": CHATS[0], "temperature": 0, "max_tokens": 2}
    results = {}

    def send(i):
        results[i] = _post(base, "/v1/chat/completions", body)
    first = threading.Thread(target=send, args=(0,))
    first.start()
    while batcher.stats["submitted"] < 1 or batcher.waiting():      # taken by the (held) worker
        threading.Event().wait(0.01)
    second = threading.Thread(target=send, args=(1,))
    second.start()
    while batcher.waiting() < 1:
        threading.Event().wait(0.01)
    code, got, headers = _post(base, "/v1/chat/completions", body)
    assert code == 429 and got["error"]["code"] == "queue_full" and headers.get("Retry-After") == "1"
    release.set()
    first.join()
    second.join()
    assert results[0][0] == results[1][0] == 200
    srv.shutdown()
    srv.server_close()
    batcher.close()


def test_a_client_that_disconnects_is_counted_not_answered(server, caplog, capfd):
    """Loopback clients that reset their socket (SO_LINGER 0) -- one while its request is
    being generated, one in the middle of sending its body -- each cost one warning line and
    ``client_gone`` in /health; no traceback, no 500 attempt, and the server keeps serving."""
    import logging
    import socket
    import struct

    url, service, params, tok = server
    srv, svc, batcher, release = _held_server(service, tok)
    port = srv.server_address[1]

    def reset(sock):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()

    def wait_gone(n):
        for _ in range(3000):
            if svc.stats["client_gone"] >= n:
                return
            threading.Event().wait(0.01)
        raise AssertionError(f"client_gone stayed {svc.stats['client_gone']} < {n}")

    body = json.dumps({"model": MODEL, "messages": CHATS[0], "temperature": 0, "max_tokens": 2}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    with caplog.at_level(logging.WARNING, logger="skillax.modes.serving.http"):
        a = socket.create_connection(("127.0.0.1", port))
        a.sendall(head + body)
        while batcher.stats["submitted"] < 1 or batcher.waiting():     # taken by the held worker
            threading.Event().wait(0.01)
        reset(a)                                                       # gone while generating
        release.set()
        wait_gone(1)
        b = socket.create_connection(("127.0.0.1", port))
        b.sendall(head + body[:10])                                    # gone while sending
        threading.Event().wait(0.2)
        reset(b)
        wait_gone(2)
        code, got, _ = _post(f"http://127.0.0.1:{port}/v1", "/v1/chat/completions", json.loads(body))
    srv.shutdown()
    srv.server_close()
    batcher.close()
    assert code == 200 and got["choices"][0]["finish_reason"] in ("stop", "length")
    gone = [r for r in caplog.records if "client disconnected" in r.getMessage()]
    assert len(gone) == 2 and all(r.levelno == logging.WARNING and r.exc_info is None for r in gone)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert svc.health()["stats"]["client_gone"] == 2 and svc.stats["answered"] == 2  # the gone client's body was built, never sent
    assert "Traceback" not in capfd.readouterr().err


def test_tokenizer_pool_parses_concurrent_requests_like_one_tokenizer(server):
    """serve.tokenizer_copies: 3 copies (none the service's own) shared by 12 threads parsing
    at once give the ids one tokenizer gives one request at a time; 0 copies is an error."""
    from skillax.modes.serving import protocol
    from skillax.modes.serving.http import Service

    url, service, params, tok = server
    svc = Service(tok, service.limits, service.batcher, tokenizer_copies=3)
    pool = [svc._tokenizers.get() for _ in range(3)]
    assert len({id(t) for t in pool}) == 3 and all(t is not tok for t in pool)
    for t in pool:
        svc._tokenizers.put(t)
    bodies = [{"model": MODEL, "messages": CHATS[i % len(CHATS)]} for i in range(12)]
    got = [None] * 12
    barrier = threading.Barrier(12)

    def one(i):
        barrier.wait()
        with svc._tokenizer() as t:
            got[i] = protocol.parse_chat(bodies[i], svc.limits, t).prompts[0]
    threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [encode_conversation(tok, b["messages"]) for b in bodies]
    with pytest.raises(ValueError, match="tokenizer_copies"):
        Service(tok, service.limits, service.batcher, tokenizer_copies=0)


def test_warmup_compiles_the_served_shapes_first(model_dir):
    """serve.warmup_prompt_tokens = the request's prompt length: the start-up compiles every
    row bucket (8, 16 for max_batch_rows 16) for that prompt bucket, and a sampled chat request
    with a stop string then compiles nothing (stats: warmup_compiles > 0, compiles == 0)."""
    from skillax.modes import serve
    from skillax.tokenizers import load_tokenizer

    conv = CHATS[3]
    n = len(encode_conversation(load_tokenizer(model_dir), conv))
    srv, service, info = serve.start(serve_config(model_dir, max_batch_rows=16, warmup_prompt_tokens=str(n)))
    try:
        code, got, _ = _post(info["url"], "/v1/chat/completions", {"model": MODEL, "messages": conv,
                                                                   "temperature": 0.4, "stop": ["</action>"]})
        health = service.health()
    finally:
        srv.shutdown()
        srv.server_close()
        service.batcher.close()
    assert code == 200, got
    assert service.sampler.programs.counts["run"] == 2                  # (8, T) and (16, T)
    assert health["stats"]["warmup_compiles"] >= 2 and health["stats"].get("compiles", 0) == 0, health
    assert health["warming"] is False and health["stats"]["calls"] == 1


def test_api_key_and_checkpoint(model_dir, tmp_path, monkeypatch):
    """serve.api_key_env: 401 without the key; serve.checkpoint: a run's saved policy params."""
    import optax

    from skillax.models.hf_io import load_hf_checkpoint
    from skillax.modes import serve
    from skillax.rl.checkpoint import Checkpointer

    params, cfg = load_hf_checkpoint(model_dir)
    params = jax.tree.map(lambda x: x * 1.5, params)                  # "trained" weights
    state = {"params": params, "opt_state": optax.adam(1e-3).init(params), "step": jnp.int32(3)}
    ck = Checkpointer(tmp_path / "run" / "checkpoints")
    ck.save(3, state, {"step": 3})
    ck.close()
    monkeypatch.setenv("SKILLAX_TEST_SERVE_KEY", "sk-test-0123456789")
    c = serve_config(model_dir, api_key_env="SKILLAX_TEST_SERVE_KEY", checkpoint=str(tmp_path / "run"))
    srv, service, info = serve.start(c)
    try:
        code, got, _ = _post(info["url"], "/v1/chat/completions", {"model": MODEL, "messages": CHATS[0]})
        assert code == 401 and got["error"]["code"] == "invalid_api_key" and "sk-test" not in json.dumps(got)
        with pytest.raises(openai.AuthenticationError):
            _client(info["url"], key="wrong").models.list()
        r = _client(info["url"], key="sk-test-0123456789").chat.completions.create(
            model=MODEL, messages=CHATS[0], temperature=0, max_tokens=8)
        s = Sampler(cfg, service.tokenizer, max_len=256, dtype=jnp.float32)
        out = s.generate(params, [encode_conversation(service.tokenizer, CHATS[0])],
                         SamplingParams(temperature=0, max_new_tokens=8))
        assert r.choices[0].message.content == out.texts[0]
    finally:
        srv.shutdown()
        srv.server_close()
        service.batcher.close()


def test_64_simultaneous_connections_are_accepted(server):
    """The listen backlog holds a burst of 64 connections (socketserver's default of 5 reset
    most of them: found by benchmarks/serve_chat.py)."""
    url, *_ = server
    codes = []
    barrier = threading.Barrier(64)

    def one():
        barrier.wait()
        with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=60) as r:
            codes.append(r.status)
    threads = [threading.Thread(target=one) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes == [200] * 64


def test_serve_sampler_takes_the_engines_memory_budget_and_prefill_keys(model_dir):
    """mode=serve's sampler reads model.sampler_memory_gb / share_prefill / cache_attention as
    the method engines' does (it ignored them before): 0.5 GiB -> 536,870,912 bytes."""
    import jax.numpy as jnp

    from skillax.models.registry import model_config
    from skillax.modes import serve

    c = serve_config(model_dir)
    c.model.sampler_memory_gb, c.model.share_prefill = 0.5, False
    mcfg = model_config(str(model_dir))
    s = serve.make_sampler(c, mcfg, None, jnp.float32, serve.serving_buckets(c.serve))
    assert s.memory_budget == 536_870_912 and s.share_prefill is False and s.compiler_options == {}
    c.model.sampler_xla = "xla_gpu_autotune_level=0"
    assert serve.make_sampler(c, mcfg, None, jnp.float32, serve.serving_buckets(c.serve)).compiler_options == {
        "xla_gpu_autotune_level": 0}
    c.model.sampler_memory_gb = 0.0
    assert serve.make_sampler(c, mcfg, None, jnp.float32, serve.serving_buckets(c.serve)).memory_budget == 0
