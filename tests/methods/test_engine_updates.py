"""``PolicyEngine.train`` update layouts on a tiny random transformer (CPU, fp32):

* one update (``rl.mini_batches = rl.epochs = 1``, ``train.update_layout = "padded"``) is the
  train step on the batch exactly as built -- bit for bit;
* length-bucketed micro-batches (``"buckets"``) give the padded update's gradient within 1e-6
  (max |g| ~ 0.1), its loss and gradient norm within 1e-5 and its parameters (two Adam
  updates at lr 1e-5) within 1e-6, on 896 instead of 1,280 padded tokens;
* k mini-batches x E epochs: on-policy old logprobs give ratio 1 / clip 0 at the first update,
  later updates see ratio != 1 and a non-zero clip fraction, and the step's metrics count the
  batch's tokens once;
* ``rl.objective_grad_norms_every``: each objective's gradient norm on hand-computable batches
  (one objective alone, parallel and opposite parts) within 1e-5, the triangle inequality on
  the fixture's rows, and the flag leaving both layouts' updates bit for bit as they were.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from skillax import config_defaults
from skillax.methods.common.engine import PolicyEngine
from skillax.methods.common.rows import Generation, build_batch
from skillax.models.config import ModelConfig
from skillax.models.params import abstract_params
from skillax.rl import minibatch as mb_lib
from skillax.rl import objectives as obj_lib
from skillax.rl import train_step as ts
from skillax.rl.objectives import ObjectiveConfig

CFG = ModelConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=2, num_heads=4,
                  num_kv_heads=2, head_dim=8, rope_theta=10000.0, qk_norm=True, tie_word_embeddings=False)
BUCKETS = (32, 64)
OBJS = {"policy": ObjectiveConfig(eps_high=0.28), "aux": ObjectiveConfig(weight=0.3, aggregation="seq_mean_token_mean")}


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map_with_path(
        lambda path, s: jnp.asarray(np.ones(s.shape, np.float32) if "norm" in jax.tree_util.keystr(path)
                                    else 0.3 * rng.standard_normal(s.shape, np.float32)), abstract_params(CFG))


def _config(layout="padded", k=1, epochs=1, lr=1e-4):
    c = config_defaults.base("skill1")
    c.model.dtype, c.model.max_len = "float32", 128
    c.train = config_defaults.train(lr=lr, total_steps=10)
    c.train.micro_batch, c.train.length_buckets, c.train.update_layout, c.train.remat = 4, BUCKETS, layout, False
    c.rl = config_defaults.rl()
    c.rl.mini_batches, c.rl.epochs = k, epochs
    return c


def _engine(tmp_path, name, **kw):
    return PolicyEngine(_params(), CFG, None, _config(**kw), tmp_path / name)


def _batch(seed=1):
    """6 episodes x 3 rows (one long row per episode, like Skill1's distil row): 18 rows in
    buckets 32 / 64; the padded batch is 20 x 64."""
    rng = np.random.default_rng(seed)
    gens = []
    for e in range(6):
        for r in range(3):
            P, C = int(rng.integers(3, 12)), int(rng.integers(30, 50) if r == 0 else rng.integers(2, 10))
            gens.append(Generation(list(rng.integers(1, 64, P)), list(rng.integers(1, 64, C)),
                                   list(-rng.uniform(0.5, 4, C)), "policy" if r < 2 else "aux", e))
    advs = {o: rng.normal(size=len(gens)).astype(np.float32) for o in OBJS}
    return build_batch(gens, advs, list(OBJS), length_buckets=BUCKETS, rows_multiple=4)


def _leaves(eng):
    return [np.asarray(x) for x in jax.tree.leaves(eng.state["params"])]


@pytest.fixture(scope="module")
def batch():
    return _batch()


def test_padded_update_is_the_train_step_bitwise_and_buckets_match_it(batch, tmp_path):
    lengths = mb_lib.row_lengths(batch["valid"])[:batch["num_rows"]]
    before = mb_lib.padded_tokens(lengths, BUCKETS, 4, "padded")
    after = mb_lib.padded_tokens(lengths, BUCKETS, 4, "buckets")
    assert before == 20 * 64 and after == 3 * 4 * 32 + 2 * 4 * 64    # 12 short rows, 6 long + 2 pad
    padded, bucketed = _engine(tmp_path, "p", lr=1e-5), _engine(tmp_path, "b", layout="buckets", lr=1e-5)
    state0 = jax.tree.map(jnp.copy, padded.state)
    host = {k: v for k, v in batch.items() if k not in mb_lib.HOST_KEYS}
    for i in range(2):                                           # two updates: Adam moments too
        mp, mbk = padded.train(batch, OBJS), bucketed.train(batch, OBJS)
        assert mp["updates"] == mbk["updates"] == 1 and not any(k.endswith("_later") for k in mp)
        if i == 0:   # today's step: the train step on the batch exactly as built
            state, ref = padded._train_steps[padded._train_config(OBJS, 20)](state0, host)
            assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(_leaves(padded), jax.tree.leaves(state["params"])))
            assert {k: float(v) for k, v in ref.items()} == {k: v for k, v in mp.items()
                                                             if k not in ("updates", "time/update_s")}
        for k in ("loss", "grad_norm", "policy/loss", "aux/loss", "policy/ratio_mean", "policy/entropy"):
            assert mbk[k] == pytest.approx(mp[k], abs=1e-5), k
        assert (mbk["tokens"], mbk["policy/tokens"], mbk["aux/tokens"]) == (mp["tokens"], mp["policy/tokens"],
                                                                            mp["aux/tokens"])
        assert mbk["rows_without_loss_tokens"] == mp["rows_without_loss_tokens"] == 0.0
    d = max(float(np.abs(a - b).max()) for a, b in zip(_leaves(padded), _leaves(bucketed)))
    moved = max(float(np.abs(a - np.asarray(b)).max()) for a, b in zip(_leaves(padded), jax.tree.leaves(_params())))
    assert d < 1e-6 and moved > 1e-5                             # a visible update, the same one
    assert [k[0] for k in bucketed._train_steps] == ["buckets"]  # one grad step (a program per bucket)

    # the gradient itself (Adam's first steps are sign-like, so compare it before the optimiser):
    # accumulated over the length-bucketed micro-batches vs over micro-batches of the rows in
    # batch order, all padded to 64 (the padded layout's rows, through the same compiled steps)
    grad_step = bucketed._train_steps[("buckets", bucketed._train_config(OBJS, 4))][0]
    p0, dens = _params(), obj_lib.denominators(host, OBJS)     # (state0 was donated above)

    def accumulate(micro):
        acc = (jax.tree.map(jnp.zeros_like, p0), jnp.zeros(()),
               {f"{n}/{s}": jnp.zeros(()) for n in OBJS for s in obj_lib.SUM_STATS})
        for T, idx in micro:
            acc = grad_step(p0, acc, mb_lib.gather(host, idx, T), dens, None)
        return [np.asarray(g) for g in jax.tree.leaves(acc[0])], float(acc[1])
    g_b, l_b = accumulate(mb_lib.micro_batches(np.arange(18), mb_lib.row_lengths(host["valid"]), BUCKETS, 4))
    g_p, l_p = accumulate([(64, np.arange(20)[i::5]) for i in range(5)])   # train_step's row r -> r % 5
    assert max(float(np.abs(a - b).max()) for a, b in zip(g_b, g_p)) < 1e-6
    assert max(float(np.abs(g).max()) for g in g_p) > 1e-2 and l_b == pytest.approx(l_p, abs=1e-6)


def test_mini_batches_and_epochs_go_off_policy(batch, tmp_path):
    lp_fn = ts.make_logprob_fn(CFG, ts.TrainConfig(temperature=1.0, remat=False))
    on_policy = dict(batch)
    lp, _ = lp_fn(_params(), batch["tokens"], batch["positions"], batch["valid"])
    on_policy["old_logprobs"] = np.where(batch["valid"], np.asarray(lp), 0.0).astype(np.float32)
    eng = _engine(tmp_path, "k3e2", layout="buckets", k=3, epochs=2, lr=1e-2)
    assert eng.train_cfg.updates_per_step == 6
    m = eng.train(on_policy, OBJS)
    assert m["updates"] == 6 and int(np.asarray(eng.state["step"])) == 6
    tok = {n: float(batch["objectives"][n]["loss_mask"].sum()) for n in OBJS}
    assert (m["policy/tokens"], m["aux/tokens"], m["tokens"]) == (tok["policy"], tok["aux"], sum(tok.values()))
    # 3 mini-batches of 2 episodes; the first update (the first third of the policy tokens) is
    # on-policy -- ratio 1, nothing clipped -- so the step's token-weighted means split into it
    # and the 5 later updates (2 E - 1/3 of 2 E passes of tokens)
    first_tok = float(batch["objectives"]["policy"]["loss_mask"][batch["episodes"] < 2].sum())
    total, later = 2 * tok["policy"], 2 * tok["policy"] - first_tok
    assert (m["policy/ratio_mean"] * total - m["policy/ratio_mean_later"] * later) / first_tok == pytest.approx(1.0, abs=1e-4)
    assert m["policy/clip_frac"] * total == pytest.approx(m["policy/clip_frac_later"] * later, abs=1e-3)
    assert abs(m["policy/ratio_mean_later"] - 1.0) > 1e-3 and m["policy/clip_frac_later"] > 0.01
    assert m["update_skipped"] == 0.0 and m["grad_norm_max"] >= m["grad_norm"] > 0.0


def _zero_signal_batch():
    """The fixture's rows with every advantage 0 (all groups zero-variance)."""
    b = _batch()
    b["objectives"] = {k: {**v, "advantages": np.zeros_like(np.asarray(v["advantages"]))}
                       for k, v in b["objectives"].items()}
    return b


def test_no_signal_batch_runs_no_update_and_the_switch_restores_the_step(tmp_path):
    """All advantages 0, KL off: the only gradient is the entropy bonus. With the default
    rl.skip_no_signal the params and optimiser step are untouched; with False the step runs
    and Adam's bias-corrected first update moves weights by ~lr each (|g|/(|g|+eps) ~ 1, plus
    weight decay lr*wd*|w|), although the gradient is tiny -- the campaign-4 collapse."""
    objs = {k: ObjectiveConfig(weight=o.weight, aggregation=o.aggregation, entropy_coef=0.001) for k, o in OBJS.items()}
    b = _zero_signal_batch()
    assert not obj_lib.has_policy_signal(b, objs)
    one = dict(b["objectives"])
    one["aux"] = {**one["aux"], "advantages": np.asarray(one["aux"]["advantages"]).copy()}
    row = int(np.argmax(np.asarray(one["aux"]["loss_mask"]).any(axis=1)))
    one["aux"]["advantages"][row] = 0.5        # a single non-zero advantage under the mask is signal
    assert obj_lib.has_policy_signal({**b, "objectives": one}, objs)
    kl = {**objs, "aux": ObjectiveConfig(weight=0.3, kl_coef=0.01)}
    assert obj_lib.has_policy_signal(b, kl)    # a KL term is a gradient of its own

    eng = _engine(tmp_path, "skip", lr=1e-5)
    before, step0 = _leaves(eng), int(eng.state["step"])
    m = eng.train(b, objs)
    assert m["update_skipped_no_signal"] == 1.0 and m["updates"] == 0.0
    assert all(np.array_equal(x, y) for x, y in zip(before, _leaves(eng)))
    assert int(eng.state["step"]) == step0

    c = _config(lr=1e-5)
    c.rl.skip_no_signal = False
    eng2 = PolicyEngine(_params(), CFG, None, c, tmp_path / "run")
    m2 = eng2.train(b, objs)
    assert "update_skipped_no_signal" not in m2 and m2["grad_norm"] < 1e-2
    moved = max(float(np.max(np.abs(x - y))) for x, y in zip(before, _leaves(eng2)))
    wd = float(c.train.weight_decay)
    bound = 1e-5 * (1 + wd * max(float(np.max(np.abs(x))) for x in before))
    assert 0.9e-5 < moved <= bound * 1.02, (moved, bound)   # 2 %: fp32 rounding of weights ~1


# ------------------------------------------------ rl.objective_grad_norms_every (a diagnostic)

# two REINFORCE objectives without entropy: -lambda_k A log pi per token, so a part's gradient
# is its lambda times the gradient of sum_t A_t log pi_t / D (hand-computable ratios below)
PAIR = {"policy": ObjectiveConfig(loss="reinforce", entropy_coef=0.0),
        "aux": ObjectiveConfig(weight=0.3, loss="reinforce", entropy_coef=0.0)}


def _norms_engine(tmp_path, name, every=1, **kw):
    c = _config(**kw)
    c.rl.objective_grad_norms_every = every
    return PolicyEngine(_params(), CFG, None, c, tmp_path / name)


def _with_objectives(b, aux_mask, aux_adv):
    return {**b, "objectives": {"policy": b["objectives"]["policy"],
                                "aux": {"loss_mask": aux_mask, "advantages": aux_adv}}}


def test_objective_grad_norms_one_part_parallel_and_opposite_parts(batch, tmp_path):
    """Hand-computable cases (policy: lambda 1, advantages A on mask M; aux: lambda 0.3), one
    update each, in turn on one engine (the identities hold at any params): aux without tokens
    -> grad_norm_policy = grad_norm, grad_norm_aux = 0.0; aux on M with A (parallel: g = 1.3
    g_A) -> grad_norm_policy = grad_norm / 1.3, grad_norm_aux = 0.3 grad_norm / 1.3 (the
    triangle inequality's equality); aux on M with -A (opposite: g = 0.7 g_A) -> grad_norm / 0.7
    and 0.3 grad_norm / 0.7 (|1 - 0.3| g_A: its other equality). Then the fixture's rows (each
    row one objective): |n_p - n_a| <= grad_norm <= n_p + n_a."""
    pol = batch["objectives"]["policy"]
    M, A = np.asarray(pol["loss_mask"]), np.asarray(pol["advantages"])
    eng = _norms_engine(tmp_path, "pair", layout="buckets", lr=1e-5)
    for b, p, a in ((_with_objectives(batch, np.zeros_like(M), A), 1.0, 0.0),
                    (_with_objectives(batch, M, A), 1 / 1.3, 0.3 / 1.3),
                    (_with_objectives(batch, M, -A), 1 / 0.7, 0.3 / 0.7)):
        m = eng.train(b, PAIR)
        assert m["grad_norm"] > 1e-2, a
        assert m["grad_norm_policy"] == pytest.approx(p * m["grad_norm"], rel=1e-5), a
        assert m["grad_norm_aux"] == pytest.approx(a * m["grad_norm"], rel=1e-5, abs=0.0), a
    m = eng.train(batch, PAIR)
    n_p, n_a, g = m["grad_norm_policy"], m["grad_norm_aux"], m["grad_norm"]
    assert min(n_p, n_a) > 1e-3 and abs(n_p - n_a) * (1 - 1e-6) <= g <= (n_p + n_a) * (1 + 1e-6)


@pytest.mark.parametrize("layout", ["padded", "buckets"])
def test_objective_grad_norms_leave_the_update_bit_identical(batch, tmp_path, layout):
    """Off (0) vs every 2nd call, three updates (Adam moments too): the same params bit for bit
    and the same metrics, plus grad_norm_<objective> for each objective on calls 0 and 2 only; a
    negative value is refused. (lr 1e-5: the first test's
    engines, whose compiled programs the cache then holds.)"""
    off = _norms_engine(tmp_path, "off", every=0, layout=layout, lr=1e-5)
    on = _norms_engine(tmp_path, "on", every=2, layout=layout, lr=1e-5)
    for call in range(3):    # every=2: logged on calls 0 and 2, not on call 1
        m_off, m_on = off.train(batch, OBJS), on.train(batch, OBJS)
        extra = {k: m_on.pop(k) for k in ("grad_norm_policy", "grad_norm_aux") if k in m_on}
        m_off.pop("time/update_s"), m_on.pop("time/update_s")
        assert m_on == m_off and all(v > 0 for v in extra.values())
        assert len(extra) == (0 if call == 1 else 2), call
    assert all(np.array_equal(a, b) for a, b in zip(_leaves(off), _leaves(on)))
    assert max(float(np.abs(a - b).max()) for a, b in zip(_leaves(on), jax.tree.leaves(_params()))) > 1e-6
    with pytest.raises(ValueError, match="objective_grad_norms_every must be >= 0"):
        _norms_engine(tmp_path, "neg", every=-1, layout=layout)
