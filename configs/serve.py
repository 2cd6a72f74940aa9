"""Serve a policy over an OpenAI-compatible HTTP API (``mode=serve``, skillax.modes.serve).

Command (CPU; the URL is printed as one JSON line once it listens):
    python -m skillax.main --config configs/serve.py
    python -m skillax.main --config configs/serve.py --config.model.path=qwen2.5-coder-0.5b \
        --config.serve.port=8000
    python -m skillax.main --config configs/serve.py --config.serve.checkpoint=/tmp/skillos_tiny
Then e.g. ``OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="EMPTY").chat.completions
.create(model="qwen2.5-coder-0.5b", messages=[...])``, or point a method's executor/worker at it
(``--config.executor.kind=openai --config.executor.openai.base_url=http://127.0.0.1:8000/v1
--config.executor.openai.model=<served name>``).

Should show: ``{"url": "http://127.0.0.1:8000/v1", "model": "..."}``; requests answered with
OpenAI JSON bodies, 4xx JSON errors on bad input. Benchmarks: benchmarks/serve_chat.py, and
benchmarks/serve_play.py (lock-step agent turns; results and the H200 command:
benchmarks/results/serve_play.md).

serve.* knobs:
  host / port: bind address (127.0.0.1: loopback only) and port (0 = a free port).
  model_name: the id clients send as ``model`` (default: the last part of model.path).
  checkpoint: a run workdir (or its checkpoints/ folder) whose latest policy params are served.
  api_key_env: name of an environment variable holding the API key ("" = no key required).
  max_batch_rows: most rows (prompts x n) per sampler call; max_queue: waiting requests
    before 429.
  batch_quiet_ms / batch_max_wait_ms / batch_window_ms: when the batcher stops collecting
    (``serving.batcher.Window``). batch_quiet_ms > 0 (default 50): call once no request
    arrived for that long, at most batch_max_wait_ms (default 2000) after the oldest waiting
    one -- a lock-step agent turn of N concurrent requests is one call (measured,
    benchmarks/serve_play.py: each request's parse + tokenise is ~3 ms, one after the other,
    so a burst of 105-140 reaches the queue over 0.3-0.5 s on the loaded CPU; with a 500 ms
    cap one round of four still split). batch_quiet_ms = 0: the fixed window of the first
    server, a call batch_window_ms after the first waiting request.
  row_buckets: rows per compiled program: "pow2" (default: 8, 16, 32, ... -- fewer programs
    than the sampler's 1.5x points; ``serve.serving_buckets``), "sampler", or a comma list.
  warmup_prompt_tokens: comma list of prompt lengths (e.g. "1024,1536,2048"; "" = none):
    compile every row bucket x these prompt buckets at default_max_tokens (sampled, with a
    stop string: the agents' pattern) on start-up, before the first request is served.
  tokenizer_copies: tokenizer copies the HTTP handlers share (one per handler at a time;
    default 4): concurrent requests' chat template + tokenisation need not queue on one lock.
  default_max_tokens / max_n: defaults and limits of a request; request_timeout_s: 504 after it.
  enable_thinking: Qwen3 thinking switch when a request does not say.
  max_seconds: stop after this long (0 = until interrupted; tests and benchmarks use it).
"""

import ml_collections

from skillax import config_defaults


def get_config():
    c = config_defaults.base("serve")
    c.model.path = "smollm2"
    c.model.max_len = 2048
    c.serve = ml_collections.ConfigDict(dict(
        host="127.0.0.1", port=8000, model_name="", checkpoint="", api_key_env="",
        max_batch_rows=64, batch_window_ms=10.0, batch_quiet_ms=50.0, batch_max_wait_ms=2000.0, max_queue=256,
        row_buckets="pow2", warmup_prompt_tokens="", tokenizer_copies=4, default_max_tokens=256, max_n=16,
        request_timeout_s=600.0, max_body_bytes=8 << 20, enable_thinking=False, max_seconds=0.0))
    return c
