"""Real HTTP servers on 127.0.0.1 (stdlib ``http.server`` in a thread) for client tests.

* :class:`FakeOpenAIServer` -- ``POST /v1/chat/completions`` in the OpenAI response shape,
  with scripted faults (429 + Retry-After, 500, a response slower than the client timeout,
  malformed JSON, 400) and a request counter.
* :class:`FakeWebShopServer` -- the routes of princeton-nlp/WebShop's Flask app
  (``web_agent_site/app.py``) serving pages in the shape of its templates
  (``search_page.html``, ``results_page.html``, ``item_page.html``, ``description_page.html``,
  ``done_page.html``) for a fixed three-product catalogue and one goal.

Both are context managers: ``with FakeOpenAIServer() as srv: srv.base_url``.
"""
from __future__ import annotations

import ast
import html
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class _Server:
    handler_cls: type

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.request_count = 0
        self.requests: list[dict] = []
        handler = type("H", (self.handler_cls,), {"owner": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    def _send(self, code: int, body: bytes, ctype: str = "application/json",
              headers: dict | None = None) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""


# --------------------------------------------------------------------------- OpenAI


def word_count(s: str) -> int:
    return len(s.split())


class _OpenAIHandler(_QuietHandler):
    owner: "FakeOpenAIServer"

    def do_POST(self) -> None:
        srv = self.owner
        raw = self._body()
        with srv.lock:
            srv.request_count += 1
            fault = srv.faults.pop(0) if srv.faults else None
            srv.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                 "body": raw.decode("utf-8", "replace")})
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send(404, b'{"error": {"message": "not found"}}')
        if fault is not None:
            kind, arg = fault
            if kind == "429":
                return self._send(429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}',
                                  headers={"Retry-After": str(arg)})
            if kind in ("500", "400", "401"):
                msg = json.dumps({"error": {"message": arg or f"injected {kind}"}}).encode()
                return self._send(int(kind), msg)
            if kind == "slow":
                time.sleep(arg)  # longer than the client timeout: the client hangs up
            elif kind == "malformed":
                return self._send(200, b'{"id": "x", "choices": [ {not json')
        req = json.loads(raw)
        text = srv.responder(req)
        finish = "stop"
        mt = req.get("max_tokens") or req.get("max_completion_tokens")
        words = text.split(" ")
        if mt is not None and len(words) > mt:
            text, finish = " ".join(words[:mt]), "length"
        prompt_tokens = sum(word_count(m["content"]) for m in req["messages"])
        body = {
            "id": f"chatcmpl-{srv.request_count}", "object": "chat.completion",
            "created": 0, "model": req["model"],
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": word_count(text),
                      "total_tokens": prompt_tokens + word_count(text)},
        }
        self._send(200, json.dumps(body).encode())


def echo_responder(req: dict) -> str:
    """Default canned answer: "echo: <last user message>"."""
    return "echo: " + req["messages"][-1]["content"]


class FakeOpenAIServer(_Server):
    """OpenAI chat-completions server on loopback.

    Args:
      responder: request JSON -> assistant text (default :func:`echo_responder`). Token
        usage is counted in whitespace-separated words (prompt: all message contents).
      faults: FIFO of injected faults consumed one per request, each ``(kind, arg)``:
        ``("429", retry_after_seconds)``, ``("500", msg)``, ``("400", msg)``, ``("401", msg)``,
        ``("slow", seconds)`` (then a normal answer), ``("malformed", None)``.
    """

    handler_cls = _OpenAIHandler

    def __init__(self, responder: Callable[[dict], str] = echo_responder,
                 faults: list[tuple[str, object]] | None = None) -> None:
        self.responder = responder
        self.faults = list(faults or [])
        super().__init__()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def inject(self, *faults: tuple[str, object]) -> None:
        with self.lock:
            self.faults.extend(faults)


# --------------------------------------------------------------------------- WebShop

CATALOGUE = {
    "B0TEST0001": {"Title": "Navy running shoes, lightweight mesh", "Price": "$39.99",
                   "Rating": "4.5", "Description": "Breathable mesh running shoe.",
                   "options": {"color": ["navy blue", "black"], "size": ["8", "9", "10"]}},
    "B0TEST0002": {"Title": "Leather dress shoes", "Price": "$89.0", "Rating": "N.A.",
                   "Description": "", "options": {"size": ["9", "10"]}},
    "B0TEST0003": {"Title": "Wool hiking socks (3 pairs)", "Price": "$12.5", "Rating": "4.1",
                   "Description": "Warm socks.", "options": {}},
}
GOAL = {"instruction_text": "i need navy blue running shoes in size 9, and price lower than 50.00 dollars",
        "asin": "B0TEST0001", "goal_options": {"color": "navy blue", "size": "9"}}

_HEAD = ('<!DOCTYPE html>\n<html>\n  <head>\n    <link rel="stylesheet" href="/static/style.css">\n'
         '    <script src="https://ajax.googleapis.com/ajax/libs/jquery/3.5.1/jquery.min.js"></script>\n'
         '    <link rel="icon" href="data:,">\n  </head>\n')


def fixture_reward(asin: str, options: dict) -> float:
    """The fixture's stand-in for WebShop's ``get_reward``: 0 for another product, else the
    share of goal options bought (1.0 when all match)."""
    if asin != GOAL["asin"]:
        return 0.0
    goal = GOAL["goal_options"]
    return sum(options.get(k) == v for k, v in goal.items()) / len(goal)


def url_for(*parts: object) -> str:
    """Flask ``url_for`` for path parameters: ``str(value)`` URL-quoted per segment."""
    return "/" + "/".join(urllib.parse.quote(str(p), safe="") for p in parts)


class _WebShopHandler(_QuietHandler):
    owner: "FakeWebShopServer"

    def do_GET(self) -> None:
        self._route(b"")

    def do_POST(self) -> None:
        self._route(self._body())

    def _route(self, body: bytes) -> None:
        srv = self.owner
        with srv.lock:
            srv.request_count += 1
            srv.requests.append({"method": self.command, "path": self.path,
                                 "body": body.decode("utf-8", "replace")})
        parts = [urllib.parse.unquote(p) for p in self.path.split("?")[0].strip("/").split("/")]
        try:
            if len(parts) == 1 and parts[0]:
                sid = parts[0]
                form = urllib.parse.parse_qs(body.decode())
                if self.command == "POST" and "search_query" in form:
                    keywords = form["search_query"][0].lower().split(" ")
                    return self._send(302, b"", "text/html",
                                      {"Location": url_for("search_results", sid, keywords, 1)})
                return self._html(self._search_page(sid))
            kind = parts[0]
            if kind == "search_results":
                _, sid, kw, page = parts
                kw = ast.literal_eval(kw) if kw.startswith("[") else [kw]
                return self._html(self._results_page(sid, kw, int(page)))
            if kind == "item_page":
                _, sid, asin, kw, page, options = parts
                return self._html(self._item_page(sid, asin, kw, page, ast.literal_eval(options)))
            if kind == "item_sub_page":
                _, sid, asin, kw, page, sub, options = parts
                return self._html(self._sub_page(sid, asin, kw, page, sub, ast.literal_eval(options)))
            if kind == "done":
                _, sid, asin, options = parts
                options = ast.literal_eval(options)
                srv.purchases.append((sid, asin, options))
                return self._html(self._done_page(asin, options, fixture_reward(asin, options)))
        except (ValueError, SyntaxError, KeyError) as e:
            return self._send(500, f"bad request: {e}".encode(), "text/plain")
        self._send(404, b"not found", "text/plain")

    def _html(self, page: str) -> None:
        self._send(200, page.encode("utf-8"), "text/html; charset=utf-8")

    @staticmethod
    def _instr(keywords: str | None = None) -> str:
        q = "" if keywords is None else f'\n        <h4 style="padding:2px 10px;">Current Query: {html.escape(keywords)}</h4>'
        return ('      <div id="instruction-text">\n        <h4 style="padding:2px 10px;">Instruction: '
                f'{html.escape(GOAL["instruction_text"])}</h4>{q}\n      </div>\n')

    def _search_page(self, sid: str) -> str:
        return (_HEAD + '  <body>\n    <div class="container" style="margin-top: 8%;">\n'
                '      <div id="logo" class="text-center"><h2>WebShop</h2></div>\n'
                '      <div id="instruction-text" class="text-center">\n'
                f'        <h4>Instruction: <br>{html.escape(GOAL["instruction_text"])}</h4>\n      </div>\n'
                f'      <form role="form" id="form-buscar" method="post" action="{url_for(sid)}">\n'
                '        <input id="search_input" class="form-control" type="text" name="search_query" placeholder="Search..." required/>\n'
                '        <span class="input-group-btn"><button class="btn btn-success" type="submit">'
                '<i class="glyphicon glyphicon-search" aria-hidden="true"></i>Search</button></span>\n'
                '      </form>\n    </div>\n  </body>\n</html>')

    def _results_page(self, sid: str, kw: list[str], page: int) -> str:
        hits = [a for a, p in CATALOGUE.items()
                if any(k in p["Title"].lower() for k in kw)] or list(CATALOGUE)
        items = "".join(
            '        <div class="grid-item">\n'
            f'          <h4 class="mt-0 font-weight-bold mb-2 product-asin"><a class="product-link" '
            f'href="{url_for("item_page", sid, a, kw, page, {})}">{a}</a></h4>\n'
            f'          <h4 class="mt-0 font-weight-bold mb-2 product-title">{html.escape(CATALOGUE[a]["Title"])}</h5>\n'
            f'          <h5 class="font-weight-bold my-2 product-price">{CATALOGUE[a]["Price"]}</h6>\n'
            '        </div>\n' for a in hits)
        q = " ".join(f" {k} " for k in kw)
        return (_HEAD + '  <body>\n    <div class="container py-5">\n' + self._instr(q) +
                '      <div><h1>Results</h1>\n'
                f'        <p>Page {page} ({(page - 1) * 10 + 1}-{page * 10}) of {len(hits)} total results</p></div>\n'
                f'      <form method="post" action="{url_for(sid)}" style="float:left;padding-right:10px;">\n'
                '        <button type="submit" class="btn btn-success">Back to Search</button>\n      </form>\n'
                '      <!-- Old Row Layout -->\n      <!-- <div class="row top-buffer"></div> -->\n'
                f'      <div class="grid-container">\n{items}      </div>\n    </div>\n  </body>\n</html>')

    def _item_page(self, sid, asin, kw, page, options) -> str:
        p = CATALOGUE[asin]
        radios = ""
        for name, values in p["options"].items():
            radios += f'          <div class="row top-buffer">\n            <h4>{name}</h4>\n            <div class="radio-toolbar">\n'
            for i, v in enumerate(values):
                cur = dict(options, **{name: v})
                radios += (f'              <input type="radio" id="radio_{name}{i}" name="{name}" value="{v}" '
                           f'data-url="{url_for("item_page", sid, asin, kw, page, cur)}">\n'
                           f'              <label for="radio_{name}{i}">{v}</label>\n')
            radios += "            </div>\n          </div>\n"
        subs = "".join(
            f'            <div class="col-sm-3" name="{s.lower()}">\n'
            f'              <form method="post" action="{url_for("item_sub_page", sid, asin, kw, page, s, options)}">\n'
            f'                <button class="btn btn-primary" type="submit">{s}</button>\n'
            '              </form>\n            </div>\n' for s in ("Description", "Features", "Reviews"))
        return (_HEAD + '  <body>\n    <div class="container py-5">\n' + self._instr(kw) +
                f'      <div>\n        <form method="post" action="{url_for(sid)}" style="float:left;padding-right:10px">\n'
                '          <button type="submit" class="btn btn-success">Back to Search</button>\n        </form>\n'
                f'        <form method="post" action="{url_for("search_results", sid, kw, page)}">\n'
                '          <button type="submit" class="btn btn-primary">&lt; Back to Results</button>\n'
                '        </form>\n      </div>\n'
                '      <div class="row top-buffer">\n        <div class="col-md-4 mb-4 mb-md-0">\n'
                '          <div class="row top-buffer"><img id="product-image" src="x.jpg" class="item-page-img"></div>\n'
                f'{radios}        </div>\n        <div class="col-md-6">\n'
                f'          <h2>{html.escape(p["Title"])}</h2>\n          <h4>Price: {p["Price"]}</h4>\n'
                f'          <h4>Rating: {p["Rating"]}</h4>\n          <div class="row top-buffer">\n{subs}'
                '          </div>\n        </div>\n        <div class="col-sm-2">\n'
                f'          <form method="post" action="{url_for("done", sid, asin, options)}">\n'
                '            <button type="submit" class="btn btn-lg purchase">Buy Now</button>\n'
                '          </form>\n        </div>\n      </div>\n    </div>\n  </body>\n'
                '  <script>\n    $(document).ready(function() { /* radio handling */ });\n  </script>\n</html>')

    def _sub_page(self, sid, asin, kw, page, sub, options) -> str:
        p = CATALOGUE[asin]
        text = p["Description"] or "No Description"
        return (_HEAD + '  <body>\n    <div class="container py-5">\n' + self._instr(kw) +
                f'      <div>\n        <form method="post" action="{url_for(sid)}" style="float:left;padding-right:10px;">\n'
                '          <button type="submit" class="btn btn-success">Back to Search</button>\n        </form>\n'
                f'        <form method="post" action="{url_for("item_page", sid, asin, kw, page, options)}">\n'
                '          <button type="submit" class="btn btn-primary">&lt; Back to Item Page</button>\n'
                '        </form>\n      </div>\n'
                f'      <div class="col-sm-6" name="{sub.lower()}"><div class="card card-body">\n'
                f'        <p class="product-info">\n          {html.escape(text)}\n        </p>\n'
                '      </div></div>\n    </div>\n  </body>\n</html>')

    def _done_page(self, asin, options, reward) -> str:
        return (_HEAD + '  <body>\n    <div class="container" style="margin-top: 8%;">\n'
                '      <div id="thankyou" class="text-center"><h1>Thank you for shopping with us!</h1></div>\n'
                '      <div id="stats" class="text-center">\n'
                '        <h3 align="mturk_code">Your code: </h3>\n        <p><pre>ABC123</pre> (Paste it in your MTurk interface.)</p>\n'
                '        <div style="display:none">\n          <h2 align="left">Purchased</h2>\n'
                f'          <h4 id="asin">asin<pre>{asin}</pre></p>\n'
                f'          <h4 id="options">options<pre>{html.escape(json.dumps(options))}</pre></h4>\n'
                f'          <h4 id="goal-asin">asin<pre>{GOAL["asin"]}</pre></p>\n'
                '          <h2 align="left">Reward</h2>\n        </div>\n        <hr class="solid">\n'
                f'        <h3   id="reward">Your score (min 0.0, max 1.0)<pre>{reward}</pre></h3>\n'
                "        <h4 hidden>Reward Details <div id=\"reward_info\"><pre>{'r_type': 1.0}</pre></div></h4>\n"
                '      </div>\n    </div>\n  </body>\n</html>\n')


class FakeWebShopServer(_Server):
    """WebShop-shaped site on loopback (see module docstring). ``purchases`` lists
    ``(session_id, asin, options)`` for every ``/done`` request."""

    handler_cls = _WebShopHandler

    def __init__(self) -> None:
        self.purchases: list[tuple[str, str, dict]] = []
        super().__init__()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
