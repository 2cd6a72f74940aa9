"""The HTTP side of ``mode=serve``: a stdlib ``ThreadingHTTPServer`` speaking the OpenAI API.

Routes: ``GET /v1/models``, ``GET /health``, ``POST /v1/chat/completions``,
``POST /v1/completions``. Every error is a JSON body ``{"error": {"message", "type", "param",
"code"}}`` with a 4xx/5xx status -- malformed JSON, oversize bodies (413), unknown routes (404),
unknown models (404), a full queue (429 + ``Retry-After``), a missing/wrong API key (401), a
sampler failure (500), a request past ``request_timeout_s`` (504) -- and the server keeps
serving. With an API key configured, requests need ``Authorization: Bearer <key>`` (compared
in constant time; the key is never logged or echoed); ``/health`` needs none. The listen
backlog is 1024 (socketserver's default of 5 reset a burst of 64 clients).

A client that disconnects (its socket closed or reset while the request was read, queued,
generated or answered: a killed client process, a client-side timeout) costs one warning
line and ``stats["client_gone"] += 1`` -- no traceback, and nothing more is written to the
dead socket (campaign 3 logged 227 tracebacks and tried to send a 500 to each).
"""
from __future__ import annotations

import collections
import contextlib
import copy
import hmac
import json
import logging
import queue
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from skillax.modes.serving import protocol
from skillax.modes.serving.batcher import Batcher, QueueFull

log = logging.getLogger(__name__)

#: what a write to / read from a socket whose peer is gone raises
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class Service:
    """What the handler needs: tokenizer, limits, batcher, key and timeouts."""

    def __init__(self, tokenizer, limits: protocol.Limits, batcher: Batcher, *, api_key: str | None = None,
                 request_timeout_s: float = 600.0, max_body_bytes: int = 8 << 20, tokenizer_copies: int = 1):
        self.tokenizer, self.limits, self.batcher = tokenizer, limits, batcher
        self._api_key = api_key or None
        self.request_timeout_s = float(request_timeout_s)
        self.max_body_bytes = int(max_body_bytes)
        self.created = int(time.time())
        self._tok_lock = threading.Lock()  # counters
        # HF fast tokenizers must not be used by two threads at once: a pool of copies, each
        # held by one handler at a time, so the chat template + tokenisation of concurrent
        # requests (~3 ms each for 1,150 Qwen tokens) need not run one after the other
        if tokenizer_copies < 1:
            raise ValueError(f"tokenizer_copies must be >= 1, got {tokenizer_copies}")
        # (``self.tokenizer`` itself stays free for in-process callers)
        self._tokenizers: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(int(tokenizer_copies)):
            self._tokenizers.put(copy.deepcopy(tokenizer))
        # host-side milliseconds per request: parse (validate + chat template + tokenise, pool
        # wait included) and respond (detokenise + body); served in /health beside the batcher's
        self.stats = collections.Counter()

    def authorised(self, header: str | None) -> bool:
        if self._api_key is None:
            return True
        given = (header or "").removeprefix("Bearer ").strip()
        return hmac.compare_digest(given.encode(), self._api_key.encode())

    def handle(self, path: str, body) -> dict:
        """Validate, queue and answer one POST; raises ApiError."""
        parse, respond = {"/v1/chat/completions": (protocol.parse_chat, protocol.chat_response),
                          "/v1/completions": (protocol.parse_completion, protocol.completion_response)}[path]
        t0 = time.perf_counter()
        with self._tokenizer() as tok:
            req = parse(body, self.limits, tok)
        self._count(parse_ms=int(1000 * (time.perf_counter() - t0)))
        try:
            fut = self.batcher.submit(req)
        except QueueFull as e:
            raise protocol.ApiError(429, f"server busy: {e}; retry later", kind="rate_limit_error",
                                    code="queue_full", headers={"Retry-After": "1"}) from None
        except ValueError as e:
            raise protocol.ApiError(400, str(e), param="n") from None
        try:
            rows = fut.result(timeout=self.request_timeout_s)
        except FutureTimeout:
            raise protocol.ApiError(504, f"generation took longer than {self.request_timeout_s:.0f} s",
                                    kind="timeout_error") from None
        except protocol.ApiError:
            raise
        except Exception as e:  # noqa: BLE001 - sampler failure: 500 for these requests only
            log.exception("sampler call failed")
            raise protocol.ApiError(500, f"generation failed: {type(e).__name__}: {e}"[:500],
                                    kind="server_error") from None
        t0 = time.perf_counter()
        with self._tokenizer() as tok:
            out = respond(req, rows, tok)
        self._count(respond_ms=int(1000 * (time.perf_counter() - t0)), answered=1)
        return out

    def _count(self, **add: int) -> None:
        with self._tok_lock:
            self.stats.update(add)

    @contextlib.contextmanager
    def _tokenizer(self):
        tok = self._tokenizers.get()
        try:
            yield tok
        finally:
            self._tokenizers.put(tok)

    def client_gone(self, where: str, err: BaseException) -> None:
        """Count a disconnected client and log one warning line (no traceback)."""
        with self._tok_lock:
            self.stats["client_gone"] += 1
            n = self.stats["client_gone"]
        log.warning("client disconnected during %s (%s); %d so far", where, type(err).__name__, n)

    def health(self) -> dict:
        """``GET /health``: queue length and the batcher's and the handler's counters."""
        return {"status": "ok", "waiting": self.batcher.waiting(), "warming": bool(getattr(self.batcher, "warming", False)),
                "stats": {**self.batcher.stats, **self.stats}}


def make_handler(service: Service):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "skillax-serve/1"

        def handle_one_request(self):
            try:
                super().handle_one_request()
            except CLIENT_GONE as e:  # the peer closed or reset: nothing can be sent back
                self.close_connection = True
                what = f"{getattr(self, 'command', None) or ''} {getattr(self, 'path', '') or ''}".strip()
                service.client_gone(what or "a request", e)

        def log_message(self, fmt, *args):  # quiet by default; requests are counted in stats
            log.debug("%s " + fmt, self.address_string(), *args)

        def _send(self, status: int, body: dict, headers: dict | None = None):
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, err: protocol.ApiError):
            self._send(err.status, err.body(), err.headers)

        def _check_auth(self) -> bool:
            if service.authorised(self.headers.get("Authorization")):
                return True
            self._error(protocol.ApiError(401, "missing or invalid API key (Authorization: Bearer ...)",
                                          kind="authentication_error", code="invalid_api_key"))
            return False

        def do_GET(self):  # noqa: N802
            path = self.path.split("?", 1)[0].rstrip("/")
            if path == "/health":
                return self._send(200, service.health())
            if not self._check_auth():
                return
            if path == "/v1/models":
                return self._send(200, protocol.models_response(service.limits, service.created))
            if path.startswith("/v1/models/"):
                name = path[len("/v1/models/"):]
                if name == service.limits.model_id:
                    return self._send(200, protocol.models_response(service.limits, service.created)["data"][0])
                return self._error(protocol.ApiError(404, f"the model {name!r} does not exist", code="model_not_found"))
            self._error(protocol.ApiError(404, f"no route GET {path}", code="not_found"))

        def do_POST(self):  # noqa: N802
            path = self.path.split("?", 1)[0].rstrip("/")
            try:
                length = int(self.headers.get("Content-Length") or -1)
            except ValueError:
                length = -1
            if length < 0:
                self.close_connection = True
                return self._error(protocol.ApiError(411, "a Content-Length header is required"))
            if length > service.max_body_bytes:
                self.close_connection = True
                return self._error(protocol.ApiError(413, f"request body of {length} bytes exceeds "
                                                          f"{service.max_body_bytes} bytes"))
            raw = self.rfile.read(length)
            if not self._check_auth():
                return
            if path not in ("/v1/chat/completions", "/v1/completions"):
                return self._error(protocol.ApiError(404, f"no route POST {path}", code="not_found"))
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                return self._error(protocol.ApiError(400, f"the body is not valid JSON: {e}"))
            try:
                self._send(200, service.handle(path, body))
            except protocol.ApiError as e:
                self._error(e)
            except CLIENT_GONE:
                raise  # handle_one_request counts it; no 500 to a dead socket
            except Exception as e:  # noqa: BLE001 - never take the server down
                log.exception("unhandled error")
                self._error(protocol.ApiError(500, f"internal error: {type(e).__name__}", kind="server_error"))

        def do_PUT(self):  # noqa: N802
            self._error(protocol.ApiError(405, "method not allowed"))

        do_DELETE = do_PATCH = do_PUT

    return Handler


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: 64 clients connecting at once got
    # "connection reset by peer" (measured with benchmarks/serve_chat.py)
    request_queue_size = 1024
    daemon_threads = True


def make_server(service: Service, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A bound (not yet serving) server; ``port=0`` picks a free port (``server.server_address``)."""
    return _Server((host, int(port)), make_handler(service))
