"""WebShop adapter: plays tasks against a running WebShop web server over HTTP.

WebShop (Yao et al., 2022, "WebShop: Towards Scalable Real-World Web Interaction with
Grounded Language Agents"; github.com/princeton-nlp/WebShop) is a Flask site; users start it
themselves (it needs Java for its pyserini search index and several GB for the full data):

    git clone https://github.com/princeton-nlp/WebShop && cd WebShop
    ./setup.sh -d small          # 1,000 products (``-d all``: 1.18 M products)
    python -m web_agent_site.app --log --attrs      # serves http://127.0.0.1:3000

then ``WebShopEnv(base_url="http://127.0.0.1:3000")``. The adapter speaks the site's real
routes (``web_agent_site/app.py``): ``/<session_id>`` (search page; POST ``search_query``
redirects to ``/search_results/<session_id>/<keywords>/<page>``), ``/item_page/...``,
``/item_sub_page/...`` and ``/done/<session_id>/<asin>/<options>`` (reward page). A session
id containing ``fixed`` and ending in ``_<n>`` pins goal ``n`` of the server's shuffled goal
list (``random.seed(233)``), so task ``n`` is the same goal as in the upstream text env.

Actions and observations follow upstream's text env (``web_agent_site/envs/web_agent_text_env.py``):

* actions ``search[query]`` (only where the page has the search bar) and ``click[x]`` where
  ``x`` is a clickable of the page, lower-cased: a button (class ``btn``: "back to search",
  "next >", "< prev", "description", "buy now", ...), a product link (class
  ``product-link``: the ASIN) or an option radio button (its ``value``: "navy blue", "9").
  ``click[search]`` is not allowed (as upstream).
* observation: the page's visible text nodes joined with ``" [SEP] "`` (upstream's "text"
  mode). Differences, both deliberate: whitespace-only nodes are dropped, and subtrees hidden
  by ``style="display:none"`` or the ``hidden`` attribute (the done page's goal/answer
  dump) are skipped.
* reward: the float in ``#reward pre`` of the done page (WebShop's attribute/option/price
  match score in [0, 1]); the episode ends there. ``won`` iff the reward is 1.0 (WebShop's
  success rate). An invalid action changes nothing and scores 0.

Splits (upstream convention, e.g. ``baseline_models`` and verl-agent): goals ``0..499`` are
``test``, ``500..1499`` ``eval``, ``1500..`` ``train``.
"""
from __future__ import annotations

import ast
import dataclasses
import html.parser
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid

from skillax.agents.envs.base import MAX_ACTION_CHARS, Task

ENV_NAME = "webshop"
SPLITS = {"test": (0, 500), "eval": (500, 1500), "train": (1500, None)}
SEARCH_TEMPLATE = "search[<query>]"
_ACTION = re.compile(r"^\s*(search|click)\[(.*)\]\s*$", re.DOTALL | re.IGNORECASE)
_IGNORE = {"style", "script", "head", "title", "meta", "noscript"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}


class WebShopError(RuntimeError):
    """The WebShop server could not be reached or answered with an HTTP error."""


# --------------------------------------------------------------------------- page parsing


@dataclasses.dataclass
class _Node:
    tag: str
    attrs: dict[str, str]
    parent: "_Node | None" = None
    children: list = dataclasses.field(default_factory=list)  # _Node | str

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, _Node):
                yield from c.iter()

    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def hidden(self) -> bool:
        style = self.attrs.get("style", "").replace(" ", "").lower()
        return "hidden" in self.attrs or "display:none" in style


class _TreeBuilder(html.parser.HTMLParser):
    """Lenient tree: an end tag closes the nearest open element of that name (unmatched end
    tags are ignored), which is how upstream's ``<h4>…</h5>`` markup nests in BeautifulSoup."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("[document]", {})
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = _Node(tag, {k: (v if v is not None else "") for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        if tag not in _VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(_Node(tag, {k: (v or "") for k, v in attrs}, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


@dataclasses.dataclass
class Clickable:
    """What clicking does: an HTTP ``method`` on ``url`` (form data for POST), or selecting
    an ``option`` (name, value) by following the radio's ``data-url``."""

    method: str
    url: str
    option: tuple[str, str] | None = None


@dataclasses.dataclass
class Page:
    """A parsed WebShop page.

    Attributes:
      url: the URL it was fetched from (after redirects).
      text: observation text (visible text nodes joined by " [SEP] ").
      clickables: lower-cased clickable name -> :class:`Clickable`.
      search_form: ``(action_url, field_name)`` when the search bar is present.
      instruction: the goal instruction shown on the page ("" if absent).
      reward: the done page's reward, else None.
    """

    url: str
    text: str
    clickables: dict[str, Clickable]
    search_form: tuple[str, str] | None
    instruction: str
    reward: float | None


def _visible_texts(node: _Node, out: list[str]) -> None:
    for c in node.children:
        if isinstance(c, str):
            if c.strip():
                out.append(c.strip())
        elif c.tag not in _IGNORE and not c.hidden():
            _visible_texts(c, out)


def parse_page(markup: str, url: str) -> Page:
    """Parse one WebShop page (see module docstring for the rules).

    Raises ValueError when the done page's reward is not a number."""
    b = _TreeBuilder()
    b.feed(markup)
    b.close()
    texts: list[str] = []
    _visible_texts(b.root, texts)
    clickables: dict[str, Clickable] = {}
    search_form = None
    instruction = ""
    reward = None
    for n in b.root.iter():
        cls = n.classes()
        if "btn" in cls or "product-link" in cls:
            name = " ".join(n.text().split()).lower()
            if not name:
                continue
            if n.tag == "a":
                clickables[name] = Clickable("GET", urllib.parse.urljoin(url, n.attrs.get("href", "")))
            else:
                form = n.parent
                while form is not None and form.tag != "form":
                    form = form.parent
                if form is not None:
                    method = form.attrs.get("method", "get").upper()
                    clickables[name] = Clickable(method, urllib.parse.urljoin(url, form.attrs.get("action", url)))
        elif n.tag == "input" and n.attrs.get("type", "").lower() == "radio":
            value = n.attrs.get("value", "")
            if value and n.attrs.get("data-url"):
                clickables[value] = Clickable("GET", urllib.parse.urljoin(url, n.attrs["data-url"]),
                                              option=(n.attrs.get("name", ""), value))
        if n.attrs.get("id") == "search_input":
            form = n.parent
            while form is not None and form.tag != "form":
                form = form.parent
            if form is not None:
                search_form = (urllib.parse.urljoin(url, form.attrs.get("action", url)),
                               n.attrs.get("name", "search_query"))
        if n.attrs.get("id") == "instruction-text" and not instruction:
            h4 = next((c for c in n.iter() if c.tag == "h4"), None)
            raw = " ".join((h4 or n).text().split())
            instruction = re.sub(r"^Instruction:\s*", "", raw)
        if n.attrs.get("id") == "reward":
            pre = next((c for c in n.iter() if c.tag == "pre"), None)
            value = (pre or n).text().strip()
            try:
                reward = float(value)
            except ValueError:
                raise ValueError(f"done page at {url}: reward {value!r} is not a number") from None
    clickables.pop("search", None)  # upstream never lets the agent click the search button
    return Page(url, " [SEP] ".join(texts), clickables, search_form, instruction, reward)


def options_from_url(url: str) -> dict[str, str]:
    """Selected product options, read from the last path segment of an ``item_page``,
    ``item_sub_page`` or ``done`` URL (the site keeps them there as a Python dict literal);
    ``{}`` on other pages or when the segment is not a dict."""
    path = urllib.parse.urlsplit(url).path
    if not any(f"/{p}/" in path for p in ("item_page", "item_sub_page", "done")):
        return {}
    try:
        value = ast.literal_eval(urllib.parse.unquote(path.rstrip("/").rsplit("/", 1)[-1]))
    except (ValueError, SyntaxError):
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


# --------------------------------------------------------------------------- tasks


def webshop_tasks(split: str = "test", *, n: int | None = None, num_goals: int = 6910,
                  indices: list[int] | None = None) -> list[Task]:
    """WebShop tasks by goal index.

    Args:
      split: ``"test"`` (goals 0–499), ``"eval"`` (500–1499) or ``"train"`` (1500 to
        ``num_goals``-1).
      n: take only the first ``n`` goals of the split.
      num_goals: goals the server holds (6,910 human goals with the full data; set it to
        your server's count for ``-d small``).
      indices: explicit goal indices (overrides the split range; ``split`` is still stored).

    Returns:
      tasks with id ``"webshop/<idx>"``, family ``"webshop"``, goal ``""`` (the instruction is
      known only from the server: ``reset`` returns it in ``info["instruction"]``), payload
      ``{"goal_idx": idx}``.

    Raises:
      ValueError: unknown split.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown WebShop split {split!r}; known: {sorted(SPLITS)}")
    if indices is None:
        lo, hi = SPLITS[split]
        indices = list(range(lo, min(num_goals, hi) if hi is not None else num_goals))
    if n is not None:
        indices = list(indices)[:n]
    return [Task(id=f"webshop/{i}", env=ENV_NAME, family="webshop", goal="", split=split,
                 payload={"goal_idx": int(i)}) for i in indices]


# --------------------------------------------------------------------------- environment


class WebShopEnv:
    """WebShop over HTTP (follows :class:`skillax.agents.envs.base.Env`).

    Args:
      base_url: the running site, e.g. ``"http://127.0.0.1:3000"``.
      max_steps: step cap; reaching it without buying ends the episode with reward 0 and
        ``info["truncated"] = True`` (verl-agent uses 15 for WebShop).
      timeout_s: per-request HTTP timeout in seconds.
      session_prefix: prefix of generated session ids (must not contain ``_``).

    ``info`` keys: ``won``, ``admissible_commands`` (``"search[<query>]"`` when the search
    bar is shown, plus ``"click[x]"`` per clickable), ``step``, ``invalid``,
    ``invalid_reason``, ``truncated``, ``instruction``, ``url``, ``options`` (selected
    option name -> value).

    Raises:
      WebShopError: the server is unreachable or answers with an HTTP error (for example
        500 for a goal index the server does not have).
    """

    def __init__(self, base_url: str = "http://127.0.0.1:3000", *, max_steps: int = 15,
                 timeout_s: float = 30.0, session_prefix: str = "skillax") -> None:
        if "_" in session_prefix:
            raise ValueError("session_prefix must not contain '_' (the goal index follows the last '_')")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.base_url = base_url.rstrip("/")
        self.max_steps, self.timeout_s, self.session_prefix = max_steps, timeout_s, session_prefix
        self._opener = urllib.request.build_opener(urllib.request.HTTPRedirectHandler())
        self.page: Page | None = None
        self.session_id = ""
        self._steps = 0
        self._done = True
        self.instruction = ""

    # ------------------------------------------------------------------ protocol

    def reset(self, task: Task) -> tuple[str, dict]:
        """Open a fresh session on the task's goal (``payload["goal_idx"]``; None = a random
        goal drawn by the server) and return the search page."""
        idx = task.payload.get("goal_idx")
        nonce = uuid.uuid4().hex[:10]
        self.session_id = f"{self.session_prefix}{nonce}" + (f"_fixed_{int(idx)}" if idx is not None else "")
        self.page = self._fetch("GET", f"{self.base_url}/{self.session_id}")
        self.instruction = self.page.instruction
        self._steps, self._done = 0, False
        return self.page.text, self._info(won=False, invalid=None, truncated=False)

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        """Apply ``search[query]`` or ``click[x]``. Raises RuntimeError without an open
        episode, WebShopError on HTTP failures."""
        if self.page is None or self._done:
            raise RuntimeError("step() called without an open episode; call reset(task) first")
        self._steps += 1
        invalid = self._apply(action)
        reward, won = 0.0, False
        if self.page.reward is not None:
            reward, self._done = self.page.reward, True
            won = reward >= 1.0 - 1e-9
        truncated = not self._done and self._steps >= self.max_steps
        self._done = self._done or truncated
        return self.page.text, reward, self._done, self._info(won=won, invalid=invalid, truncated=truncated)

    def close(self) -> None:
        self.page = None
        self._done = True

    def admissible_commands(self) -> list[str]:
        """Actions valid on the current page."""
        if self.page is None:
            return []
        cmds = [SEARCH_TEMPLATE] if self.page.search_form else []
        return cmds + [f"click[{c}]" for c in self.page.clickables]

    # ------------------------------------------------------------------ internals

    def _apply(self, action: str) -> str | None:
        """Perform the action; return None, or why it is invalid (then nothing happens)."""
        if not isinstance(action, str):
            return "not_a_string"
        if not action.strip():
            return "empty"
        if len(action) > MAX_ACTION_CHARS:
            return "too_long"
        m = _ACTION.match(action)
        if m is None:
            return "not_admissible"
        kind, arg = m.group(1).lower(), " ".join(m.group(2).split()).lower()
        if not arg:
            return "empty"
        page = self.page
        if kind == "search":
            if page.search_form is None:
                return "not_admissible"
            url, field = page.search_form
            self.page = self._fetch("POST", url, {field: arg})
            return None
        target = page.clickables.get(arg)
        if target is None:
            return "not_admissible"
        self.page = self._fetch(target.method, target.url, {} if target.method == "POST" else None)
        return None

    def _fetch(self, method: str, url: str, form: dict | None = None) -> Page:
        url = urllib.parse.quote(url, safe=":/?&=%#+,;@!$'()*~")
        data = urllib.parse.urlencode(form).encode() if method == "POST" else None
        req = urllib.request.Request(url, data=data, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout_s) as resp:
                body = resp.read().decode(resp.headers.get_content_charset() or "utf-8", "replace")
                final_url = resp.geturl()
        except urllib.error.HTTPError as e:
            raise WebShopError(f"WebShop server answered HTTP {e.code} for {method} {url}"
                               " (is the goal index within the server's goals?)") from None
        except (urllib.error.URLError, OSError) as e:
            raise WebShopError(f"WebShop server unreachable at {self.base_url} ({e}); start it with "
                               "`python -m web_agent_site.app --log --attrs`") from None
        return parse_page(body, final_url)

    def _info(self, *, won: bool, invalid: str | None, truncated: bool) -> dict:
        return {"won": won, "admissible_commands": self.admissible_commands(), "step": self._steps,
                "invalid": invalid is not None, "invalid_reason": invalid, "truncated": truncated,
                "instruction": self.instruction, "url": self.page.url if self.page else "",
                "options": options_from_url(self.page.url) if self.page else {}}
