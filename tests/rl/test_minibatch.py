"""Host-side update layout (``skillax.rl.minibatch``): lengths, mini-batches of whole episodes,
length-bucketed micro-batches, row gathering, padded-token counts and the metrics of a step
of several updates -- all on hand-built inputs with hand-computed answers."""
import numpy as np
import pytest

from skillax.methods.common.rows import Generation, build_batch
from skillax.rl import minibatch as mb


def test_row_lengths_and_bucket():
    valid = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], bool)
    assert mb.row_lengths(valid).tolist() == [3, 0, 5, 1]
    assert [mb.bucket_of(n, (16, 32, 64)) for n in (1, 16, 17, 64)] == [16, 16, 32, 64]
    with pytest.raises(ValueError, match="65 tokens exceeds the largest training bucket 64"):
        mb.bucket_of(65, (16, 32, 64))


def test_minibatches_keep_episodes_together_in_id_order():
    # 4 groups of G = 2 episodes, numbered group-major; episode 5 has 3 rows, the others 1-2
    episodes = [0, 0, 1, 2, 3, 3, 4, 5, 5, 5, 6, 7]
    parts = mb.minibatch_rows(episodes, 2)
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]   # episodes 0-3 | 4-7
    ep = np.asarray(episodes)
    for k in (1, 2, 3, 4, 8, 20):
        parts = mb.minibatch_rows(episodes, k)
        assert len(parts) == min(k, 8)
        assert sorted(np.concatenate(parts).tolist()) == list(range(len(episodes)))   # every row once
        owners = [{int(e) for e in ep[p]} for p in parts]
        assert all(not (a & b) for i, a in enumerate(owners) for b in owners[i + 1:])   # no episode split
    assert [len(set(ep[p])) for p in mb.minibatch_rows(episodes, 3)] == [3, 3, 2]      # array_split sizes
    # k = 2 with 8 episodes of G = 2: 4 episodes = 2 whole groups per mini-batch
    assert [sorted({int(e) // 2 for e in ep[p]}) for p in mb.minibatch_rows(episodes, 2)] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="mini_batches must be >= 1"):
        mb.minibatch_rows(episodes, 0)


def test_micro_batches_sort_by_length_and_pad_each_to_its_bucket():
    lengths = np.array([40, 5, 12, 30, 3, 17, 64, 9])
    micro = mb.micro_batches(np.arange(8), lengths, (16, 32, 64), 3)
    # sorted: 3(4) 5(1) 9(7) | 12(2) 17(5) 30(3) | 40(0) 64(6) pad
    assert [(T, idx.tolist()) for T, idx in micro] == [(16, [4, 1, 7]), (32, [2, 5, 3]), (64, [0, 6, -1])]
    assert mb.padded_tokens(lengths, (16, 32, 64), 3, "padded") == 9 * 64
    assert mb.padded_tokens(lengths, (16, 32, 64), 3, "buckets") == 3 * 16 + 3 * 32 + 3 * 64
    sub = mb.micro_batches(np.array([0, 2, 5]), lengths, (16, 32, 64), 4)   # a mini-batch's rows only
    assert [(T, idx.tolist()) for T, idx in sub] == [(64, [2, 5, 0, -1])]


def test_gather_rows_cuts_columns_and_pads():
    gens = [Generation([1, 2], [3, 4, 5], [-0.1, -0.2, -0.3], "a", episode=7),
            Generation([6], [7], [-0.5], "b", episode=8)]
    batch = build_batch(gens, {"a": np.array([1.5, 0.0], np.float32), "b": np.array([0.0, -2.0], np.float32)},
                        ["a", "b"], length_buckets=(4, 8), rows_multiple=4)
    assert batch["tokens"].shape == (4, 8) and batch["episodes"].tolist() == [7, 8, -1, -1]
    sub = mb.gather(batch, [1, -1], 4)
    assert set(sub) == {"tokens", "positions", "valid", "old_logprobs", "objectives"}   # no host keys
    assert sub["tokens"].tolist() == [[6, 7, 0, 0], [0, 0, 0, 0]]
    assert sub["valid"].tolist() == [[True, True, False, False], [False] * 4]
    assert sub["positions"].tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert sub["old_logprobs"].tolist() == [[0.0, -0.5, 0.0, 0.0], [0.0] * 4]
    assert sub["objectives"]["b"]["loss_mask"].tolist() == [[0, 1, 0, 0], [0] * 4]
    assert sub["objectives"]["b"]["advantages"].tolist() == [-2.0, 0.0]
    assert sub["objectives"]["a"]["loss_mask"].sum() == 0
    full = mb.gather(batch, [0], 8)
    assert full["tokens"][0].tolist() == [1, 2, 3, 4, 5, 0, 0, 0] and batch["tokens"][0, 0] == 1   # a copy


def test_objective_part_zeroes_the_other_masks_and_keeps_the_objectives_rows():
    """Rows 0-3 (rows 0, 2 of objective a; 1, 3 of b; row 3 also has an a token), an update on
    rows 1-3: a's part covers rows 2, 3 (row 0 is not in the update), b's rows 1, 3; the other
    objective's mask is all zero, the objective's own mask and every advantage unchanged."""
    gens = [Generation([1], [2, 3], [-0.1, -0.2], "a", 0), Generation([1], [4], [-0.3], "b", 1),
            Generation([1], [5, 6, 7], [-0.4] * 3, "a", 2), Generation([1], [8, 9], [-0.5] * 2, "b", 3)]
    adv = {"a": np.array([1.0, 0.0, -1.0, 0.5], np.float32), "b": np.array([0.0, 2.0, 0.0, -2.0], np.float32)}
    batch = build_batch(gens, adv, ["a", "b"], length_buckets=(4, 8), rows_multiple=4)
    batch["objectives"]["a"]["loss_mask"][3, 2] = 1     # row 3: one token of a as well
    lengths = mb.row_lengths(batch["valid"])
    part, micro = mb.objective_part(batch, [1, 2, 3], "a", lengths, (4, 8), 2)
    assert [(T, idx.tolist()) for T, idx in micro] == [(4, [3, 2])]          # lengths 3 and 4, sorted
    assert part["objectives"]["b"]["loss_mask"].sum() == 0
    assert np.array_equal(part["objectives"]["a"]["loss_mask"], batch["objectives"]["a"]["loss_mask"])
    assert np.array_equal(part["objectives"]["b"]["advantages"], adv["b"]) and part["tokens"] is batch["tokens"]
    assert batch["objectives"]["b"]["loss_mask"].sum() == 3                  # the batch is not changed
    _, micro_b = mb.objective_part(batch, [1, 2, 3], "b", lengths, (4, 8), 2)
    assert [(T, idx.tolist()) for T, idx in micro_b] == [(4, [1, 3])]
    assert mb.objective_part(batch, [0, 2], "b", lengths, (4, 8), 2)[1] == []   # no b tokens in those rows


def _update(tokens, loss, pg, ratio, clip, gn, lr=1e-3):
    return {"p/tokens": tokens, "p/loss": loss, "p/pg_loss": pg, "p/kl": 0.0, "p/entropy": 1.0,
            "p/clip_frac": clip, "p/dual_clip_frac": 0.0, "p/ratio_mean": ratio, "loss": loss,
            "tokens": tokens, "grad_norm": gn, "update_skipped": 0.0, "rows_without_loss_tokens": 1.0, "lr": lr}


def test_combine_updates_is_token_weighted():
    one = _update(10.0, 0.5, 0.4, 1.0, 0.0, 2.0)
    assert mb.combine_updates([one], [{"p": 10.0}], {"p": 1.0}, 1) == {**one, "updates": 1}
    # two mini-batches (10 and 30 tokens), two epochs: 4 updates
    ups = [_update(10.0, 0.5, 0.4, 1.0, 0.0, 2.0), _update(30.0, 0.1, 0.2, 1.1, 0.2, 4.0),
           _update(10.0, 0.3, 0.1, 0.9, 0.5, 1.0), _update(30.0, 0.2, 0.0, 1.2, 0.3, 1.0)]
    dens = [{"p": 10.0}, {"p": 30.0}, {"p": 10.0}, {"p": 30.0}]
    m = mb.combine_updates(ups, dens, {"p": 0.5}, per_epoch=2)
    assert m["updates"] == 4 and m["p/tokens"] == 40.0 and m["tokens"] == 40.0   # the batch, once
    assert m["p/pg_loss"] == pytest.approx((10 * 0.4 + 30 * 0.2 + 10 * 0.1 + 0) / 80)
    assert m["p/ratio_mean"] == pytest.approx((10 * 1.0 + 30 * 1.1 + 10 * 0.9 + 30 * 1.2) / 80)
    assert m["p/clip_frac"] == pytest.approx((30 * 0.2 + 10 * 0.5 + 30 * 0.3) / 80)
    assert m["p/ratio_mean_later"] == pytest.approx((30 * 1.1 + 10 * 0.9 + 30 * 1.2) / 70)
    assert m["p/clip_frac_later"] == pytest.approx((30 * 0.2 + 10 * 0.5 + 30 * 0.3) / 70)
    assert m["p/loss"] == pytest.approx((10 * 0.5 + 30 * 0.1 + 10 * 0.3 + 30 * 0.2) / 80)
    assert m["loss"] == pytest.approx(0.5 * m["p/loss"])
    assert (m["grad_norm"], m["grad_norm_max"], m["rows_without_loss_tokens"], m["lr"]) == (2.0, 4.0, 2.0, 1e-3)
    assert "grad_norm_p" not in m                       # only where the updates carry it
    with_parts = [{**u, "grad_norm_p": g} for u, g in zip(ups, (0.5, 1.5, 2.0, 4.0))]
    m2 = mb.combine_updates(with_parts, dens, {"p": 0.5}, per_epoch=2)
    assert m2["grad_norm_p"] == 2.0 and {k: v for k, v in m2.items() if k != "grad_norm_p"} == m
    assert mb.combine_updates(with_parts[:1], dens[:1], {"p": 0.5}, 1)["grad_norm_p"] == 0.5
