"""A :class:`~skillax.agents.workers.base.Worker` backed by a frozen local policy.

The sampler is wrapped into a plain function (``skillax.engine.sampler.make_generate_fn(
sampler, params)`` builds it)

    generate_fn(prompt_ids: list[list[int]], max_new_tokens: int, temperature: float,
                stop_strings: list[str]) -> list[tuple[list[int], str]]

returning, per prompt, the generated token ids (up to and including the stop token, as the
sampler's ``mask`` covers it) and the stop reason in ``{"eos", "stop", "length"}``
(ARCHITECTURE.md, "Sampler output"). This module owns the text side: chat rendering with the
tokenizer's chat template (``skillax.tokenizers.chat.render``, generation prompt appended),
one ``generate_fn`` call per batch, decoding (special tokens skipped), and OpenAI-style stop
handling (the stop string is cut from the text, ``finish_reason`` is ``"stop"`` or
``"length"``). No jax here: the jax side stays behind ``generate_fn``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from skillax.agents.workers.base import (Completion, Usage, error_completion, truncate_at_stop,
                                         validate_chat_args)

GenerateFn = Callable[[list[list[int]], int, float, list[str]], list[tuple[list[int], str]]]
_FINISH = {"eos": "stop", "stop": "stop", "length": "length"}


class LocalWorker:
    """Frozen local policy as a batched chat worker.

    Args:
      tokenizer: a ``transformers`` tokenizer with a chat template.
      generate_fn: see module docstring.
      render_fn: optional ``(tokenizer, messages) -> prompt text``; default
        ``skillax.tokenizers.chat.render(tokenizer, messages, add_generation_prompt=True,
        enable_thinking=enable_thinking)`` (the tokenizer's chat template).
      enable_thinking: Qwen3's thinking switch for the default rendering (templates without
        it ignore it).
      max_prompt_tokens: prompts longer than this (in tokens) are not generated; their
        completion carries an error (counted failure). None = no limit.
      reserve_calls: optional ``n -> first`` reservation of ``n`` sampler key steps
        (``PolicySampler.reserve_calls``) for a ``generate_fn`` that also takes ``keys=``
        (one (step, row) key per prompt): then ``chat(..., keys=...)`` samples each row with its
        own key, whichever rows share the call (overlapped play, ``agents.agent_loop``).
      evaluation_stream: optional ``() -> LocalWorker``: the same frozen policy on a fresh
        held-out evaluation key stream (``PolicySampler.evaluation_stream``: a private counter
        from ``EVAL_CALL_OFFSET``, the training counter untouched); kept as the attribute
        ``evaluation_stream`` (None without one), which ``skill_alpha.anchors.EnvScorer``
        calls once per evaluation pass (common random numbers).

    Raises:
      ValueError: the tokenizer has no chat template and no ``render_fn`` was given.
    """

    def __init__(self, tokenizer: Any, generate_fn: GenerateFn, *,
                 render_fn: Callable[[Any, list[dict]], str] | None = None,
                 enable_thinking: bool = False,
                 max_prompt_tokens: int | None = None,
                 reserve_calls: Callable[[int], int] | None = None,
                 evaluation_stream: Callable[[], "LocalWorker"] | None = None) -> None:
        if render_fn is None and not getattr(tokenizer, "chat_template", None):
            raise ValueError("tokenizer has no chat_template; pass render_fn")
        self.tokenizer = tokenizer
        self.generate_fn = generate_fn
        self.render_fn = render_fn
        self.enable_thinking = enable_thinking
        self.max_prompt_tokens = max_prompt_tokens
        self.reserve_calls = reserve_calls
        self.evaluation_stream = evaluation_stream
        self.usage = Usage()

    def __repr__(self) -> str:
        return f"LocalWorker(tokenizer={type(self.tokenizer).__name__}, max_prompt_tokens={self.max_prompt_tokens})"

    def render(self, messages: Sequence[dict]) -> str:
        """Prompt text for one conversation, ending with the assistant generation header."""
        msgs = [dict(m) for m in messages]
        if self.render_fn is not None:
            return self.render_fn(self.tokenizer, msgs)
        from skillax.tokenizers.chat import render

        return render(self.tokenizer, msgs, add_generation_prompt=True,
                      enable_thinking=self.enable_thinking)

    def encode(self, messages: Sequence[dict]) -> list[int]:
        """Prompt token ids (the template supplies BOS etc.; no extra special tokens)."""
        return list(self.tokenizer(self.render(messages), add_special_tokens=False)["input_ids"])

    def chat(self, batch: Sequence[Sequence[dict]], *, temperature: float, max_tokens: int,
             stop: Sequence[str] | None = None,
             keys: Sequence[tuple[int, int]] | None = None) -> list[Completion]:
        """Answer all conversations with one ``generate_fn`` call.

        Args:
          batch: N conversations of ``{"role", "content"}`` messages.
          temperature: sampling temperature (0 = greedy, as the sampler defines it).
          max_tokens: max new tokens per conversation.
          stop: stop strings (passed to the sampler and cut from the decoded text).
          keys: optional (step, row) sampler key per conversation, passed on as
            ``generate_fn(..., keys=...)`` (needs ``reserve_calls``, class docstring).

        Returns:
          N :class:`Completion` in input order; ``prompt_tokens``/``completion_tokens`` count
          token ids (completion includes the EOS/stop token the sampler emitted).

        Raises:
          ValueError: malformed arguments, or ``generate_fn`` returned a wrong number of rows
            or an unknown stop reason (a sampler bug must be loud).
        """
        stops = validate_chat_args(batch, temperature, max_tokens, stop)
        if keys is not None and (self.reserve_calls is None or len(keys) != len(batch)):
            raise ValueError(f"keys need a keyed generate_fn (reserve_calls) and one key per conversation "
                             f"({len(keys)} keys, {len(batch)} conversations)")
        prompts = [self.encode(conv) for conv in batch]
        out: list[Completion | None] = [None] * len(prompts)
        todo = []
        for i, ids in enumerate(prompts):
            if self.max_prompt_tokens is not None and len(ids) > self.max_prompt_tokens:
                out[i] = error_completion(f"prompt has {len(ids)} tokens > max_prompt_tokens="
                                          f"{self.max_prompt_tokens}")
            else:
                todo.append(i)
        if todo:
            kw = {} if keys is None else {"keys": [keys[i] for i in todo]}
            results = self.generate_fn([prompts[i] for i in todo], int(max_tokens),
                                       float(temperature), list(stops), **kw)
            self.usage.add(requests=1)
            if len(results) != len(todo):
                raise ValueError(f"generate_fn returned {len(results)} rows for {len(todo)} prompts")
            for i, (ids, reason) in zip(todo, results):
                if reason not in _FINISH:
                    raise ValueError(f"generate_fn returned unknown stop reason {reason!r}")
                text = self.tokenizer.decode(list(ids), skip_special_tokens=True)
                text, hit = truncate_at_stop(text, stops)
                finish = "stop" if hit else _FINISH[reason]
                out[i] = Completion(text=text, finish_reason=finish, prompt_tokens=len(prompts[i]),
                                    completion_tokens=len(ids))
                self.usage.add(prompt_tokens=len(prompts[i]), completion_tokens=len(ids))
        failures = sum(o.error is not None for o in out)
        self.usage.add(calls=len(out), failures=failures)
        return out  # type: ignore[return-value]
