"""Hostile round 13 (issue 74): the survey's statistics and the mathematical core.

(a) The key-bias term (:mod:`companion.survey.bias_term`) with zero, NaN and wrongly shaped
biases, head counts that are not whole, rotary tables of an odd head width, one causal token.
(b) Quantisation round trips of weights whose block scales do not fit a float16, all-zero rows
and odd widths.  (c) The survey design's exact test and its Monte Carlo check with one unit a
side, NaN shifts, levels that are no probability, seeds that are not whole.  (d) The bilinear
form (Eqs. 1-2, S20) with grouped-query heads, the random-matrix null's seed, the appendix's
gradient identities (Prop. 2.2, Eqs. S31-S36) against autograd on edge shapes (d = 1, more
tokens than width), and its helpers on degenerate matrices.  (e) Hub ids that are malformed
or carry '..', a query or a fragment (refused before any request), and zoo entries with a
digest of the wrong length or case, or listed twice.  (f) The compute study's and Table 1's
speed-up numbers with zero, negative or NaN steps, losses and bands.

Each case states the right behaviour: the value computed apart from the code under test (numpy
by hand, autograd, brute-force enumeration), or a one-line refusal naming the input.
"""

from __future__ import annotations

import itertools
import math
import socket

import numpy as np
import pandas as pd
import pytest
import scipy.stats  # noqa: F401  (loaded at collection, not inside the first exact-test case)
import torch

from one_line import one_line as _one_line

REFUSED = ValueError   # CompanionError is a ValueError
RNG = np.random.default_rng(13)


# ============================================================ (a) the key-bias term

def _layer(H=2, kv=None, dh=2, d=4, n=5, seed=0):
    g = np.random.default_rng(seed)
    kv = kv or H
    return (g.standard_normal((H * dh, d)), g.standard_normal((kv * dh, d)), g.standard_normal(H * dh),
            g.standard_normal(kv * dh), g.standard_normal((n, d)))


def _by_hand(Wq, Wk, bq, bk, H, X, kv, causal=False):
    """Per head: mean over queries of the population variance over keys of C and B, numpy loops."""
    dh = Wq.shape[0] // H
    group = H // kv
    out_c, out_b = [], []
    for h in range(H):
        g = h // group
        q0, k0 = X @ Wq[h * dh:(h + 1) * dh].T, X @ Wk[g * dh:(g + 1) * dh].T
        q1, k1 = q0 + bq[h * dh:(h + 1) * dh], k0 + bk[g * dh:(g + 1) * dh]
        C, L = q0 @ k0.T, q1 @ k1.T
        B = L - C
        rows = [i for i in range(len(X)) if not causal or i >= 1]
        keys = (lambda i: range(i + 1)) if causal else (lambda i: range(len(X)))
        out_c.append(np.mean([np.var([C[i, j] for j in keys(i)]) for i in rows]))
        out_b.append(np.mean([np.var([B[i, j] for j in keys(i)]) for i in rows]))
    return np.array(out_c), np.array(out_b)


@pytest.mark.parametrize("H,kv,causal", [(2, None, False), (4, 2, False), (4, 1, True), (1, None, True)])
def test_logit_moments_against_numpy_by_hand(H, kv, causal):
    from companion.survey.bias_term import logit_moments

    Wq, Wk, bq, bk, X = _layer(H, kv)
    m = logit_moments(Wq, Wk, bq, bk, H, X, n_kv_heads=kv, causal=causal)
    c, b = _by_hand(Wq, Wk, bq, bk, H, X, kv or H, causal)
    np.testing.assert_allclose(m["content"], c, rtol=1e-10)
    np.testing.assert_allclose(m["bias"], b, rtol=1e-10)


def test_zero_biases_add_nothing():
    from companion.survey.bias_term import logit_moments, variance_measures

    Wq, Wk, _, _, X = _layer()
    m = logit_moments(Wq, Wk, np.zeros(4), np.zeros(4), 2, X)
    v = variance_measures({k: x.sum() for k, x in m.items()})
    assert (m["bias"] == 0).all() and (m["positional"] == 0).all()
    assert v == {"explained": 0.0, "bias_var_ratio": 0.0, "positional_fraction": 0.0}


@pytest.mark.parametrize("field,value", [
    ("n_heads", 0),          # ZeroDivisionError
    ("n_heads", True),       # read as one head
    ("n_heads", 2.5),
    ("n_kv_heads", 0),       # read as n_heads ('or n_heads')
    ("n_kv_heads", 3),       # does not divide 2
    ("bq", np.zeros(3)),     # a bias of the wrong length
    ("bq", np.full(4, np.nan)),
    ("bk", np.array([0, np.inf, 0, 0])),
    ("X", np.zeros((5, 3))),   # tokens of another width: a raw matmul error
    ("X", np.zeros(4)),        # one token given as a vector
])
def test_bias_term_refuses_bad_inputs_in_one_line(field, value):
    from companion.survey.bias_term import logit_moments

    Wq, Wk, bq, bk, X = _layer()
    args = dict(Wq=Wq, Wk=Wk, bq=bq, bk=bk, n_heads=2, X=X, n_kv_heads=None)
    args[field] = value
    with pytest.raises(REFUSED) as err:
        logit_moments(**args)
    _one_line(err)


def test_bias_term_reads_a_whole_float_head_count_as_that_count():
    from companion.survey.bias_term import logit_moments

    Wq, Wk, bq, bk, X = _layer()
    a, b = logit_moments(Wq, Wk, bq, bk, 2.0, X), logit_moments(Wq, Wk, bq, bk, 2, X)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("what", ["odd head width", "table of another length"])
def test_rotary_tables_that_cannot_rotate_are_refused(what):
    """Half-split rotation pairs coordinate i with i + d_h/2: an odd d_h has no such pairing (the
    code rotated 3-wide heads silently with a 'rotation' that is not one)."""
    from companion.survey.bias_term import logit_moments

    if what == "odd head width":
        Wq, Wk, bq, bk, X = _layer(H=1, dh=3)
        rope = (np.ones((5, 3)), np.zeros((5, 3)))
    else:
        Wq, Wk, bq, bk, X = _layer()
        rope = (np.ones((6, 2)), np.zeros((6, 2)))
    with pytest.raises(REFUSED, match="rope|rotary") as err:
        logit_moments(Wq, Wk, bq, bk, Wq.shape[0] // (3 if what == "odd head width" else 2), X, rope=rope)
    _one_line(err)


def test_a_causal_sequence_of_one_token_is_refused():
    """No query of a one-token causal sequence sees two keys: the moments were a NaN mean of nothing."""
    from companion.survey.bias_term import logit_moments

    Wq, Wk, bq, bk, X = _layer()
    with pytest.raises(REFUSED, match="token") as err:
        logit_moments(Wq, Wk, bq, bk, 2, X[:1], causal=True)
    _one_line(err)


def test_variance_measures_of_a_flat_head_are_nan_not_a_crash():
    """Logits that do not vary over keys: the shares are undefined (0/0), NaN; a ZeroDivisionError
    was raised on Python floats."""
    from companion.survey.bias_term import variance_measures

    v = variance_measures({"content": 0.0, "bias": 0.0, "logits": 0.0, "positional": 0.0})
    assert math.isnan(v["explained"]) and math.isnan(v["bias_var_ratio"])
    assert v["positional_fraction"] == 0.0


# ============================================================ (b) quantisation

@pytest.mark.parametrize("scheme,scale", [("Q8_0", 1e7), ("Q5_0", 1e7), ("Q4_0", 1e7), ("Q4_1", 3e5)])
@pytest.mark.parametrize("weights", ["constant", "random"])
def test_weights_beyond_a_float16_scale_are_refused_not_read_back_as_inf(scheme, scale, weights):
    """A block's scale is stored as float16 (largest 65504): constant weights near 1e7 came back as
    inf, silently (Q4_1's minimum overflows from 3e5 on); random ones were refused as a gguf
    version mismatch ('pin the gguf version'), which is not the cause."""
    from companion.survey.quantisation import round_trip

    W = (np.full((2, 64), -scale) if weights == "constant" else RNG.standard_normal((2, 64)) * scale)
    with pytest.raises(REFUSED, match=f"{scheme}.*float16") as err:
        round_trip(W.astype(np.float32), scheme)
    _one_line(err)


def test_all_zero_rows_and_odd_widths():
    from companion.survey.quantisation import int8_per_channel, round_trip

    assert (round_trip(np.zeros((2, 256)), "Q4_K")[0] == 0).all()
    assert (round_trip(np.zeros((3, 32)), "Q8_0")[0] == 0).all()
    W = np.array([[0, 0, 0, 0, 0, 0, 0], [1, -2, 3, 0.5, 0, 0, 7]], dtype=np.float32)
    codes, scale, values = int8_per_channel(W)
    amax = np.abs(W).max(axis=1)
    want_scale = np.where(amax > 0, amax / 127, 1.0)
    np.testing.assert_allclose(scale, want_scale)
    np.testing.assert_array_equal(codes, np.clip(np.round(W / want_scale[:, None]), -127, 127))
    with pytest.raises(REFUSED, match="32") as err:
        round_trip(W, "Q8_0")
    _one_line(err)


# ============================================================ (c) the survey design

def _brute_p_greater(n_enc, n_dec):
    """P(U >= u) under the null by enumerating every placement of the encoders among the ranks."""
    N = n_enc + n_dec
    counts = np.zeros(n_enc * n_dec + 1)
    for enc in itertools.combinations(range(N), n_enc):
        dec = [r for r in range(N) if r not in enc]
        counts[sum(e > d for e in enc for d in dec)] += 1
    return counts[::-1].cumsum()[::-1] / counts.sum()


@pytest.mark.parametrize("n_enc,n_dec", [(1, 1), (2, 3), (1, 4), (3, 3)])
def test_exact_p_against_enumeration(n_enc, n_dec):
    from companion.survey.design import exact_p

    greater, less = exact_p(n_enc, n_dec)
    want = _brute_p_greater(n_enc, n_dec)
    np.testing.assert_allclose(greater, want, atol=1e-12)
    np.testing.assert_allclose(less, want[::-1], atol=1e-12)   # U -> n_enc n_dec - U by symmetry


def test_design_check_one_unit_a_side_can_never_decide():
    from companion.survey.design import design_check

    row = design_check(1, 1, 0.05, [0.0, 3.0], draws=200, seed=1).iloc[1]
    assert row["min_p"] == 0.5 and row["size"] == 0.0
    assert row["p_holds"] == 0.0 and row["p_refuted"] == 0.0 and row["p_inconclusive"] == 1.0


@pytest.mark.parametrize("kw", [
    {"shifts": [float("nan")]},          # every draw read as 'inconclusive'
    {"alpha_one_sided": float("nan")},   # the same
    {"alpha_one_sided": 2.0},            # every draw read as 'holds'
    {"seed": 1.5}, {"seed": "7"},        # raw TypeError from SeedSequence
    {"n_enc": 2.5}, {"draws": 10.5},     # raw TypeError
    {"shifts": [0.5, 0.5]},              # two shifts, one row
])
def test_design_check_refuses_inputs_it_would_misread(kw):
    from companion.survey.design import design_check

    args = dict(n_enc=3, n_dec=3, alpha_one_sided=0.05, shifts=[0.0], draws=50, seed=0)
    args.update(kw)
    with pytest.raises(REFUSED) as err:
        design_check(**args)
    _one_line(err)


# ============================================================ (d) the bilinear form, the null, the appendix

@pytest.mark.parametrize("H,kv,dh,d", [(6, 2, 1, 3), (6, 3, 2, 1), (4, 1, 3, 2), (2, 2, 1, 5)])
@pytest.mark.parametrize("pairing", ["grouped", "modulo"])
def test_grouped_query_forms_against_hand_sums(H, kv, dh, d, pairing):
    from companion.core.bilinear import bilinear_form, layer_factors, per_head_bilinear_forms

    g = np.random.default_rng(H * 10 + kv)
    Wq, Wk = g.standard_normal((H * dh, d)), g.standard_normal((kv * dh, d))
    key = (lambda h: h // (H // kv)) if pairing == "grouped" else (lambda h: h % kv)
    per = [Wq[h * dh:(h + 1) * dh].T @ Wk[key(h) * dh:(key(h) + 1) * dh] for h in range(H)]
    np.testing.assert_allclose(per_head_bilinear_forms(Wq, Wk, H, kv, pairing).numpy(), np.stack(per), atol=1e-12)
    np.testing.assert_allclose(bilinear_form(Wq, Wk, H, kv, pairing).numpy(), sum(per), atol=1e-12)
    A, B = layer_factors(Wq, Wk, H, kv, pairing)
    np.testing.assert_allclose((A.T @ B.double()).numpy(), sum(per), atol=1e-12)


@pytest.mark.parametrize("Wq,Wk,H,kv", [
    (np.ones((6, 4)), np.ones((4, 4)), 3, 2),      # 3 query heads over 2 key heads
    (np.ones((4, 6)), np.ones((4, 4)), 2, None),   # heads given along the input axis
    (np.ones((2, 0)), np.ones((2, 0)), 1, None),   # no input width: a raw reshape error
])
def test_bilinear_form_refuses_shapes_that_do_not_split(Wq, Wk, H, kv):
    from companion.core.bilinear import bilinear_form

    with pytest.raises(REFUSED) as err:
        bilinear_form(Wq, Wk, H, kv)
    _one_line(err)


@pytest.mark.parametrize("seed", [1.5, "1", True, float("nan")])
def test_null_seed_that_is_not_whole_is_refused(seed):
    """torch's manual_seed raised a raw RuntimeError ('expected a long')."""
    from companion.core.null import null_scores, random_bilinear_forms

    with pytest.raises(REFUSED, match="seed") as err:
        null_scores(3, 2, seed=seed, device="cpu", shipped=False)
    _one_line(err)
    with pytest.raises(REFUSED, match="seed"):
        random_bilinear_forms(3, 2, seed=seed, device="cpu")


def test_null_whole_float_seed_draws_what_its_int_draws():
    from companion.core.null import null_scores

    a = null_scores(3, 4, seed=2.0, device="cpu", shipped=False)
    b = null_scores(3, 4, seed=2, device="cpu", shipped=False)
    np.testing.assert_array_equal(a["symmetry"].to_numpy(), b["symmetry"].to_numpy())


@pytest.mark.parametrize("N,d", [(1, 1), (5, 1), (7, 3), (2, 6)])
@pytest.mark.parametrize("softmax", [False, True])
def test_beta_update_matches_autograd(N, d, softmax):
    """Prop. 2.2: dL/dM = sum_ij beta_ij x_i x_j^T, with beta_ij = delta_i^T x_j (no softmax,
    Eq. S33) or the softmax-centred coefficient; the values are the tokens themselves."""
    from companion.core.theory import proof_beta_linear, softmax_beta, update_from_beta

    g = torch.Generator().manual_seed(N * 7 + d)
    X = torch.randn(N, d, generator=g, dtype=torch.float64)
    M = torch.randn(d, d, generator=g, dtype=torch.float64, requires_grad=True)
    delta = torch.randn(N, d, generator=g, dtype=torch.float64)   # dL/d(output_i)
    a = X @ M @ X.T
    alpha = torch.softmax(a, dim=-1) if softmax else a
    (delta * (alpha @ X)).sum().backward()
    beta = softmax_beta(delta, X, alpha.detach()) if softmax else proof_beta_linear(delta, X)
    np.testing.assert_allclose(update_from_beta(X, beta).numpy(), M.grad.numpy(), atol=1e-10)


def test_norm_spread_of_rows_of_equal_norm_has_no_outlier():
    """Three equal rows: no spread, so the largest row is 0 standard deviations above the mean; the
    code divided rounding noise by rounding noise and reported -0.82."""
    from companion.core.theory import norm_spread

    s = norm_spread(np.ones((3, 3)))
    assert s == {"row_var": 0.0, "col_var": 0.0, "row_max_z": 0.0, "col_max_z": 0.0}
    M = np.array([[3.0, 0, 0], [0, 1, 0], [0, 0, 1]])
    r = np.linalg.norm(M, axis=1)
    assert norm_spread(M)["row_max_z"] == pytest.approx((r.max() - r.mean()) / r.std(ddof=1))


@pytest.mark.parametrize("call,names", [("eq15 of zero", "zero"), ("norm_spread of one row", "row"),
                                        ("mc seed", "seed"), ("mc beta 2-D", "beta"), ("mc beta nan", "beta"),
                                        ("pair shapes", "beta"), ("update shapes", "beta")])
def test_theory_helpers_refuse_degenerate_inputs_in_one_line(call, names):
    from companion.core import theory as th

    calls = {
        "eq15 of zero": lambda: th.eq15_score(np.zeros((3, 3))),              # 0/0 -> nan
        "norm_spread of one row": lambda: th.norm_spread(np.ones((1, 3))),    # ddof=1 of one value
        "mc seed": lambda: th.norm_ratio_monte_carlo(np.eye(2), [1.0], "context", 10, seed=1.5),
        "mc beta 2-D": lambda: th.norm_ratio_monte_carlo(np.eye(2), [[1.0]], "context", 10),
        "mc beta nan": lambda: th.norm_ratio_monte_carlo(np.eye(2), [np.nan], "context", 10),
        "pair shapes": lambda: th.pair_decomposition(np.ones((3, 2)), np.ones((4, 4))),
        "update shapes": lambda: th.update_from_beta(np.ones((3, 2)), np.ones((4, 4))),
    }
    with pytest.raises(REFUSED, match=names) as err:   # numpy's own broadcast messages name no input
        calls[call]()
    _one_line(err)


@pytest.mark.parametrize("N,d", [(1, 1), (4, 1), (5, 2)])
def test_pair_decomposition_adds_up(N, d):
    from companion.core.theory import pair_decomposition

    g = np.random.default_rng(N + d)
    X, B = g.standard_normal((N, d)), g.standard_normal((N, N))
    p = pair_decomposition(X, B)
    total = sum(B[i, j] * np.outer(X[i], X[j]) for i in range(N) for j in range(N))
    np.testing.assert_allclose(p["diagonal"] + p["symmetric"] + p["skew"], total, atol=1e-12)
    np.testing.assert_allclose(p["symmetric"], p["symmetric"].T, atol=1e-12)
    np.testing.assert_allclose(p["skew"], -p["skew"].T, atol=1e-12)


# ============================================================ (e) hub ids and the zoo registry

@pytest.mark.parametrize("repo_id", ["owner/..", "owner/na..me", "evil.com?x=1/y", "owner/name#frag", "-owner/name",
                                     "owner/name.git", "owner/" + "x" * 120, "owner/na--me", "owner/name%2f..",
                                     "a b/c", "owner/name\n"])
def test_malformed_hub_ids_are_refused_before_any_request(repo_id, monkeypatch):
    from companion.adapters import hub

    def no_network(*a, **k):
        raise AssertionError("the network was touched")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    for call in (lambda: hub.HubSafetensorsSource(repo_id), lambda: hub.probe_hub(repo_id)):
        with pytest.raises(REFUSED, match="hub id") as err:
            call()
        _one_line(err)


def _zoo_model(**kw):
    from companion.zoo.entries import ZooModel

    base = dict(name="x", model="m", role="encoder", modality="text", reader="safetensors", licence="l",
                assembly="installed", parts=(), sha256="a" * 64, size=1, main="f")
    return ZooModel(**{**base, **kw})


@pytest.mark.parametrize("sha", ["abc", "a" * 63, "g" * 64, "a" * 65, ""])
def test_zoo_digest_of_the_wrong_form_is_refused(sha):
    from companion.zoo.entries import Part

    with pytest.raises(REFUSED, match="sha256") as err:
        _zoo_model(sha256=sha)
    _one_line(err)
    with pytest.raises(REFUSED, match="sha256"):
        Part("dist", "1.0", "p", 1, sha)


def test_zoo_digest_in_capitals_is_compared_as_the_same_digest():
    """hashlib's hexdigest is lower case: a pin in capitals never matched, and its refusal named
    two 'different' digests that are one."""
    from companion.zoo.entries import Part

    digest = "ab" * 32
    assert _zoo_model(sha256=digest.upper()).sha256 == digest
    assert Part("dist", "1.0", "p", 1, digest.upper()).sha256 == digest


def test_a_zoo_entry_listed_twice_is_refused():
    from companion.zoo.registry import by_name

    with pytest.raises(REFUSED, match="twice") as err:
        by_name([_zoo_model(name="m"), _zoo_model(name="n"), _zoo_model(name="m", size=2)])
    _one_line(err)
    assert list(by_name([_zoo_model(name="m"), _zoo_model(name="n")])) == ["m", "n"]


# ============================================================ (f) speed-ups and the compute study

@pytest.mark.parametrize("sb,lb,sc,lc", [
    ([0, 0], [1, 1], [0, 0], [1, 1]),                        # runs of 0 steps: 0/0 read as 'never reached'
    ([-10, -5], [2, 1], [-10, -5], [0.5, 0.5]),              # negative steps: a speed-up of -1
    ([1, 2, 3], [3, 2, np.nan], [1, 2, 3], [3, 2, 1]),       # NaN final loss: read as 'never reached'
    ([1, 2, 3], [3, 2, 1], [1, 2, 3], [-np.inf, 2, 1]),      # an infinite loss
    ([1, np.nan, 3], [3, 2, 1], [1, 2, 3], [3, 2, 1]),       # a NaN step: 'runs of different length'
])
def test_speedup_refuses_steps_and_losses_it_cannot_read(sb, lb, sc, lc):
    from companion.train.studies.speedup import speedup

    with pytest.raises(REFUSED, match="finite|positive") as err:
        speedup(sb, lb, sc, lc, window=1)
    _one_line(err)


def test_speedup_with_a_nan_inside_the_window_is_refused_not_skipped():
    """pandas' rolling mean skipped the NaN: the target became the mean of the two losses before it."""
    from companion.train.studies.speedup import speedup

    with pytest.raises(REFUSED, match="NaN|finite") as err:
        speedup([1, 2, 3], [3, 2, np.nan], [1, 2, 3], [3, 2, 2.4], window=3)
    _one_line(err)


def test_speedup_by_hand():
    from companion.train.studies.speedup import speedup

    # baseline ends at 1.0 (window 1); the candidate first reaches it at step 20 of 40
    assert speedup([10, 20, 30, 40], [4, 3, 2, 1], [10, 20, 30, 40], [3, 1, 0.8, 0.7], window=1) == 1 - 20 / 40


def _curve(values, steps=(0, 1, 2)):
    return pd.DataFrame({"quantity": "symmetry", "head": -1, "step": list(steps), "value": values})


@pytest.mark.parametrize("enc,band", [([0.5, 0.6, 0.7], float("nan")),   # every gap read as 'inside the band'
                                      ([0.5, np.nan, 0.7], 0.1),          # a NaN step read as below the band
                                      ([0.5, 0.6, np.nan], 0.1)])
def test_gap_exit_refuses_a_nan_band_or_gap(enc, band):
    from companion.train.studies.compute_study import gap_exit

    with pytest.raises(REFUSED) as err:
        gap_exit(_curve(enc), _curve([0.0, 0.0, 0.0]), band)
    _one_line(err)


def test_gap_exit_by_hand():
    from companion.train.studies.compute_study import gap_exit

    res = gap_exit(_curve([0.5, 0.05, 0.3, 0.4], (0, 10, 20, 30)), _curve([0.0] * 4, (0, 10, 20, 30)), 0.1)
    assert res["step"] == 20.0 and res["final_gap"] == 0.4


def test_projection_leaves_out_a_gap_out_of_the_band_from_the_start():
    """A gap above its band at step 0 left it after 0 tokens: log(0) turned the whole fit into NaN
    while 'points' still counted it."""
    from companion.train.studies.compute_study import project_exit_tokens

    t = pd.DataFrame({"width": [64, 128, 256], "sym_exit_tokens": [0.0, 1e5, 4e5]},
                     index=["width64", "base", "width256"])
    out = project_exit_tokens(t, widths=(512,))
    b = math.log(4e5 / 1e5) / math.log(256 / 128)
    assert out["points"].iloc[0] == 2
    assert out["exponent"].iloc[0] == pytest.approx(b)
    assert out["projected_tokens"].iloc[0] == pytest.approx(1e5 * (512 / 128) ** b)


@pytest.mark.parametrize("call", ["threads -2", "batch -2", "layers 2.5", "seed 0.5"])
def test_compute_study_refuses_counts_that_are_not_positive_whole_numbers(call):
    from companion.train.studies import compute_study as cs

    hist = pd.DataFrame({"quantity": ["symmetry", "directionality", "eval_loss"], "head": -1,
                         "step": [10, 10, 10], "value": [0.1, 0.1, 2.0]})
    cfg = {"mode": "encoder", "batch_size": 2, "seq_len": 4, "lr": 1e-3}
    calls = {
        # a negative thread count gave -4 tokens per CPU-second
        "threads -2": lambda: cs.run_summary(hist, {"config": cfg, "model_size": {}, "duration_s": 10,
                                                    "hardware": {"torch_threads": -2}}),
        "batch -2": lambda: cs.tokens_per_step({"batch_size": -2, "seq_len": 4}),
        "layers 2.5": lambda: cs.gap_null_band(4, 2.5, n_samples=10),
        "seed 0.5": lambda: cs.gap_null_band(4, 2, n_samples=10, seed=0.5),
    }
    with pytest.raises(REFUSED) as err:
        calls[call]()
    _one_line(err)


# ============================================================ (g) cached tables, sources, the catalog, the zoo walk

def _within(call, tmp_fifos, seconds=3.0):
    """Run ``call`` in a thread; if it is still blocked after ``seconds``, open each FIFO for writing
    (which lets a blocked reader see the end) and fail."""
    import os
    import threading

    out = {}

    def run():
        try:
            out["value"] = call()
        except Exception as exc:   # noqa: BLE001 - handed back to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        for f in tmp_fifos:
            try:
                os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        t.join(2)
        pytest.fail("the read blocked on a FIFO")
    return out


@pytest.mark.parametrize("which", ["table", "checksum"])
def test_a_cached_survey_table_that_is_a_fifo_is_refused_without_blocking(tmp_path, which):
    import json
    import os

    from companion.survey import table_cache as tc

    table, side = tmp_path / "scores.csv", tmp_path / "scores.csv.sha256.json"
    fifo = table if which == "table" else side
    os.mkfifo(fifo)
    if which == "table":
        side.write_text(json.dumps({"format": tc.CACHE_FORMAT, "sha256": "0" * 64, "rows": 0, "columns": []}))
    else:
        table.write_text("key\n")
    out = _within(lambda: tc.cache_problem(table), [fifo])
    assert "FIFO" in out.get("value", ""), out
    out = _within(lambda: tc.load_survey(table), [fifo])
    assert isinstance(out.get("error"), REFUSED) and "FIFO" in _one_line(out["error"])


def test_fingerprint_of_a_fifo_is_none_not_a_crash(tmp_path):
    import os

    from companion.survey.sources import _fingerprint

    os.mkfifo(tmp_path / "w.bin")
    out = _within(lambda: _fingerprint(str(tmp_path / "w.bin")), [tmp_path / "w.bin"])
    assert out == {"value": None}


def test_a_survey_key_never_reaches_outside_the_local_folder(tmp_path):
    """'../secret' found the folder beside --local-dir and scored it under this key."""
    from companion.survey.sources import Unavailable, resolve_source

    (tmp_path / "inner").mkdir()
    (tmp_path / "secret").mkdir()
    with pytest.raises(Unavailable):
        resolve_source({"key": "../secret", "hub_id": "owner/name", "local": ""}, local_dir=tmp_path / "inner",
                       online=False)


def test_a_survey_entry_with_a_malformed_hub_id_is_unavailable_not_a_hub_source():
    from companion.survey.sources import Unavailable, resolve_source

    with pytest.raises(Unavailable, match="hub id") as err:
        resolve_source({"key": "k", "hub_id": "owner/..", "local": ""}, online=True)
    _one_line(err)


@pytest.mark.parametrize("text", ["gqa 4/0", "mha 0/0"])
def test_attention_of_no_heads_is_refused(text):
    """'gqa 4/0' raised ZeroDivisionError; 'mha 0/0' was read as (0, 0)."""
    from companion.zoo.catalog import parse_attention

    with pytest.raises(REFUSED, match="attention") as err:
        parse_attention(text)
    _one_line(err)


def test_score_zoo_of_an_unknown_name_is_one_line():
    from companion.survey.zoo_walk import score_zoo

    with pytest.raises(REFUSED, match="not-a-model") as err:   # a raw KeyError
        score_zoo(["not-a-model"], catalog=pd.DataFrame({"key": [], "n_params": []}))
    _one_line(err)


def test_unit_values_refuse_a_counted_member_without_a_number():
    from companion.survey.design import unit_values

    table = pd.DataFrame({"side": ["encoder", "encoder"], "unit": ["u", "u"], "member": ["a", "b"]})
    assert unit_values(table, {"a": 0.2, "b": 0.4})["encoder"]["u"] == pytest.approx(0.3)
    with pytest.raises(REFUSED, match="b") as err:   # the unit's value was NaN, silently
        unit_values(table, {"a": 0.2, "b": float("nan")})
    _one_line(err)


@pytest.mark.parametrize("a,b,want", [(np.zeros(3), np.zeros(3), 0.0), (np.zeros(3), np.ones(3), math.inf),
                                      (np.ones(4), np.ones(4) * 1.5, 0.5)])
def test_relative_change_of_a_zero_weight(a, b, want):
    """A zero weight read back as zero changed by 0, not NaN (0/0 with a RuntimeWarning)."""
    import warnings

    from companion.survey.quantisation import _relative_error

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _relative_error(a, b) == want


@pytest.mark.parametrize("args", [(True, 2.0), (0.1, np.bool_(True))])
def test_directionality_sentence_refuses_a_bool(args):
    from companion.survey.quantisation import directionality_sentence

    with pytest.raises(REFUSED) as err:   # True was read as a change of 1.000
        directionality_sentence(*args)
    _one_line(err)


@pytest.mark.parametrize("kw", [{"n_heads": True}, {"n_heads": 2.0}, {"d": 2.5}, {"vocab_size": 1.5},
                                {"max_len": 0}])
def test_tiny_model_refuses_sizes_that_are_not_whole(kw):
    """n_heads=True built one head; 2.0 and d=2.5 raised raw torch errors at the first pass."""
    from companion.core.tiny_attention import TinyAttentionModel

    with pytest.raises(REFUSED) as err:
        TinyAttentionModel(**{"vocab_size": 10, "d": 4, **kw})
    _one_line(err)


def test_tiny_model_refuses_a_token_outside_its_vocabulary():
    from companion.core.tiny_attention import TinyAttentionModel

    with pytest.raises(REFUSED, match="12") as err:   # a raw IndexError
        TinyAttentionModel(10, d=4)(torch.full((1, 3), 12))
    _one_line(err)


# ============================================================ (h) more of the studies' numbers and the catalog

@pytest.mark.parametrize("values", [[np.inf, 0.1, 0.2], [1.5, 0.1, np.nan]])
def test_censored_median_refuses_a_speedup_above_one(values):
    """1 - t*/T is at most 1: +inf was ranked as the best seed and printed 'interval 0.10 to inf'."""
    from companion.train.studies.speedup import censored_median_speedup

    with pytest.raises(REFUSED, match="at most 1") as err:
        censored_median_speedup(values)
    _one_line(err)


def test_paired_interval_refuses_a_level_of_one():
    from companion.train.studies.speedup import paired_difference_interval

    diff = pd.DataFrame({"step": [1, 1], "difference": [0.1, 0.3]})
    with pytest.raises(REFUSED, match="level") as err:   # the interval was -inf to +inf
        paired_difference_interval(diff, level=1.0)
    _one_line(err)
    row = paired_difference_interval(diff, level=0.9).iloc[0]
    from scipy import stats

    half = stats.t.ppf(0.95, 1) * np.std([0.1, 0.3], ddof=1) / math.sqrt(2)
    assert (row["low"], row["high"]) == pytest.approx((0.2 - half, 0.2 + half))


@pytest.mark.parametrize("kw", [{"tokens": 1.5e6}, {"evals": 0}, {"tokens": True}])
def test_variant_args_refuse_budgets_that_are_not_whole(kw):
    from companion.train.studies.compute_study import variant_args

    with pytest.raises(REFUSED) as err:   # '--steps 1464.0'; ZeroDivisionError for evals=0
        variant_args("base", **kw)
    _one_line(err)


def test_variant_args_by_hand():
    from companion.train.studies.compute_study import STUDY_BASE, variant_args

    steps = 10**6 // (STUDY_BASE["batch_size"] * 32)
    args = variant_args("seq32", 10**6, evals=10)
    assert args[args.index("--steps") + 1] == str(steps)
    assert args[args.index("--eval-every") + 1] == str(steps // 10)
    assert args[args.index("--seq-len") + 1] == "32"


@pytest.mark.parametrize("hub_id", ["owner/na..me", "owner/name.", "owner/name.git"])
def test_catalog_refuses_a_hub_id_the_hub_reader_refuses(hub_id):
    """The catalog took ids the hub reader refuses: the entry failed only when the survey scored it."""
    from companion.zoo.catalog import load_catalog, validate_catalog

    cat = load_catalog()
    cat.loc[0, "hub_id"] = hub_id
    with pytest.raises(REFUSED, match="hub_id"):
        validate_catalog(cat)


def test_a_blank_cache_setting_is_unset(monkeypatch):
    from companion.zoo.packages import cache_dir

    monkeypatch.delenv("COMPANION_CACHE", raising=False)
    default = cache_dir()
    monkeypatch.setenv("COMPANION_CACHE", "   ")   # was a folder of three spaces in the current directory
    assert cache_dir() == default


@pytest.mark.parametrize("hub_id", ["owner/name", "name", "a/b.c_d-e", "_x/y_", "owner/..", "owner/na..me", "o/n--m",
                                    "owner/name.", ".owner/name", "owner/name.git", "a/b/c", "owner/" + "x" * 96,
                                    "owner/" + "x" * 97, "a b/c", "", "owner/"])
def test_the_catalog_and_the_hub_reader_apply_one_hub_id_rule(hub_id):
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    from companion.adapters.hub import check_hub_id
    from companion.base.errors import CompanionError
    from companion.zoo.catalog import is_hub_id

    try:
        validate_repo_id(hub_id)
        hub_says = True
    except HFValidationError:
        hub_says = False
    try:
        check_hub_id(hub_id)
        reader_says = True
    except CompanionError:
        reader_says = False
    assert is_hub_id(hub_id) == reader_says == hub_says


@pytest.mark.parametrize("revision", ["..", "."])
def test_a_revision_of_dots_is_refused_before_any_request(revision, monkeypatch):
    """quote('..', safe='') is '..': the probe asked /api/models/owner/name/revision/.., the model's own page."""
    from companion.adapters import hub

    asked = []
    monkeypatch.setattr(hub, "_http_get", lambda url, *a, **k: asked.append(url) or (b"{}", {}))
    with pytest.raises(REFUSED, match="revision") as err:
        hub.probe_hub("owner/name", revision=revision)
    _one_line(err)
    assert asked == []


@pytest.mark.parametrize("sha", ["..", ".", "abc/../x"])
def test_a_commit_from_the_hub_that_is_not_a_commit_is_refused(sha, monkeypatch):
    """The commit the hub names goes into every later URL: '..' made /resolve/../config.json another file."""
    import json

    from companion.adapters import hub

    asked = []

    def get(url, start=None, nbytes=None, timeout=None):
        asked.append(url)
        if "/api/models/" in url:
            return json.dumps({"sha": sha, "siblings": [{"rfilename": "model.safetensors"}]}).encode(), {}
        return json.dumps({"model_type": "llama"}).encode(), {}

    monkeypatch.setattr(hub, "_http_get", get)
    with pytest.raises(REFUSED, match="malformed") as err:
        hub.HubSafetensorsSource("owner/name")
    _one_line(err)
    assert len(asked) == 1   # the probe only


@pytest.mark.parametrize("source", ["owner/..", "evil.com?x=1/y", "owner/name#frag"])
def test_the_score_command_refuses_a_malformed_hub_id_in_one_line(source, capsys, monkeypatch):
    from one_line import one_line_error

    from companion.adapters import hub

    def no_network(*a, **k):
        raise AssertionError("the network was touched")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(hub, "_hub_offline", lambda: False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    one_line_error(["score", source, "--quiet"], capsys, "not a hub id")
