"""The survey of real checkpoints and the mathematics it stands on, under hostile and edge-case
input, beyond tests/test_hostile_round13_survey_core.py and the round 14 survey and core files.

(a) The two scores against their definitions written out in numpy (symmetric, skew, rank-one,
dominant-column and random matrices, both directionality variants, several thresholds), the
factored route against the formed one.  (b) The random-matrix null: the draws against the
same draws scored in numpy, the exact law of the symmetry score against the draws, the
summary's quantiles given as one number or outside [0, 1].  (c) Rotary embeddings against
the complex-number rotation of the half-split pairs.  (d) The survey's summaries over the right set of
layers: a cross-attention layer in a scores table (numbered apart from or alike the decoder's
self-attention layers), a layer or a model without a component, key or pairing.  (e) The
appendix helpers at the edges of float64 (a width of 1e160 tokens, a covariance of 1e308,
norms of 1e-200 and 1e200), where a scale-free quantity must not turn NaN or zero.  (f) The
quantisation study's error against the original weight, the tiny model's seed.

Each case states the right behaviour: a value computed apart from the code under test, or a
one-line refusal naming the input.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats  # noqa: F401  (loaded at collection, not inside the law's case)
import torch

from one_line import one_line as _one_line
from one_line import refused as _refused



# ----------------------------------------------------------------- the definitions, in numpy

def _sym(M):
    """Def. 3.1 from the split M = M_s + M_n (not the trace form the package uses)."""
    M = np.asarray(M, dtype=np.float64)
    Ms, Mn = (M + M.T) / 2, (M - M.T) / 2
    return float(((Ms ** 2).sum() - (Mn ** 2).sum()) / (M ** 2).sum())


def _mass(norms, gamma, variant):
    tau = norms.mean() + gamma * norms.std(ddof=1)
    out = norms - tau > 1e-12 * norms.max()
    return float((norms - tau)[out].sum() if variant == "excess" else norms[out].sum())


def _dir(M, gamma=2.0, variant="excess"):
    """Def. 3.2 (Eqs. 17-19): outlier masses of the row and column norms above mean + gamma sd."""
    M = np.asarray(M, dtype=np.float64)
    R = _mass(np.sqrt((M ** 2).sum(axis=1)), gamma, variant)
    C = _mass(np.sqrt((M ** 2).sum(axis=0)), gamma, variant)
    return 0.0 if R + C == 0 else (R - C) / (R + C)


# ============================================================ (a) the scores

def test_a_symmetric_matrix_scores_one_and_a_skew_one_minus_one():
    from companion.core.scores import symmetry_score

    A = np.random.default_rng(1).standard_normal((7, 7))
    assert symmetry_score(A + A.T) == pytest.approx(1.0, abs=1e-15)
    assert symmetry_score(A - A.T) == pytest.approx(-1.0, abs=1e-15)
    assert _sym(A + A.T) == pytest.approx(1.0) and _sym(A - A.T) == pytest.approx(-1.0)


def test_a_rank_one_form_scores_its_squared_cosine_dense_and_factored():
    """s(u v^T) = tr(u v^T u v^T) / (|u|^2 |v|^2) = (u.v)^2 / (|u|^2 |v|^2)."""
    from companion.core.scores import symmetry_score, symmetry_score_factored

    g = np.random.default_rng(2)
    for _ in range(5):
        u, v = g.standard_normal(9), g.standard_normal(9)
        want = (u @ v) ** 2 / ((u @ u) * (v @ v))
        assert symmetry_score(np.outer(u, v)) == pytest.approx(want, rel=1e-12)
        assert symmetry_score_factored(u[None], v[None]) == pytest.approx(want, rel=1e-12)


def test_one_dominant_column_is_column_dominance_of_minus_one_and_its_transpose_plus_one():
    from companion.core.scores import directionality_score

    M = np.full((16, 16), 0.01)
    M[:, 3] = 10.0          # every row keeps one norm; column 3 stands out
    assert _dir(M) == -1.0 and _dir(M.T) == 1.0
    assert directionality_score(M) == -1.0 and directionality_score(M.T) == 1.0


@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("variant", ["excess", "eq18"])
def test_directionality_of_random_matrices_with_planted_outliers_matches_the_definition(gamma, variant):
    from companion.core.scores import directionality_score, directionality_score_factored

    g = np.random.default_rng(int(gamma * 10) + len(variant))
    for trial in range(6):
        M = g.standard_normal((12, 12))
        M[:, trial % 12] *= 1 + trial          # a heavier column ...
        M[(5 * trial) % 12, :] *= 1 + trial / 2  # ... and a heavier row
        assert directionality_score(M, gamma=gamma, variant=variant) == pytest.approx(
            _dir(M, gamma, variant), abs=1e-12)
        q, k = g.standard_normal((4, 12)), g.standard_normal((4, 12))
        assert directionality_score_factored(q, k, gamma=gamma, variant=variant) == pytest.approx(
            _dir(q.T @ k, gamma, variant), abs=1e-10)


def test_symmetry_of_random_matrices_matches_the_split_definition():
    from companion.core.scores import symmetry_score

    g = np.random.default_rng(4)
    stack = g.standard_normal((5, 6, 6))
    got = symmetry_score(stack)
    assert np.allclose(got, [_sym(m) for m in stack], rtol=0, atol=1e-14)


# ============================================================ (b) the null

def test_null_draws_are_the_random_forms_scored_by_the_definitions():
    """null_scores scores the matrices random_bilinear_forms draws with the same seed (i.i.d. and
    rank r, one batch): each symmetry and directionality equals the numpy definitions of them."""
    from companion.core.null import null_scores, random_bilinear_forms

    for rank in (None, 3):
        t = null_scores(10, n_samples=6, rank=rank, seed=7, device="cpu", shipped=False)
        forms = random_bilinear_forms(10, 6, rank=rank, seed=7, device="cpu").numpy()
        assert list(t["rank"].unique()) == [-1 if rank is None else rank] and list(t["d"].unique()) == [10]
        assert np.allclose(t["symmetry"], [_sym(m) for m in forms], atol=1e-12)
        assert np.allclose(t["directionality"], [_dir(m) for m in forms], atol=1e-12)


def test_the_symmetry_law_is_that_of_the_drawn_iid_scores():
    """symmetry_null_law(d) against 300 draws of d x d Gaussian matrices scored in numpy, and its
    mean 1/d and variance 2 (d^2 - 1) / (d^2 (d^2 + 2)) against the Beta moments computed apart."""
    from scipy import stats

    from companion.core.null import random_bilinear_forms, symmetry_null_law

    d = 6
    draws = [_sym(m) for m in random_bilinear_forms(d, 300, seed=11, device="cpu").numpy()]
    law = symmetry_null_law(d)
    assert stats.kstest(draws, law.cdf).pvalue > 1e-3
    assert stats.kstest(draws, symmetry_null_law(3).cdf).pvalue < 1e-3   # the check can fail
    assert law.mean() == pytest.approx(1 / d) and law.var() == pytest.approx(2 * (d * d - 1) / (d * d * (d * d + 2)))


def test_the_null_summary_reads_one_quantile_given_as_a_number():
    from companion.core.null import null_scores, null_summary

    t = null_scores(8, n_samples=9, seed=3, device="cpu", shipped=False)
    s = null_summary(t, quantiles=0.5).set_index("score")
    assert s.at["symmetry", "q0.5"] == pytest.approx(float(np.median(t["symmetry"])))


@pytest.mark.parametrize("quantiles", [(1.5,), (-0.1, 0.5), (float("nan"),), ("0.5",)])
def test_the_null_summary_refuses_a_quantile_outside_zero_one_naming_it(quantiles):
    from companion.core.null import null_scores, null_summary

    t = null_scores(8, n_samples=4, seed=3, device="cpu", shipped=False)
    _refused(lambda: null_summary(t, quantiles=quantiles), "quantile")


# ============================================================ (c) rotary embeddings

def test_the_rotary_matrix_is_the_complex_rotation_of_the_half_split_pairs():
    """In the rotate_half layout coordinate k pairs with k + d_h/2: as the complex number
    z_k = q_k + i q_(k + d_h/2), position p multiplies it by exp(i p base^(-2k/d_h)).  R(p) q is that
    product, and the logit of positions i, j, Re sum_k conj(z_k(i)) w_k(j), is q^T R(j - i) k."""
    from companion.core.rope import rotary_matrix

    dh, base, half = 8, 500.0, 4
    g = np.random.default_rng(5)
    q, k = g.standard_normal(dh), g.standard_normal(dh)
    theta = base ** (-2.0 * np.arange(half) / dh)

    def turn(v, p):
        z = (v[:half] + 1j * v[half:]) * np.exp(1j * p * theta)
        return np.concatenate([z.real, z.imag])

    for i, j in ((0, 0), (2, 7), (7, 2), (30, 1000)):
        assert np.allclose(rotary_matrix(i, dh, base).numpy() @ q, turn(q, i), atol=1e-12)
        want = float(turn(q, i) @ turn(k, j))
        assert float(q @ rotary_matrix(j - i, dh, base).numpy() @ k) == pytest.approx(want, abs=1e-10)


# ============================================================ (d) summaries over the right set

def _scores(values, key="m", model=None, component="decoder", role="causal", pairing="grouped", layers=None):
    return pd.DataFrame({"key": key, "model": model or key, "component": component, "role": role,
                         "layer": list(layers) if layers is not None else range(len(values)), "head": -1,
                         "pairing": pairing, "symmetry": values, "directionality": [-v for v in values],
                         "n_params": 10, "d_model": 4})


_CAT = pd.DataFrame({"key": ["m", "n"], "printed_names": ["M", "N"], "modality": ["text", "text"]})


@pytest.mark.parametrize("cross_index", [5, 0])
def test_a_cross_attention_layer_in_the_scores_is_no_layer_of_the_decoder(cross_index):
    """Tables S2/S3 summarise self-attention: a cross-attention row (numbered apart from the
    decoder's layers, or alike as T5's are) changes neither the median nor the layer count."""
    from companion.survey.summaries import summarize_survey

    plain = summarize_survey(_scores([0.1, 0.2]), _CAT).set_index("score")
    mixed = pd.concat([_scores([0.1, 0.2]), _scores([0.9], role="cross", layers=[cross_index])], ignore_index=True)
    got = summarize_survey(mixed, _CAT).set_index("score")
    assert got.at["symmetry", "median"] == pytest.approx(0.15) == plain.at["symmetry", "median"]
    assert got.at["symmetry", "n_layers"] == 2 and got.at["symmetry", "kind"] == "decoder"


def test_summarize_layers_leaves_a_cross_attention_row_out():
    from companion.survey.tables import summarize_layers

    t = pd.concat([_scores([0.1, 0.3, 0.2]), _scores([0.9], role="cross", layers=[0])], ignore_index=True)
    s = summarize_layers(t).iloc[0]
    assert s["n_layers"] == 3 and s["symmetry_median"] == pytest.approx(0.2)


@pytest.mark.parametrize("column", ["pairing", "key", "model", "component"])
def test_a_model_whose_key_pairing_or_component_is_empty_is_refused_not_left_out(column):
    """A cell read back empty (NaN) made groupby drop the model's layers from the summary, silently."""
    from companion.survey.summaries import summarize_survey

    both = pd.concat([_scores([0.1, 0.2]), _scores([0.9, 0.8], key="n")], ignore_index=True)
    both[column] = both[column].astype(object)
    both.loc[both["key"] == "n", column] = np.nan
    _refused(lambda: summarize_survey(both, _CAT), column)


@pytest.mark.parametrize("column", ["model", "component"])
def test_summarize_layers_refuses_layers_without_a_model_or_component(column):
    from companion.survey.tables import summarize_layers

    t = _scores([0.1, 0.2, 0.3, 0.4])
    t[column] = t[column].astype(object)
    t.loc[2:, column] = np.nan
    _refused(lambda: summarize_layers(t), column)


def test_the_layer_scores_leave_a_cross_layer_out_and_score_the_summed_form():
    from companion.adapters.types import QKCheckpoint, QKLayer
    from companion.survey.tables import layer_scores

    g = np.random.default_rng(8)
    W = [torch.tensor(g.standard_normal((4, 6))) for _ in range(4)]
    layers = [QKLayer(index=0, role="causal", component="decoder", n_heads=2, n_kv_heads=2, Wq=W[0], Wk=W[1]),
              QKLayer(index=0, role="cross", component="decoder", n_heads=2, n_kv_heads=2, Wq=W[2], Wk=W[3])]
    t = layer_scores(QKCheckpoint(source="x", family="t", layers=layers), per_head=True)
    assert list(t["role"].unique()) == ["causal"] and len(t) == 3
    M = W[0].numpy().T @ W[1].numpy()
    whole = t[t["head"] == -1].iloc[0]
    assert whole["symmetry"] == pytest.approx(_sym(M)) and whole["directionality"] == pytest.approx(_dir(M), abs=1e-12)
    M1 = W[0].numpy()[2:].T @ W[1].numpy()[2:]
    assert t[t["head"] == 1].iloc[0]["symmetry"] == pytest.approx(_sym(M1))


# ============================================================ (e) the appendix helpers at float64's edges

@pytest.mark.parametrize("N", [512, 1e160, 1e300])
def test_the_s119_ratio_at_any_length_is_the_count_of_pairs(N):
    """pN (pN - 1) / (pN (N - pN)) = (pN - 1) / (N - pN): a finite number at every finite N (the
    products overflowed to inf / inf = NaN past N ~ 1e154)."""
    from companion.core.theory import symmetric_update_share

    p = 0.25
    m = p * N
    got = symmetric_update_share(p, N)
    assert got["ratio_exact"] == pytest.approx((m - 1) / (N - m), rel=1e-12)
    assert math.isfinite(got["ratio_exact"])


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e300, 1e308])
def test_closed_form_norm_ratios_do_not_depend_on_the_scale_of_sigma(scale):
    from companion.core.theory import norm_ratio_closed_form

    S = np.diag([1.0, 1.5])
    want_c = np.array([[1.25, 2.5 / 3], [1.25, 2.5 / 3]])   # Tr / (d Sigma_mm) = 2.5 / (2 * [1, 1.5])
    want_p = np.array([[0.8, 0.8], [1.2, 1.2]])             # d Sigma_kk / Tr = 2 * [1, 1.5] / 2.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.allclose(norm_ratio_closed_form(S * scale, "context"), want_c, rtol=1e-12)
        assert np.allclose(norm_ratio_closed_form(S * scale, "prediction"), want_p, rtol=1e-12)


@pytest.mark.parametrize("scale", [1e-200, 1.0, 1e200])
def test_the_norm_spread_outlier_z_does_not_depend_on_the_scale(scale):
    """z = (max - mean) / sd of the row norms [sqrt 2, sqrt 10]: 1/sqrt 2 at every scale (1e200 gave
    NaN from overflowing squares, 1e-200 zeros from underflowing ones)."""
    from companion.core.theory import norm_spread

    M = np.array([[1.0, 1.0], [1.0, 3.0]]) * scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = norm_spread(M)
    assert got["row_max_z"] == pytest.approx(1 / math.sqrt(2), rel=1e-12)
    assert got["col_max_z"] == pytest.approx(1 / math.sqrt(2), rel=1e-12)
    norms = np.array([math.sqrt(2), math.sqrt(10)])
    with np.errstate(over="ignore", under="ignore"):
        want_var = float(norms.var(ddof=1) * np.float64(scale) ** 2)   # inf, or 0, past float64's range
    assert got["row_var"] == pytest.approx(want_var, rel=1e-12)


@pytest.mark.parametrize("scale", [1e-200, 1.0, 1e200])
def test_eq15_as_printed_is_twice_the_symmetry_at_every_scale(scale):
    """A non-zero matrix has a score however small or large its entries (1e200 gave NaN, 1e-200 was
    refused as 'a zero matrix')."""
    from companion.core.theory import eq15_score

    A = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0], [0.0, 1.0, 2.0]])
    assert eq15_score(A * scale) == pytest.approx(2 * _sym(A), rel=1e-12)


def test_eq15_of_the_zero_matrix_is_still_refused():
    from companion.core.theory import eq15_score

    _refused(lambda: eq15_score(np.zeros((3, 3))), "zero matrix")


def test_positional_expectations_are_the_mean_autoregressive_counts():
    """By linearity, the mean over sequences of the per-occurrence counts N - k and k - 1 equals the
    sums over positions weighted by the empirical frequencies (Eqs. S72-S75)."""
    from companion.core.theory import autoregressive_counts, positional_expectations

    seqs = np.random.default_rng(9).integers(0, 5, size=(40, 7))
    mu_c, mu_p = autoregressive_counts(seqs, 5)
    e_c, e_p = positional_expectations(seqs, 5)
    hand_c = np.zeros(5)
    for s in seqs:
        for k, t in enumerate(s, start=1):
            hand_c[t] += 7 - k
    assert np.allclose(mu_c, hand_c / 40) and np.allclose(mu_c, e_c) and np.allclose(mu_p, e_p)


# ============================================================ (f) quantisation, the tiny model

def test_the_quantisation_error_is_measured_against_the_original_weight():
    """wq_error = ||Wq' - Wq|| / ||Wq|| with the original in the denominator, and d_symmetry =
    quantised minus original (a swap of the two moves both)."""
    from companion.adapters.types import QKCheckpoint, QKLayer
    from companion.survey.quantisation import compare_layers, quantised_copy

    g = np.random.default_rng(10)
    Wq, Wk = (torch.tensor(g.standard_normal((4, 32)), dtype=torch.float32) for _ in range(2))
    ckpt = QKCheckpoint(source="m", family="t", meta={"name": "m"},
                        layers=[QKLayer(index=0, role="encoder", component="encoder", n_heads=2, n_kv_heads=2,
                                        Wq=Wq, Wk=Wk)])
    copy = quantised_copy(ckpt, "Q4_0")
    row = compare_layers(ckpt, copy, "m", "Q4_0").iloc[0]
    a, b = Wq.double().numpy(), copy.layers[0].Wq.double().numpy()
    assert row["wq_error"] == pytest.approx(np.linalg.norm(b - a) / np.linalg.norm(a), rel=1e-6)
    Mq = copy.layers[0].Wq.double().numpy().T @ copy.layers[0].Wk.double().numpy()
    assert row["d_symmetry"] == pytest.approx(_sym(Mq) - _sym(a.T @ Wk.double().numpy()), abs=1e-6)


def test_q8_0_reads_back_within_half_a_step_of_each_block():
    """Q8_0: one float16 scale max|block| / 127 per 32 values; each value comes back within half a
    step (plus the float16 rounding of the scale)."""
    from companion.survey.quantisation import round_trip

    W = np.random.default_rng(12).standard_normal((3, 64)).astype(np.float32)
    back, stored = round_trip(W, "Q8_0")
    step = np.abs(W.reshape(-1, 32)).max(axis=1) / 127
    err = np.abs(back - W).reshape(-1, 32).max(axis=1)
    assert stored == "Q8_0" and (err <= step * (0.5 + 127 * 2 ** -11) + 1e-7).all() and (err > 0).any()


def test_building_the_tiny_model_leaves_torch_s_global_random_state_alone():
    from companion.core.tiny_attention import TinyAttentionModel

    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    TinyAttentionModel(7, d=8, seed=5)
    assert torch.equal(torch.rand(3), want)


def test_the_explicit_tiny_model_scores_tokens_with_its_own_form():
    """explicit=True: the raw score of tokens i, j is x_i^T W x_j with x the layer's input, and
    bilinear_forms returns that W."""
    from companion.core.tiny_attention import TinyAttentionModel, bilinear_forms

    model = TinyAttentionModel(9, d=6, explicit=True, seed=2).double()
    tokens = torch.tensor([[1, 4, 2, 8]])
    model(tokens)
    X = model.store["inputs"][0][0].detach().numpy()
    W = bilinear_forms(model)[0].numpy()
    assert np.allclose(model.store["scores"][0][0, 0].detach().numpy(), X @ W @ X.T, atol=1e-12)


def test_the_rotary_bias_prior_turns_by_the_key_minus_the_query_position():
    """With the Llama/Qwen2 tables (cos, sin of cat(p inv_freq, p inv_freq)), the content-free part
    of the logit is P_ij = b_q^T R(j - i) b_k, R the rotation checked above against the complex form
    (R(i - j) would be the transposed prior)."""
    from companion.core.rope import rotary_matrix
    from companion.survey.bias_term import logit_parts

    n, dh, base = 5, 4, 100.0
    g = np.random.default_rng(13)
    Wq, Wk = g.standard_normal((dh, 3)), g.standard_normal((dh, 3))
    bq, bk, X = g.standard_normal(dh), g.standard_normal(dh), g.standard_normal((n, 3))
    inv = base ** (-np.arange(0, dh, 2) / dh)
    ang = np.arange(n)[:, None] * np.concatenate([inv, inv])[None]
    _, _, P = logit_parts(Wq, Wk, bq, bk, 1, X, rope=(np.cos(ang), np.sin(ang)))
    for i in range(n):
        for j in range(n):
            want = float(bq @ rotary_matrix(j - i, dh, base).numpy() @ bk)
            assert float(P[0, i, j]) == pytest.approx(want, abs=1e-12)


# ============================================================ (g) where the survey writes

def _fake_scoring(monkeypatch, tmp_path):
    import companion.survey.scoring as scoring
    from companion.survey.sources import SurveySource

    monkeypatch.setattr(scoring, "resolve_source",
                        lambda entry, local_dir=None, online=None: SurveySource(str(tmp_path), "local"))
    monkeypatch.setattr(scoring, "score_entry", lambda entry, src, per_head=True, device=None: pd.DataFrame(
        {"key": [entry["key"]], "hub_id": [entry["hub_id"]], "component": ["encoder"], "role": ["encoder"], "layer": [0],
         "head": [-1], "level": ["layer"], "pairing": ["grouped"], "symmetry": [0.5], "directionality": [0.0]}))
    return scoring


@pytest.mark.parametrize("key", ["../../evil", "../evil", "ABSOLUTE", "a/b", "x\n", ".."])
def test_a_catalog_key_that_is_a_path_never_names_a_file_outside_the_models_folder(monkeypatch, tmp_path, key):
    """The key names <out>/models/<key>.csv: '../../evil' wrote evil.csv beside the output folder, and an
    absolute key replaced the whole path (ABSOLUTE stands for one inside tmp_path)."""
    scoring = _fake_scoring(monkeypatch, tmp_path)
    key = str(tmp_path / "evil") if key == "ABSOLUTE" else key
    out = tmp_path / "a" / "out"
    cat = pd.DataFrame({"key": [key], "hub_id": ["a/b"]})
    _refused(lambda: scoring.run_survey_entries(cat, out_dir=out, progress=False), "key", "plain name")
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]   # refused before any table is written


def test_a_plain_catalog_key_is_scored_into_its_own_table(monkeypatch, tmp_path):
    scoring = _fake_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    cat = pd.DataFrame({"key": ["qwen2.5-coder-0.5b", "all-MiniLM_L6"], "hub_id": ["a/b", "c/d"]})
    status = scoring.run_survey_entries(cat, out_dir=out, progress=False)
    assert list(status["status"]) == ["scored", "scored"]
    assert sorted(p.name for p in (out / "models").glob("*.csv")) == ["all-MiniLM_L6.csv", "qwen2.5-coder-0.5b.csv"]
    assert sorted(pd.read_csv(out / "scores.csv")["key"]) == ["all-MiniLM_L6", "qwen2.5-coder-0.5b"]


@pytest.mark.parametrize("key", ["NA", "null", "None", "nan"])
def test_a_model_keyed_like_a_missing_value_reaches_the_union_and_stays_cached(monkeypatch, tmp_path, key):
    """pandas read the key 'NA' back as NaN: its cached table then failed its own key check, was left
    out of scores.csv although its status said 'scored', and was recomputed on every run."""
    from companion.survey.table_cache import load_survey

    scoring = _fake_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    cat = pd.DataFrame({"key": [key, "bert"], "hub_id": ["a/b", "c/d"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scoring.run_survey_entries(cat, out_dir=out, progress=False)
        again = scoring.run_survey_entries(cat, out_dir=out, progress=False)
    assert list(again["status"]) == ["cached", "cached"]
    assert sorted(load_survey(out)["key"]) == sorted([key, "bert"])


def test_tied_logits_with_unequal_weights_break_the_order_of_eq_5():
    """Eq. 5 reads 'alpha_ij < alpha_ij' exactly when a_ij < a_ij'': two equal logits must get equal
    weights.  With min_gap=0 (skip pairs closer than 0: none) a tie was skipped, and [0.2, 0.3, 0.5]
    for logits [1, 1, 2] passed as order-preserving; the softmax of the same logits still passes."""
    from companion.core.theory import order_preserved

    raw = np.array([[1.0, 1.0, 2.0], [0.0, -1.0, 3.0]])
    soft = np.exp(raw) / np.exp(raw).sum(-1, keepdims=True)
    assert order_preserved(raw, soft) is True
    assert order_preserved(raw, [[0.2, 0.3, 0.5], soft[1]]) is False
    assert order_preserved(raw, [[0.2, 0.3, 0.5], soft[1]], min_gap=0.5) is True   # the tie skipped on request


@pytest.mark.parametrize("pairing", ["grouped", "modulo"])
def test_grouped_query_head_scores_pair_each_query_head_with_its_key_head(pairing):
    """4 query heads on 2 key heads: head h reads key head h // 2 (grouped, how the model computes) or
    h % 2 (modulo, the released code's); each head's scores and the layer's (the sum of the head forms)
    against the forms written out in numpy."""
    from companion.adapters.types import QKCheckpoint, QKLayer
    from companion.survey.tables import layer_scores

    g = np.random.default_rng(14)
    dh, d = 2, 6
    Wq, Wk = g.standard_normal((4 * dh, d)), g.standard_normal((2 * dh, d))
    layer = QKLayer(index=0, role="causal", component="decoder", n_heads=4, n_kv_heads=2,
                    Wq=torch.tensor(Wq), Wk=torch.tensor(Wk))
    t = layer_scores(QKCheckpoint(source="x", family="t", layers=[layer]), per_head=True, pairing=pairing)
    key_of = (lambda h: h // 2) if pairing == "grouped" else (lambda h: h % 2)
    forms = [Wq[h * dh:(h + 1) * dh].T @ Wk[key_of(h) * dh:(key_of(h) + 1) * dh] for h in range(4)]
    heads = t[t["head"] >= 0].sort_values("head")
    assert np.allclose(heads["symmetry"], [_sym(M) for M in forms], atol=1e-12)
    assert np.allclose(heads["directionality"], [_dir(M) for M in forms], atol=1e-12)
    whole = t[t["head"] == -1].iloc[0]
    assert whole["symmetry"] == pytest.approx(_sym(sum(forms)), abs=1e-12)
    assert set(t["pairing"]) == {pairing}


@pytest.mark.parametrize("key", [float("nan"), 3])
def test_a_key_that_is_no_text_is_not_looked_up_in_the_local_folder(tmp_path, key):
    """A NaN or numeric key raised a raw 'expected str' TypeError from pathlib; it names no folder, so
    the local lookup skips it and the owner--name folder of the hub id is still found."""
    from companion.survey.sources import Unavailable, resolve_source

    with pytest.raises(Unavailable) as err:
        resolve_source({"key": key, "hub_id": "a/b"}, local_dir=tmp_path, online=False)
    assert "a/b" in _one_line(err)
    (tmp_path / "a--b").mkdir()
    src = resolve_source({"key": key, "hub_id": "a/b"}, local_dir=tmp_path, online=False)
    assert src.kind == "local" and src.location == str(tmp_path / "a--b")
