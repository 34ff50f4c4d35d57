"""Hardening round 10 (issue 74): the numbers themselves.

(a) The structure scores (Def. 3.1, Def. 3.2), their factored forms, the null law and the
theory helpers on degenerate input: 1 x 1 and 2 x 2 matrices, integer, bool, half-precision
and bfloat16 input with large entries, stacks holding a zero or a NaN matrix, matrices whose
rows all have one norm (no spread in the outlier threshold), bad ``gamma`` and variants,
factors with ``r > d`` and ``r = 0``, the null law at ``d = 1, 2``, parameters at the ends of
their ranges.  Every score is compared with a float64 computation from the definition, done
here with numpy.

(b) The statistics of the verdicts: one and two seeds, no spread, a seed missing from one
arm or written twice, NaN and infinities, levels 0 and 1, one look, looks out of order; and a
property test: on a few hundred random datasets, the function that turns a rule and data
into an outcome gives exactly one outcome, the one the rule's conditions (recomputed here
from scipy's t quantiles) single out.

Each case states the right behaviour: the value computed apart from the code under test, or
a one-line refusal naming the input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from one_line import one_line as _one_line

REFUSED = ValueError   # CompanionError is a ValueError


# ============================================================ by-hand references (numpy, float64)

def _sym_by_hand(M) -> float:
    """Def. 3.1: tr(M M) / ||M||_F^2, in float64 from the matrix's exact values."""
    M = np.asarray(M, dtype=np.float64)
    return float(np.trace(M @ M) / np.sum(M * M))


def _dir_by_hand(M, gamma=2.0, variant="excess") -> float:
    """Def. 3.2 / Eqs. 17-19: rows (columns) whose L2 norm exceeds mean + gamma * std
    (unbiased); 'excess' sums their excess over the threshold, 'eq18' the norms."""
    M = np.asarray(M, dtype=np.float64)

    def mass(norms):
        thr = norms.mean() + gamma * norms.std(ddof=1)
        out = norms > thr
        return float(np.sum((norms - thr)[out] if variant == "excess" else norms[out]))

    R, C = mass(np.linalg.norm(M, axis=1)), mass(np.linalg.norm(M, axis=0))
    return 0.0 if R + C == 0 else (R - C) / (R + C)


def _f64(t) -> np.ndarray:
    return t.to(torch.float64).numpy() if isinstance(t, torch.Tensor) else np.asarray(t, dtype=np.float64)


# ============================================================ (a) the scores on degenerate input

_DTYPE_CASES = {
    "1x1": np.array([[-3.0]]),
    "2x2 skew": np.array([[0.0, 2.0], [-2.0, 0.0]]),
    "int8 whose square overflows int8": torch.tensor([[100, 120], [-120, 100]], dtype=torch.int8),
    "int64 near 2^62": np.array([[2**62, 3], [-(2**61), 2**62 - 1]], dtype=np.int64),
    "bool": torch.tensor([[True, False, True], [True, True, False], [False, False, True]]),
    "float16 near its max": torch.tensor([[65504.0, -60000.0], [59000.0, 65000.0]], dtype=torch.float16),
    "bfloat16 near its max": torch.tensor([[3.0e38, -1.0e38], [2.0e38, 3.3e38]], dtype=torch.bfloat16),
    "numpy float16 near its max": np.array([[65504, 1, -65504], [3, 65504, 2], [65000, -7, 65504]], dtype=np.float16),
}


@pytest.mark.parametrize("name", list(_DTYPE_CASES))
def test_the_symmetry_score_of_small_and_odd_dtype_matrices_is_def_3_1_in_float64(name):
    """int8 squares overflow int8 and float16 sums of squares overflow float16: the score must
    still be Def. 3.1 of the matrix's exact values."""
    from companion.core.scores import symmetry_score

    M = _DTYPE_CASES[name]
    assert symmetry_score(M) == pytest.approx(_sym_by_hand(_f64(M)), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", [n for n in _DTYPE_CASES if n != "1x1"])
@pytest.mark.parametrize("gamma", [0.0, 0.5, 2.0])
def test_the_directionality_of_small_and_odd_dtype_matrices_is_def_3_2_in_float64(name, gamma):
    from companion.core.scores import directionality_score

    M = _DTYPE_CASES[name]
    for variant in ("excess", "eq18"):
        assert directionality_score(M, gamma=gamma, variant=variant) == pytest.approx(
            _dir_by_hand(_f64(M), gamma, variant), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("gamma", [0.0, 1.0, 2.0])
def test_the_directionality_of_matrices_with_outlying_rows_or_columns_is_def_3_2(seed, gamma):
    from companion.core.scores import directionality_score

    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 12))
    M = rng.normal(size=(d, d))
    M[rng.integers(d)] *= rng.uniform(1, 8)          # one loud row
    M[:, rng.integers(d)] *= rng.uniform(1, 8)       # one loud column
    for variant in ("excess", "eq18"):
        assert directionality_score(M, gamma=gamma, variant=variant) == pytest.approx(
            _dir_by_hand(M, gamma, variant), abs=1e-12)


def test_matrices_whose_rows_all_have_one_norm_have_no_outlying_row():
    """std 0 in the threshold: no row exceeds mean + gamma * 0 (every norm is the mean), so a
    matrix whose rows and columns all have one norm has d = 0 at every gamma, however the
    last bits of its norms round; rows of one norm with unequal columns give d = -1."""
    from companion.core.scores import directionality_score

    Q, _ = np.linalg.qr(np.random.default_rng(3).normal(size=(64, 64)))     # orthogonal: all norms 1
    H = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]], dtype=float)  # Hadamard
    P = np.eye(7)[[3, 0, 6, 1, 5, 2, 4]]
    for M in (Q, H, P, -Q.T):
        for gamma in (0.0, 0.5, 2.0):
            assert directionality_score(M, gamma=gamma) == 0.0
    rows_equal = np.array([[3.0, 4.0, 0.0], [0.0, 5.0, 0.0], [5.0, 0.0, 0.0]])   # every row norm 5
    assert directionality_score(rows_equal, gamma=0.5) == pytest.approx(_dir_by_hand(rows_equal, 0.5)) 
    assert _dir_by_hand(rows_equal, 0.5) == -1.0


def test_a_stack_with_a_zero_matrix_scores_the_others_and_gives_nan_for_the_zero_one():
    from companion.core.scores import directionality_score, symmetry_score

    rng = np.random.default_rng(4)
    A, B = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    stack = np.stack([A, np.zeros((5, 5)), B])
    s, d = symmetry_score(stack), directionality_score(stack, gamma=1.0)
    assert s[0] == pytest.approx(_sym_by_hand(A)) and s[2] == pytest.approx(_sym_by_hand(B)) and np.isnan(s[1])
    assert d[0] == pytest.approx(_dir_by_hand(A, 1.0)) and d[2] == pytest.approx(_dir_by_hand(B, 1.0))
    assert np.isnan(d[1])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_stack_with_a_non_finite_matrix_is_refused_naming_which_matrix(bad):
    """A stack of 12 layer forms with one broken layer: the refusal says which one."""
    from companion.core.scores import structure_scores, symmetry_score

    stack = np.random.default_rng(5).normal(size=(12, 4, 4))
    stack[7, 2, 1] = bad
    for call in (lambda: symmetry_score(stack), lambda: structure_scores(Wq=stack, Wk=stack),
                 lambda: symmetry_score(torch.from_numpy(stack).to(torch.float16))):
        with pytest.raises(REFUSED) as err:
            call()
        assert "[7]" in _one_line(err)


@pytest.mark.parametrize("gamma", ["2", None, True, -1.0, float("nan"), float("inf"), [2.0]])
def test_a_gamma_that_is_no_non_negative_number_is_refused_in_one_line(gamma):
    from companion.core.scores import directionality_score, directionality_score_factored, structure_scores

    M = np.random.default_rng(6).normal(size=(4, 4))
    for call in (lambda: directionality_score(M, gamma=gamma), lambda: structure_scores(M, gamma=gamma),
                 lambda: directionality_score_factored(M, M, gamma=gamma)):
        with pytest.raises(REFUSED) as err:
            call()
        assert "gamma" in _one_line(err)


@pytest.mark.parametrize("variant", ["Excess", "eq19", "", None, ["excess"]])
def test_a_variant_that_does_not_exist_is_refused_naming_the_ones_that_do(variant):
    from companion.core.scores import directionality_score

    with pytest.raises(REFUSED) as err:
        directionality_score(np.eye(3), variant=variant)
    assert "eq18" in _one_line(err) and "excess" in _one_line(err)


@pytest.mark.parametrize("r, d", [(7, 3), (12, 2), (1, 5), (3, 3)])
def test_the_factored_forms_with_r_above_d_equal_the_definitions_of_wq_t_wk(r, d):
    from companion.core.scores import directionality_score_factored, structure_scores, symmetry_score_factored

    rng = np.random.default_rng(r * 10 + d)
    q, k = rng.normal(size=(r, d)), rng.normal(size=(r, d))
    M = q.T @ k
    assert symmetry_score_factored(q, k) == pytest.approx(_sym_by_hand(M), rel=1e-10)
    for gamma in (0.0, 0.5):
        assert directionality_score_factored(q, k, gamma=gamma) == pytest.approx(_dir_by_hand(M, gamma), abs=1e-10)
    for factored in (True, False):
        both = structure_scores(Wq=q, Wk=k, gamma=0.5, factored=factored)
        assert both["symmetry"] == pytest.approx(_sym_by_hand(M), rel=1e-10)
        assert both["directionality"] == pytest.approx(_dir_by_hand(M, 0.5), abs=1e-10)


def test_half_precision_factors_with_large_entries_give_the_scores_of_their_exact_product():
    """float16 factors near 65504: their product and its squares overflow float16 (and the
    squares of the product's entries would overflow float32 too); the scores are those of
    ``Wq^T Wk`` formed from the exact values in float64."""
    from companion.core.scores import structure_scores

    rng = np.random.default_rng(8)
    q = torch.from_numpy(rng.uniform(-65000, 65000, size=(2, 9))).to(torch.float16)
    k = torch.from_numpy(rng.uniform(-65000, 65000, size=(2, 9))).to(torch.float16)
    M = _f64(q).T @ _f64(k)
    for factored in (True, False):
        got = structure_scores(Wq=q, Wk=k, gamma=1.0, factored=factored)
        assert got["symmetry"] == pytest.approx(_sym_by_hand(M), rel=1e-10)
        assert got["directionality"] == pytest.approx(_dir_by_hand(M, 1.0), abs=1e-10)


@pytest.mark.parametrize("shapes", [((0, 4), (0, 4)), ((3, 0), (3, 0)), ((2, 3), (3, 3))])
def test_factors_with_no_rows_or_unequal_shapes_are_refused_naming_them(shapes):
    from companion.core.scores import symmetry_score_factored

    with pytest.raises(REFUSED) as err:
        symmetry_score_factored(np.ones(shapes[0]), np.ones(shapes[1]))
    assert "Wq" in _one_line(err)


@pytest.mark.parametrize("M", [np.ones((2, 3)), np.ones(3), np.float64(2.0), np.eye(2, dtype=complex),
                               torch.eye(2, dtype=torch.complex64)])
def test_non_square_scalar_and_complex_input_is_refused_in_one_line(M):
    from companion.core.scores import symmetry_score

    with pytest.raises(REFUSED) as err:
        symmetry_score(M)
    assert "M " in _one_line(err) or "M is" in _one_line(err)


def test_the_null_law_at_d_2_is_the_law_of_def_3_1_over_gaussian_2x2_matrices():
    """d = 2: s = 2 B - 1 with B ~ Beta(3/2, 1/2); checked against 200,000 Gaussian 2 x 2
    matrices scored by hand (empirical CDF within 0.006 at nine points), and the mean 1/d and
    variance 2 (d^2 - 1) / (d^2 (d^2 + 2)) = 1/4."""
    from companion.core.null import symmetry_null_law

    law = symmetry_null_law(2)
    assert law.mean() == pytest.approx(0.5) and law.var() == pytest.approx(0.25)
    M = np.random.default_rng(9).standard_normal((200_000, 2, 2))
    s = np.einsum("nij,nji->n", M, M) / np.einsum("nij,nij->n", M, M)
    for x in np.linspace(-0.9, 0.9, 9):
        assert law.cdf(x) == pytest.approx(np.mean(s <= x), abs=0.006)


@pytest.mark.parametrize("d", [1, 0, -3, 2.5, float("nan"), float("inf"), "3", True])
def test_the_null_law_of_a_width_that_is_no_whole_number_from_2_is_refused_naming_it(d):
    from companion.core.null import symmetry_null_law

    with pytest.raises(REFUSED) as err:
        symmetry_null_law(d)
    assert "d" in _one_line(err) and repr(d)[:3] in _one_line(err)


@pytest.mark.parametrize("kwargs, word", [({"d": 3, "n_samples": 0}, "n_samples"), ({"d": 3, "n_samples": -2}, "n_samples"),
                                          ({"d": 2.5, "n_samples": 3}, "d"), ({"d": 3, "n_samples": 3, "rank": -1}, "rank"),
                                          ({"d": 3, "n_samples": 3, "rank": 0}, "rank")])
def test_null_draws_of_no_samples_or_of_a_width_or_rank_that_is_no_whole_number_are_refused(kwargs, word):
    from companion.core.null import null_scores

    with pytest.raises(REFUSED) as err:
        null_scores(**kwargs, shipped=False, device="cpu")
    assert word in _one_line(err)


def test_the_null_draws_at_d_2_are_def_3_1_and_3_2_of_the_matrices_drawn():
    from companion.core.null import null_scores, random_bilinear_forms

    table = null_scores(2, n_samples=50, seed=11, shipped=False, device="cpu")
    M = random_bilinear_forms(2, 50, seed=11, device="cpu").numpy()
    assert table["symmetry"].to_numpy() == pytest.approx([_sym_by_hand(m) for m in M], rel=1e-12)
    # 2 norms: the larger one is mean + std / sqrt(2) < mean + 2 std, never an outlier
    assert (table["directionality"].to_numpy() == 0).all()
    assert [_dir_by_hand(m) for m in M] == [0.0] * 50


# ------------------------------------------------------------ theory helpers at the ends of their ranges

def test_the_symmetric_update_share_at_one_masked_token_is_zero_and_below_one_is_refused():
    """Remark S1.15 counts pN masked tokens: with one, no pair lies inside the masked set (the
    ratio and share are 0); with fewer than one the formula's pN (pN - 1) is a negative count
    of pairs, no share."""
    from companion.core.theory import symmetric_update_share

    at_one = symmetric_update_share(0.1, 10)
    assert at_one["ratio_exact"] == 0.0 and at_one["share_of_all"] == 0.0
    p, N = 0.25, 40
    got = symmetric_update_share(p, N)
    assert got["ratio_exact"] == pytest.approx((p * N - 1) / (N - p * N))
    assert got["share_of_all"] == pytest.approx((p * N - 1) / (N - 1))
    for p, N in ((0.01, 10), (0.5, float("inf")), (0.5, float("nan"))):
        with pytest.raises(REFUSED) as err:
            symmetric_update_share(p, N)
        assert "N" in _one_line(err)


@pytest.mark.parametrize("rho", [1.5, -0.2, 0.0, 1.0, float("nan")])
def test_the_s79_expectation_refuses_a_masking_rate_outside_zero_to_one(rho):
    from companion.core.theory import s79_expectation

    with pytest.raises(REFUSED) as err:
        s79_expectation(np.array([[0, 1, 2], [2, 1, 0]]), 3, rho)
    assert "rho" in _one_line(err)


def test_the_s79_expectation_inside_the_range_is_the_formula_by_hand():
    from companion.core.theory import s79_expectation

    seqs = np.array([[0, 1, 2, 1], [2, 1, 0, 0], [1, 1, 1, 2]])
    rho, N = 0.15, 4
    freq = np.array([[np.mean(seqs[:, k] == t) for t in range(3)] for k in range(N)]).sum(0)
    assert s79_expectation(seqs, 3, rho) == pytest.approx((N - 1) * rho * (1 - rho) * freq)


@pytest.mark.parametrize("kwargs", [{"eps": 3.0}, {"eps": 0.0}, {"eps": -0.1}, {"A": 0.0}, {"K": -5.0},
                                    {"eps": float("nan")}])
def test_the_lemma_s111_counterexample_refuses_parameters_that_are_no_distribution(kwargs):
    """eps = 3 gave Pr[b > z] = 1.5."""
    from companion.core.theory import lemma_s111_counterexample

    with pytest.raises(REFUSED) as err:
        lemma_s111_counterexample(**kwargs)
    assert list(kwargs)[0] in _one_line(err)


@pytest.mark.parametrize("fn", ["autoregressive_counts", "positional_expectations"])
@pytest.mark.parametrize("bad", [5, -1])
def test_token_counts_refuse_a_token_id_outside_the_vocabulary(fn, bad):
    """An id 5 in a vocabulary of 3 gave an array of 6 counts, silently."""
    from companion.core import theory

    with pytest.raises(REFUSED) as err:
        getattr(theory, fn)(np.array([[0, bad, 1]]), 3)
    assert str(bad) in _one_line(err) and "vocab" in _one_line(err)


def test_autoregressive_counts_inside_the_vocabulary_are_the_counts_by_hand():
    from companion.core.theory import autoregressive_counts

    seqs = np.array([[0, 2, 2, 1], [1, 0, 2, 0]])
    mu_c, mu_p = np.zeros(4), np.zeros(4)
    for s in seqs:
        for pos, t in enumerate(s, start=1):
            mu_c[t] += len(s) - pos
            mu_p[t] += pos - 1
    got_c, got_p = autoregressive_counts(seqs, 4)
    assert got_c == pytest.approx(mu_c / 2) and got_p == pytest.approx(mu_p / 2)


@pytest.mark.parametrize("kwargs, word", [({"base": -1.0}, "base"), ({"base": 0.0}, "base"),
                                          ({"base": float("nan")}, "base"), ({"delta": float("nan")}, "delta"),
                                          ({"delta": float("inf")}, "delta"), ({"d_head": 4.0}, "d_head")])
def test_a_rotary_matrix_with_no_valid_angle_is_refused_instead_of_holding_nan(kwargs, word):
    from companion.core.rope import rotary_matrix

    args = {"delta": 1.0, "d_head": 4, **kwargs}
    with pytest.raises(REFUSED) as err:
        rotary_matrix(**args)
    assert word in _one_line(err)


@pytest.mark.parametrize("delta", [0.0, 1.0, -7.5, 1e6])
def test_a_rotary_matrix_is_a_rotation_by_the_angles_by_hand(delta):
    from companion.core.rope import rotary_matrix

    d_head, base = 8, 10000.0
    R = rotary_matrix(delta, d_head, base).numpy()
    half = d_head // 2
    for kk in range(half):
        a = delta * base ** (-2 * kk / d_head)
        block = R[np.ix_([kk, kk + half], [kk, kk + half])]
        assert block == pytest.approx(np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]), abs=1e-9)
    assert R @ R.T == pytest.approx(np.eye(d_head), abs=1e-12)


@pytest.mark.parametrize("n_heads", [0, -1])
def test_a_tiny_model_with_no_heads_is_refused_in_one_line(n_heads):
    from companion.core.tiny_attention import TinyAttentionModel

    with pytest.raises(REFUSED) as err:
        TinyAttentionModel(5, d=4, n_heads=n_heads)
    assert "n_heads" in _one_line(err)


# ============================================================ (b) the statistics of the verdicts

def test_one_and_two_seeds_give_no_interval_and_the_t_interval_by_hand():
    from companion.rules.statistics import directional_outcome, one_sample_t

    one = one_sample_t([0.3])
    assert one.n == 1 and one.mean == 0.3 and math.isnan(one.low) and math.isnan(one.high)
    assert directional_outcome(one, 0.05, min_seeds=1) == "not testable here"
    two = one_sample_t([1.0, 3.0], level=0.9)
    half = stats.t.ppf(0.95, 1) * math.sqrt(2.0) / math.sqrt(2)
    assert (two.low, two.high) == pytest.approx((2.0 - half, 2.0 + half), rel=1e-12)


@pytest.mark.parametrize("value", [0.0, 0.03, -0.2, 1e6])
def test_identical_seeds_are_not_testable_under_every_rule(value):
    from companion.rules.sequential import look_estimate, look_outcome
    from companion.rules.statistics import directional_outcome, equivalence_outcome, one_sample_t, threshold_outcome

    est = one_sample_t([value] * 4)
    assert directional_outcome(est, 0.05) == "not testable here"
    assert threshold_outcome(est, 0.0) == "not testable here"
    assert equivalence_outcome(est, 0.1) == "not testable here"
    assert look_outcome(look_estimate([value] * 4, 0.01), 0.05) == "not testable here"


def test_a_seed_missing_from_one_arm_is_left_out_and_the_rest_paired_by_seed():
    from companion.rules.statistics import paired_t

    a = pd.Series([0.5, 0.7, 0.4, 0.9], index=[3, 1, 2, 4])
    b = pd.Series([0.1, 0.3, 0.2], index=[1, 2, 3])          # seed 4 has no comparator
    diffs = np.array([0.7 - 0.1, 0.4 - 0.3, 0.5 - 0.2])      # seeds 1, 2, 3
    est = paired_t(a, b)
    assert sorted(est.values) == pytest.approx(sorted(diffs))
    half = stats.t.ppf(0.975, 2) * diffs.std(ddof=1) / math.sqrt(3)
    assert (est.low, est.high) == pytest.approx((diffs.mean() - half, diffs.mean() + half))


@pytest.mark.parametrize("where", ["candidate", "comparator", "both"])
def test_a_seed_written_twice_is_refused_naming_it(where):
    """A duplicated seed label paired every copy with every copy: 3 rows from 2 seeds, a
    narrower interval from no new run."""
    from companion.rules.statistics import paired_t, seeds_without_a_number

    once = pd.Series([0.1, 0.2], index=[7, 8])
    twice = pd.Series([0.1, 0.15, 0.2], index=[7, 7, 8])
    a, b = (twice, once * 0) if where == "candidate" else (once, twice * 0) if where == "comparator" else (twice, twice * 0)
    for call in (lambda: paired_t(a, b), lambda: seeds_without_a_number(a, b)):
        with pytest.raises(REFUSED) as err:
            call()
        assert "7" in _one_line(err) and "twice" in _one_line(err)


@pytest.mark.parametrize("level", [0, 1, 0.0, 1.0, float("nan"), -0.5, 1.5])
def test_a_level_of_zero_one_or_outside_is_refused_everywhere(level):
    from companion.rules.statistics import median_interval, one_sample_t

    for call in (lambda: one_sample_t([0.1, 0.2, 0.4], level), lambda: median_interval([0.1, 0.2, 0.4], level)):
        with pytest.raises(REFUSED) as err:
            call()
        assert "level" in _one_line(err)


def test_a_table_is_not_one_value_per_seed_for_the_median_and_a_look():
    """A 2 x 2 table was flattened into 4 'seeds'."""
    from companion.rules.sequential import look_estimate
    from companion.rules.statistics import median_interval

    for call in (lambda: median_interval([[0.1, 0.2], [0.3, 0.4]]), lambda: look_estimate([[0.1, 0.2], [0.3, 0.4]], 0.01)):
        with pytest.raises(REFUSED) as err:
            call()
        assert "(2, 2)" in _one_line(err)


@pytest.mark.parametrize("d", [np.float32(0.05), np.int64(1), np.float16(0.05)])
def test_a_numpy_yardstick_is_a_yardstick_on_every_path(d):
    """np.float32(0.05) was refused as 'not a positive number' when read once, and a look's
    yardstick in float32 read 'not testable here' silently."""
    from companion.rules.sequential import look_estimate, look_outcome, read_sequential
    from companion.rules.statistics import directional_outcome, one_sample_t

    v = [0.1, 0.12, 0.14, 0.13, 0.11, 0.12]
    expect_once = directional_outcome(one_sample_t(v), float(d))
    assert directional_outcome(one_sample_t(v), d) == expect_once
    nominal = [0.01, 0.02]
    assert look_outcome(look_estimate(v, 0.01), d) == look_outcome(look_estimate(v, 0.01), float(d))
    want = read_sequential(v, [3, 6], nominal, float(d))
    got = read_sequential(v, [3, 6], nominal, np.array([d, d]))
    assert (got.look, got.outcome) == (want.look, want.outcome) and want.outcome != "not testable here"


@pytest.mark.parametrize("threshold", [float("nan"), float("inf"), -float("inf"), None, "0.2"])
def test_a_level_claim_with_no_finite_threshold_is_refused(threshold):
    """A NaN threshold read 'inconclusive', an infinite one 'refuted'."""
    from companion.rules.statistics import one_sample_t, threshold_outcome

    with pytest.raises(REFUSED) as err:
        threshold_outcome(one_sample_t([0.1, 0.2, 0.3]), threshold)
    assert "threshold" in _one_line(err)


@pytest.mark.parametrize("band", [float("nan"), float("inf"), 0.0, -0.1, None])
def test_an_equality_claim_with_no_finite_positive_band_is_refused(band):
    """An infinite band read 'holds' for every interval, a NaN one 'inconclusive'."""
    from companion.rules.statistics import equivalence_outcome, one_sample_t

    with pytest.raises(REFUSED) as err:
        equivalence_outcome(one_sample_t([0.1, 0.2, 0.3]), band)
    assert "band" in _one_line(err)


@pytest.mark.parametrize("gate", ["no", "", "gate fails: memorisation", 1, None])
def test_a_gate_that_is_not_true_or_false_is_refused(gate):
    """read_sequential's gate returns '' when it passes and a reason when it fails; the same
    text given to directional_outcome read the opposite way ('' fails, a reason passes)."""
    from companion.rules.statistics import directional_outcome, one_sample_t

    with pytest.raises(REFUSED) as err:
        directional_outcome(one_sample_t([0.1, 0.12, 0.14]), 0.05, gate=gate)
    assert "gate" in _one_line(err)


def test_one_look_spends_all_of_alpha_at_the_fixed_sample_boundary():
    from companion.rules.sequential import boundaries, nominal_levels

    for alpha in (0.05, 0.02, 0.5):
        assert boundaries([5], alpha) == pytest.approx([stats.norm.isf(alpha / 2)], rel=1e-9)
        assert nominal_levels([5], alpha) == pytest.approx([alpha / 2], rel=1e-9)


@pytest.mark.parametrize("looks", [[6, 3], [3, 3], [1, 2], [], [3, 6.5], [3, "6"], [3, 6, True]])
def test_looks_out_of_order_or_not_whole_are_refused_by_every_reader(looks):
    """Looks (6, 3) read 6 seeds at look 1 and then 3 of them at the 'last' look, where all 6
    were in; (3, 6.5) made a boundary for half a seed."""
    from companion.rules.sequential import boundaries, read_sequential, simulate_design

    v = list(np.random.default_rng(12).normal(0.01, 0.05, 8))
    nominal = [0.001, 0.01, 0.02][: len(looks)]
    calls = [lambda: read_sequential(v, looks, nominal, 0.05),
             lambda: simulate_design(0.01, 0.05, looks, nominal, 0.05, draws=50)]
    if looks and all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in looks):
        calls.append(lambda: boundaries(looks))
    for call in calls:
        with pytest.raises(REFUSED) as err:
            call()
        assert "look" in _one_line(err)


@pytest.mark.parametrize("nominal, sesoi", [([0.001], 0.05), ([0.001, 0.01, 0.02], 0.05), ([0.001, 0.01], [0.05]),
                                            ([0.001, 0.7], 0.05)])
def test_levels_or_yardsticks_that_do_not_match_the_looks_are_refused(nominal, sesoi):
    from companion.rules.sequential import read_sequential

    v = list(np.random.default_rng(13).normal(0.01, 0.05, 8))
    with pytest.raises(REFUSED) as err:
        read_sequential(v, [3, 6], nominal, sesoi)
    assert "look" in _one_line(err)


@pytest.mark.parametrize("delta, sd", [(float("nan"), 0.05), (0.01, 0.0), (0.01, float("inf")), (0.01, -0.05),
                                       (float("inf"), 0.05)])
def test_a_design_simulated_at_no_finite_effect_or_spread_is_refused(delta, sd):
    """delta NaN read 'refuted' in every draw; sd 0 read 'holds' where read_sequential reads the
    same values 'not testable here'."""
    from companion.rules.sequential import family_error, family_error_split, simulate_design

    nominal = [0.001, 0.01]
    for call in (lambda: simulate_design(delta, sd, [3, 6], nominal, 0.05, draws=50),
                 lambda: family_error([(delta, sd, nominal, 0.05)], [3, 6], draws=50),
                 lambda: family_error_split([(delta, sd, nominal, 0.05, "a")], [3, 6], draws=50)):
        with pytest.raises(REFUSED) as err:
            call()
        assert "delta" in _one_line(err) or "sd" in _one_line(err) or "spread" in _one_line(err)


@pytest.mark.parametrize("power", [1.5, 1.0, 0.0, 0.001, float("nan")])
def test_a_detectable_effect_at_a_power_it_cannot_have_is_refused(power):
    from companion.rules.sequential import detectable_effect_interval

    with pytest.raises(REFUSED) as err:
        detectable_effect_interval(4, 0.05, 0.01, power=power)
    assert "power" in _one_line(err)


def test_holm_with_a_member_not_tested_by_hand():
    from companion.rules.statistics import holm

    p = [0.01, np.nan, 0.04, 0.03]
    # m = 4, the NaN ranks last: 0.01*4, max(0.04, 0.03*3), max(0.09, 0.04*2)
    assert holm(p)[[0, 3, 2]] == pytest.approx([0.04, 0.09, 0.09])
    assert np.isnan(holm(p)[1])


# ------------------------------------------------------------ property: exactly one outcome per rule and data

_R = lambda x: float(f"{x:.10g}")  # noqa: E731  the rules compare after rounding to 10 significant digits


def _directional_conditions(lo, hi, d):
    lo, hi, d = _R(lo), _R(hi), _R(d)
    return {"holds": lo >= d, "holds, size open": 0 < lo < d <= hi, "negligible": 0 < lo and hi < d,
            "refuted": lo <= 0 and hi < d, "inconclusive": lo <= 0 and d <= hi}


def _random_values(rng, n, d):
    kind = rng.integers(6)
    if kind == 0:
        return np.full(n, rng.normal(0, d))                              # no spread
    v = rng.normal(rng.normal(d, 2 * d), rng.uniform(0.05, 4) * d, n)
    if kind == 1 and n:
        v[rng.integers(n)] = rng.choice([np.nan, np.inf, -np.inf])     # a seed with no number
    return v


@pytest.mark.parametrize("batch", range(4))
def test_property_every_claim_read_once_gets_exactly_the_one_outcome_its_conditions_single_out(batch):
    from companion.rules.statistics import (directional_outcome, equivalence_outcome, one_sample_t,
                                            threshold_outcome)

    rng = np.random.default_rng(1000 + batch)
    for _ in range(100):
        n = int(rng.integers(2, 10))
        d = float(rng.uniform(0.002, 0.2))
        v = _random_values(rng, n, d)
        v = v[np.isfinite(v)] if len(v[np.isfinite(v)]) >= 2 else np.array([0.1, 0.2])
        level = float(rng.choice([0.9, 0.95, 0.98]))
        est = one_sample_t(v, level)
        n = len(v)
        m, s = v.mean(), v.std(ddof=1)
        half = stats.t.ppf(0.5 + level / 2, n - 1) * s / math.sqrt(n)
        lo, hi = m - half, m + half
        no_spread = s <= 1e-9 * max(1.0, abs(m))
        got = directional_outcome(est, d, min_seeds=2)
        if no_spread:
            assert got == "not testable here"
        else:
            hits = [k for k, c in _directional_conditions(lo, hi, d).items() if c]
            assert len(hits) == 1 and got == hits[0]
        t = float(rng.normal(m, 3 * d))
        conds = {"holds": lo > t, "refuted": hi < t, "inconclusive": lo <= t <= hi}
        got = threshold_outcome(est, t, min_seeds=2)
        if no_spread:
            assert got == "not testable here"
        else:
            assert sum(conds.values()) == 1 and conds[got]
        band = float(rng.uniform(0.2, 3) * abs(m) + 1e-6)
        conds = {"holds": -band < lo and hi < band, "refuted": lo > band or hi < -band}
        conds["inconclusive"] = not any(conds.values())
        got = equivalence_outcome(est, band, min_seeds=2)
        if no_spread:
            assert got == "not testable here"
        else:
            assert sum(conds.values()) == 1 and conds[got]


@pytest.mark.parametrize("claim", ["training_symmetry", "chars_table_1"])
def test_property_a_claim_read_at_its_looks_gets_the_one_reading_its_rule_gives(claim):
    """The function that turns a rule and data into an outcome, read_sequential, with the rule
    in force (its looks, nominal levels and yardstick), on 300 random sets of per-seed paired
    differences: the first decided look, else the last complete one; a look with no spread or
    a seed with no number ends there, not testable; before the first look, not read.  Every
    reading is recomputed here from scipy's t quantiles."""
    from companion.rules.rulebook import claim_rule
    from companion.rules.sequential import NOT_READ, read_sequential

    rule = claim_rule(claim)
    looks, nominal, d = rule["looks"], rule["nominal"], rule["d"]
    rng = np.random.default_rng(hash(claim) % 2**32)
    seen = set()
    for _ in range(300):
        v = _random_values(rng, int(rng.integers(0, looks[-1] + 2)), d)
        reading = read_sequential(list(v), looks, nominal, d)
        complete = [k for k, n in enumerate(looks) if len(v) >= n]
        if not complete:
            assert (reading.look, reading.outcome) == (0, NOT_READ)
            seen.add(NOT_READ)
            continue
        want = None
        for k in complete:
            x = v[: looks[k]]
            if not np.isfinite(x).all() or x.std(ddof=1) <= 1e-9 * max(1.0, abs(x.mean())):
                want = (k + 1, "not testable here")
                break
            half = stats.t.ppf(1 - nominal[k], len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
            hits = [o for o, c in _directional_conditions(x.mean() - half, x.mean() + half, d).items() if c]
            assert len(hits) == 1
            want = (k + 1, hits[0])
            if hits[0] != "inconclusive":
                break
        assert (reading.look, reading.outcome) == want
        seen.add(want[1])
    assert {NOT_READ, "not testable here", "inconclusive", "refuted"} <= seen


def test_a_series_by_seed_beside_a_plain_list_is_refused_not_paired_by_position():
    """Seeds 1, 2, 3 beside a list of three: pandas paired seed 1 with the list's second value
    and seed 2 with its third, and dropped the rest, silently."""
    from companion.rules.statistics import paired_t

    by_seed = pd.Series([0.5, 0.6, 0.9], index=[1, 2, 3])
    for a, b in ((by_seed, [0.1, 0.2, 0.3]), ([0.1, 0.2, 0.3], by_seed), (by_seed, np.array([0.1, 0.2, 0.3]))):
        with pytest.raises(REFUSED) as err:
            paired_t(a, b)
        assert "Series" in _one_line(err) and "seed" in _one_line(err)
    positions = pd.Series([0.5, 0.6, 0.9])                        # labelled 0, 1, 2: its positions
    est = paired_t(positions, [0.1, 0.2, 0.3])
    assert est.values == pytest.approx((0.4, 0.4, 0.6))


@pytest.mark.parametrize("answer", [False, True, None, 0])
def test_a_gate_at_a_look_that_answers_other_than_text_is_refused(answer):
    """The look's gate returns '' when it passes and the reason when it fails; False (a gate
    that 'does not pass') read as passing."""
    from companion.rules.sequential import read_sequential

    v = [0.1, 0.12, 0.14, 0.13, 0.11, 0.12]
    with pytest.raises(REFUSED) as err:
        read_sequential(v, [3, 6], [0.001, 0.01], 0.02, gate=lambda look: answer)
    assert "gate" in _one_line(err)
    assert read_sequential(v, [3, 6], [0.001, 0.01], 0.02, gate=lambda look: "memorised").outcome == "not testable here"


@pytest.mark.parametrize("level", [1.0, 0.0, 1.5, float("nan")])
def test_the_power_of_an_equality_claim_at_no_confidence_level_is_refused(level):
    """Level 1 gave infinite intervals and so 'holds' with probability 0, silently."""
    from companion.rules.power import equivalence_power

    with pytest.raises(REFUSED) as err:
        equivalence_power(4, 0.05, 0.1, level=level, draws=100)
    assert "level" in _one_line(err)


@pytest.mark.parametrize("bad", [float("inf"), -float("inf"), float("nan")])
def test_a_seed_whose_value_is_infinite_is_read_as_a_nan_is_not_testable_naming_the_seed(bad):
    """An infinite end value (a diverged run) raised 'need at least one finite value per seed'
    from the whole rule, where a NaN read 'not testable here' naming the seed: the paired t
    drops exactly the seeds seeds_without_a_number names."""
    from companion.rules.rulebook import RULES_HISTORY, load_rules, rule
    from companion.rules.statistics import paired_t, seeds_without_a_number
    from companion.rules.training import apply_rule_to_pair

    seeds = [20, 21, 22, 23]
    s = lambda v: pd.Series(v, index=seeds, dtype=float)  # noqa: E731
    enc, dec = [0.31, 0.35, bad, 0.40], [0.05, 0.02, 0.08, 0.04]
    assert seeds_without_a_number(s(enc), s(dec)) == [22]
    kept = np.array([0.31 - 0.05, 0.35 - 0.02, 0.40 - 0.04])
    assert paired_t(s(enc), s(dec)).values == pytest.approx(tuple(kept))
    r = rule("training_symmetry", load_rules(RULES_HISTORY[2]))
    arms = (("encoder", "standard"), ("decoder", "standard"))
    pair = {"candidate": arms[0], "comparator": "decoder", "arms": arms, "end": (s(enc), s(dec)),
            "half": (s(enc), s(dec)), "seeds": seeds, "first_band": 0.0,
            "losses": {a: s([4.0] * 4) for a in arms}, "references": {a: 6.0 for a in arms},
            "gaps": {a: s([0.01] * 4) for a in arms}, "half_step": 5000}
    res = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], pair, {"sesoi": 0.05, "starts": []})
    assert res["outcome"] == "not testable here" and "seed(s) 22" in res["gate"]["why"]


def test_a_mask_given_to_the_beta_pair_statistics_is_refused_not_ignored():
    from companion.core.theory import beta_pair_statistics

    B = np.random.default_rng(14).normal(size=(6, 6))
    with pytest.raises(REFUSED) as err:
        beta_pair_statistics(B, allowed=np.tril(np.ones((6, 6), dtype=bool)))
    assert "allowed" in _one_line(err)
    iu = np.triu_indices(6, 1)
    assert beta_pair_statistics(B)["correlation"] == pytest.approx(np.corrcoef(B[iu], B.T[iu])[0, 1])


def _mc_power(effect, n, one_sided, draws=200_000, seed=15):
    """The chance that the interval's low end (one-sided level ``one_sided``) lies above 0 at a
    true effect ``effect`` and spread 1, by drawing the seeds."""
    x = effect + np.random.default_rng(seed).standard_normal((draws, n))
    low = x.mean(1) - stats.t.isf(one_sided, n - 1) * x.std(1, ddof=1) / math.sqrt(n)
    return float(np.mean(low > 0))


@pytest.mark.parametrize("n, level", [(2, 0.95), (3, 0.95), (2, 0.99999), (2, 0.999999), (2, 0.9999999), (3, 0.999999)])
def test_a_detectable_effect_has_the_power_it_states_or_is_refused(n, level):
    """At 2 seeds and a level near 1 scipy's non-central t is wrong without a warning: the
    effect said to be detected with probability 0.8 at 2 seeds and level 0.999999 was
    detected in 68% of 400,000 drawn pairs (here 200,000 draws check each value)."""
    from companion.base.errors import CompanionError
    from companion.rules.sequential import detectable_effect_interval
    from companion.rules.power import detectable_effect, directional_power

    one_sided = (1 - level) / 2
    calls = {"detectable_effect": lambda: detectable_effect(n, 1.0, level, 0.8),
             "detectable_effect_interval": lambda: detectable_effect_interval(n, 1.0, one_sided, 0.8)[1],
             "directional_power": lambda: directional_power(n, 1.0, 0.5, level, 0.8, draws=1000)["detect_holds"] - 0.5}
    for name, call in calls.items():
        try:
            effect = call()
        except CompanionError as err:
            assert "cannot be computed" in _one_line(err) and "level" in _one_line(err), name
            continue
        assert _mc_power(effect, n, one_sided) == pytest.approx(0.8, abs=0.006), name


@pytest.mark.parametrize("call, word", [
    (lambda T: T.norm_ratio_closed_form(np.ones((2, 3)), "context"), "Sigma"),            # gave a 2 x 2 answer
    (lambda T: T.norm_ratio_closed_form(np.array([[1.0, 0.5], [0.0, 1.0]]), "context"), "Sigma"),
    (lambda T: T.norm_ratio_monte_carlo(np.array([[1.0, 0.9], [0.0, 1.0]]), [1.0], "context", 10), "Sigma"),
    (lambda T: T.norm_ratio_monte_carlo(np.array([[1.0, 2.0], [2.0, 1.0]]), [1.0], "context", 10), "Sigma"),
    (lambda T: T.norm_ratio_monte_carlo(np.eye(2), [1.0], "context", 0), "n_samples"),   # gave NaN means
    (lambda T: T.masked_counts(np.array([[0, 1]]), 2, 0.5, 0), "n_draws"),                 # gave NaN counts
])
def test_a_covariance_that_is_none_or_no_samples_are_refused_by_the_norm_ratio_helpers(call, word):
    from companion.core import theory

    with pytest.raises(REFUSED) as err:
        call(theory)
    assert word in _one_line(err)


def test_the_norm_ratio_closed_form_is_eqs_s62_and_s67_by_hand():
    from companion.core.theory import norm_ratio_closed_form

    S = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 0.5]])
    tr = 3.5
    assert norm_ratio_closed_form(S, "context") == pytest.approx(
        np.array([[tr / (3 * S[m, m]) for m in range(3)] for _ in range(3)]))
    assert norm_ratio_closed_form(S, "prediction") == pytest.approx(
        np.array([[3 * S[k, k] / tr] * 3 for k in range(3)]))


def test_each_look_spends_what_the_spending_function_gives_it_by_drawing_brownian_paths():
    """The boundaries (Lan & DeMets): under no effect, the chance that |Z| first crosses at look
    k equals the spending function's increment there; 400,000 drawn paths of 12 seeds."""
    from companion.rules.sequential import boundaries

    looks, alpha = [3, 6, 9, 12], 0.05
    c = boundaries(looks, alpha)
    S = np.cumsum(np.random.default_rng(16).standard_normal((400_000, 12)), axis=1)
    Z = np.stack([S[:, n - 1] / math.sqrt(n) for n in looks], axis=1)
    crossed = np.abs(Z) >= c
    first = np.where(crossed.any(1), crossed.argmax(1), -1)
    t = np.array(looks) / 12
    spent = 2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / np.sqrt(t))   # O'Brien-Fleming type
    steps = np.diff(np.concatenate([[0.0], spent]))
    for k in range(4):
        assert np.mean(first == k) == pytest.approx(steps[k], abs=4 * math.sqrt(steps[k] / 400_000) + 1e-5)


_FORM_WEIGHTS = {
    "int8": (torch.tensor([[100, 120, -7], [90, -110, 5]], dtype=torch.int8),
             torch.tensor([[120, 100, 3], [-100, 90, 8]], dtype=torch.int8)),
    "float16 near 300": (torch.tensor([[300.0, 250.0], [200.0, -280.0]], dtype=torch.float16),
                         torch.tensor([[200.0, -280.0], [300.0, 250.0]], dtype=torch.float16)),
    "bfloat16 near 1e30": (torch.tensor([[1e30, -2e30], [3e30, 1e29]], dtype=torch.bfloat16),
                           torch.tensor([[2e30, 1e30], [-1e30, 3e30]], dtype=torch.bfloat16)),
    "bool": (torch.tensor([[True, False], [True, True]]), torch.tensor([[False, True], [True, True]])),
}


@pytest.mark.parametrize("name", list(_FORM_WEIGHTS))
def test_the_bilinear_form_of_integer_or_half_precision_weights_is_their_exact_product(name):
    """int8 weights gave a form that wrapped around (100 * 120 + 90 * -100 read -72), float16
    ones near 300 a form of inf, which the scores then refused as a broken checkpoint."""
    from companion.core.bilinear import bilinear_form, per_head_bilinear_forms
    from companion.core.scores import symmetry_score

    q, k = _FORM_WEIGHTS[name]
    exact = _f64(q).T @ _f64(k)
    assert _f64(bilinear_form(q, k)) == pytest.approx(exact, rel=1e-12)
    assert _f64(per_head_bilinear_forms(q, k, 2).sum(0)) == pytest.approx(exact, rel=1e-12)
    assert symmetry_score(bilinear_form(q, k)) == pytest.approx(_sym_by_hand(exact), rel=1e-12)


@pytest.mark.parametrize("kwargs, word", [
    ({"sequences": np.zeros((4, 1), dtype=int)}, "N >= 2"),          # 0 predictions: a loss of 0/0, NaN weights
    ({"sequences": np.array([[0, -1, 2]])}, "negative"),
    ({"eval_every": 0}, "eval_every"),                                 # a ZeroDivisionError
    ({"steps": -1}, "steps"),                                          # an empty table, silently
    ({"objective": "bidirectional", "mask_rate": float("nan")}, "mask_rate"),
])
def test_a_tiny_training_that_cannot_predict_or_record_is_refused_before_it_starts(kwargs, word):
    from companion.core.tiny_attention import train_objective

    args = {"sequences": np.array([[0, 1, 2, 1], [2, 1, 0, 0]]), "objective": "autoregressive", "steps": 2,
            "d": 4, "n_layers": 1, "n_heads": 1, "batch_size": 2, **kwargs}
    with pytest.raises(REFUSED) as err:
        train_objective(**args)
    assert word in _one_line(err)


@pytest.mark.parametrize("n_heads, wk_rows", [(0, 6), (4, 6), (2, 4), (True, 6)])
def test_qk_logits_with_heads_that_do_not_split_the_rows_are_refused_naming_them(n_heads, wk_rows):
    from companion.core.theory import qk_logits

    rng = np.random.default_rng(17)
    with pytest.raises(REFUSED) as err:
        qk_logits(rng.normal(size=(5, 3)), rng.normal(size=(6, 3)), rng.normal(size=(wk_rows, 3)), n_heads)
    assert "n_heads" in _one_line(err) or "heads" in _one_line(err)


def test_qk_logits_are_the_per_head_products_by_hand():
    from companion.core.theory import qk_logits

    rng = np.random.default_rng(18)
    X, Wq, Wk = rng.normal(size=(5, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    got = qk_logits(X, Wq, Wk, 3).numpy()
    for h in range(3):
        rows = slice(2 * h, 2 * h + 2)
        assert got[h] == pytest.approx((X @ Wq[rows].T) @ (X @ Wk[rows].T).T)


@pytest.mark.parametrize("stamp", [None, float("nan"), "", "yesterday", 20261205])
def test_a_run_date_that_is_no_timestamp_is_refused_naming_it(stamp):
    """None or NaN (a table's empty cell) raised AttributeError: 'float' object has no attribute 'year'."""
    import datetime as dt

    from companion.base.errors import CompanionError
    from companion.rules.verdicts import rule_written_after, started_before_rule

    r = {"fixed": dt.datetime(2026, 12, 6, tzinfo=dt.timezone.utc)}
    for call in (lambda: rule_written_after(r, ["2026-12-07T00:00:00Z", stamp]),
                 lambda: started_before_rule(stamp, r["fixed"])):
        with pytest.raises(CompanionError) as err:
            call()
        assert repr(stamp) in _one_line(err)
    # a stamp that is one: the 5th at 10:00 (+05:00) is before the rule, the 7th after it
    assert rule_written_after(r, ["2026-12-05T10:00:00+05:00"]) and not rule_written_after(r, ["2026-12-07T00:00:00Z"])


@pytest.mark.parametrize("raw, probs", [
    (np.array([[1.0, np.nan], [0.0, 2.0]]), np.array([[0.2, 0.8], [0.1, 0.9]])),   # read as 'order kept'
    (np.full((2, 2), np.nan), np.full((2, 2), 0.5)),
    (np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]), np.array([0.1, 0.3, 0.6])),      # broadcast row by row
])
def test_order_preserved_refuses_logits_it_cannot_compare(raw, probs):
    from companion.core.theory import order_preserved

    with pytest.raises(REFUSED) as err:
        order_preserved(raw, probs)
    assert "logits" in _one_line(err)


def test_order_preserved_is_eq_5_checked_pair_by_pair():
    from companion.core.theory import order_preserved

    raw = np.random.default_rng(19).normal(size=(3, 6))
    probs = np.exp(raw) / np.exp(raw).sum(-1, keepdims=True)
    assert order_preserved(raw, probs)
    swapped = probs.copy()
    i, j = np.argmin(raw[1]), np.argmax(raw[1])
    swapped[1, [i, j]] = swapped[1, [j, i]]
    assert not order_preserved(raw, swapped)


def test_structure_scores_refuse_a_matrix_given_with_one_factor():
    """structure_scores(M, Wq=...) scored M and ignored Wq."""
    from companion.core.scores import structure_scores

    with pytest.raises(REFUSED) as err:
        structure_scores(np.eye(3), Wq=np.ones((2, 3)))
    assert "either M" in _one_line(err)


@pytest.mark.parametrize("draws", [0, -5, 2.5, True])
def test_a_design_simulated_over_no_draws_is_refused(draws):
    """0 draws gave NaN for every outcome's probability."""
    from companion.rules.sequential import simulate_design

    with pytest.raises(REFUSED) as err:
        simulate_design(0.01, 0.05, [3, 6], [0.001, 0.01], 0.05, draws=draws)
    assert "draws" in _one_line(err)


@pytest.mark.parametrize("j_star", [-1, 5, 2.0, True])
def test_the_context_and_prediction_parts_refuse_a_token_position_outside_the_sequence(j_star):
    """j_star = -1 split the update at the last token, silently."""
    from companion.core.theory import context_prediction_parts

    rng = np.random.default_rng(20)
    with pytest.raises(REFUSED) as err:
        context_prediction_parts(rng.normal(size=(5, 3)), rng.normal(size=(5, 5)), j_star)
    assert "j_star" in _one_line(err)


def test_the_context_and_prediction_parts_are_eqs_s47_and_s50_by_hand():
    from companion.core.theory import context_prediction_parts

    rng = np.random.default_rng(21)
    X, B = rng.normal(size=(5, 3)), rng.normal(size=(5, 5))
    got = context_prediction_parts(X, B, 2)
    ctx = sum(B[i, 2] * np.outer(X[i], X[2]) for i in range(5))
    pred = sum(B[2, j] * np.outer(X[2], X[j]) for j in range(5))
    assert got["as_context"] == pytest.approx(ctx) and got["as_predicted"] == pytest.approx(pred)


def test_eq_15_as_printed_is_twice_def_3_1_and_refuses_a_non_square_matrix():
    from companion.core.theory import eq15_score

    M = np.random.default_rng(22).normal(size=(4, 4))
    assert eq15_score(M) == pytest.approx(2 * _sym_by_hand(M))
    with pytest.raises(REFUSED) as err:
        eq15_score(np.ones((2, 3)))
    assert "(2, 3)" in _one_line(err)
