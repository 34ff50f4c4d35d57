"""The properties of the two structure scores that the paper states or implies.

Def. 3.1 / Lemma S1.16 / Prop. S1.17 for symmetry, Def. 3.2 / Prop. S1.18 for
directionality.  Each test is named after the claim it checks.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from companion.core.scores import (
    directionality_score,
    directionality_score_factored,
    structure_scores,
    symmetry_score,
    symmetry_score_factored,
)

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@st.composite
def square_matrices(draw, min_d=2, max_d=12):
    d = draw(st.integers(min_d, max_d))
    M = draw(arrays(np.float64, (d, d), elements=finite))
    return M


@st.composite
def nonzero_square_matrices(draw, min_d=2, max_d=12):
    M = draw(square_matrices(min_d, max_d))
    if not np.any(np.abs(M) > 1e-6):
        M = M + np.eye(M.shape[0])
    return M


# ---------------------------------------------------------------- symmetry (Def. 3.1)

@given(square_matrices())
def test_symmetry_score_lies_in_minus_one_to_one(M):
    s = symmetry_score(M)
    assert np.isnan(s) if not M.any() else -1.0 <= s <= 1.0   # the zero matrix has no score (0/0)


@given(nonzero_square_matrices())
def test_symmetry_score_equals_norm_difference_of_symmetric_and_skew_parts(M):
    """s = (||M_s||^2 - ||M_n||^2) / ||M||^2, i.e. Eq. 15 without its factor 2."""
    Ms, Mn = (M + M.T) / 2, (M - M.T) / 2
    expected = (np.sum(Ms**2) - np.sum(Mn**2)) / np.sum(M**2)
    assert symmetry_score(M) == pytest.approx(expected, abs=1e-9)


@given(nonzero_square_matrices())
def test_frobenius_norm_splits_into_symmetric_and_skew_parts(M):
    """Lemma S1.16: ||M||^2 = ||M_s||^2 + ||M_n||^2."""
    Ms, Mn = (M + M.T) / 2, (M - M.T) / 2
    assert np.sum(M**2) == pytest.approx(np.sum(Ms**2) + np.sum(Mn**2), rel=1e-12)


@given(nonzero_square_matrices())
def test_symmetry_score_is_invariant_under_transpose(M):
    assert symmetry_score(M.T) == pytest.approx(symmetry_score(M), abs=1e-12)


@given(nonzero_square_matrices(), st.floats(1e-3, 1e3) | st.floats(-1e3, -1e-3))
def test_symmetry_score_is_invariant_under_scaling(M, c):
    assert symmetry_score(c * M) == pytest.approx(symmetry_score(M), abs=1e-9)


@given(nonzero_square_matrices(max_d=8), st.integers(0, 2**31 - 1))
def test_symmetry_score_is_invariant_under_orthogonal_similarity(M, seed):
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal(M.shape))
    assert symmetry_score(Q @ M @ Q.T) == pytest.approx(symmetry_score(M), abs=1e-8)


@given(nonzero_square_matrices())
def test_symmetric_matrices_score_plus_one(M):
    assert symmetry_score(M + M.T + 1e-3 * np.eye(len(M))) == pytest.approx(1.0, abs=1e-12)


@given(nonzero_square_matrices())
def test_skew_symmetric_matrices_score_minus_one(M):
    S = M - M.T
    if np.sum(S**2) < 1e-12:
        S = np.triu(np.ones_like(M), 1) - np.tril(np.ones_like(M), -1)
    assert symmetry_score(S) == pytest.approx(-1.0, abs=1e-12)


def test_symmetry_of_a_zero_matrix_is_undefined():
    # Def. 3.1 divides by ||M||_F^2 = 0: NaN, never a 0.0 to be averaged in
    assert np.isnan(symmetry_score(np.zeros((5, 5))))


# ---------------------------------------------------------------- directionality (Def. 3.2)

@given(square_matrices(), st.floats(0.0, 4.0), st.sampled_from(["excess", "eq18"]))
def test_directionality_score_lies_in_minus_one_to_one(M, gamma, variant):
    d = directionality_score(M, gamma=gamma, variant=variant)
    assert np.isnan(d) if not M.any() else -1.0 <= d <= 1.0   # the zero matrix has no score (0/0)


@given(nonzero_square_matrices(min_d=3), st.sampled_from(["excess", "eq18"]))
def test_directionality_flips_sign_under_transpose(M, variant):
    assert directionality_score(M.T, variant=variant) == pytest.approx(
        -directionality_score(M, variant=variant), abs=1e-12)


@given(nonzero_square_matrices(min_d=3), st.floats(1e-3, 1e3))
def test_directionality_is_invariant_under_positive_scaling(M, c):
    assert directionality_score(c * M) == pytest.approx(directionality_score(M), abs=1e-9)


@st.composite
def column_outlier_matrices(draw):
    """Every row equal (so no row can be an outlier) and a few columns much larger."""
    d = draw(st.integers(8, 40))
    base = draw(arrays(np.float64, d, elements=st.floats(-1.0, 1.0)))
    k = draw(st.integers(0, d - 1))
    base[k] = draw(st.floats(50.0, 500.0)) * draw(st.sampled_from([-1.0, 1.0]))
    return np.ones((d, 1)) @ base[None, :]


@given(column_outlier_matrices(), st.sampled_from(["excess", "eq18"]))
def test_matrix_whose_only_outliers_are_columns_scores_minus_one(M, variant):
    assert directionality_score(M, variant=variant) == -1.0


@given(column_outlier_matrices())
def test_matrix_whose_only_outliers_are_rows_scores_plus_one(M):
    assert directionality_score(M.T) == 1.0


def test_directionality_is_zero_without_outliers():
    assert directionality_score(np.eye(6)) == 0.0
    assert np.isnan(directionality_score(np.zeros((6, 6))))   # no norm at all: undefined, not 0


def test_excess_variant_sums_excess_and_eq18_sums_norms():
    """One column outlier of norm c sqrt(d) among zero-norm rows/columns, computed by hand."""
    d = 10
    M = np.zeros((d, d))
    M[:, 3] = 1.0                      # column 3 has norm sqrt(d); every row has norm 1
    M[0, 0] = 1.0                      # row 0 now has norm sqrt(2): the one row outlier
    rows = np.linalg.norm(M, axis=1)
    cols = np.linalg.norm(M, axis=0)
    tr = rows.mean() + 2 * rows.std(ddof=1)
    tc = cols.mean() + 2 * cols.std(ddof=1)
    R_exc, C_exc = np.sum(np.clip(rows - tr, 0, None)), np.sum(np.clip(cols - tc, 0, None))
    R_18, C_18 = np.sum(rows[rows > tr]), np.sum(cols[cols > tc])
    assert R_exc > 0 and C_exc > 0
    assert directionality_score(M) == pytest.approx((R_exc - C_exc) / (R_exc + C_exc))
    assert directionality_score(M, variant="eq18") == pytest.approx((R_18 - C_18) / (R_18 + C_18))


# ---------------------------------------------------------------- factored == dense

@st.composite
def factor_pairs(draw):
    r = draw(st.integers(1, 6))
    d = draw(st.integers(3, 14))
    el = st.floats(-10, 10, allow_nan=False)
    return draw(arrays(np.float64, (r, d), elements=el)), draw(arrays(np.float64, (r, d), elements=el))


def _unit(W):
    """W divided by its largest entry: a positive rescaling, so M's scores do not change, and
    the dense product of rescaled factors cannot underflow (2.2e-311 squared is 0)."""
    peak = np.abs(W).max()
    return W / peak if peak > 0 else W


@given(factor_pairs())
def test_factored_symmetry_equals_dense(pair):
    Wq, Wk = pair
    dense = symmetry_score(_unit(Wq).T @ _unit(Wk))
    assert symmetry_score_factored(Wq, Wk) == pytest.approx(dense, abs=1e-9, nan_ok=True)   # both NaN for M = 0


def test_factored_symmetry_of_subnormal_factors_is_that_of_their_direction():
    # the draw that showed the dense reference underflowing: M = u u^T is symmetric (s = 1)
    Wq = Wk = np.full((1, 3), 2.22507386e-311)
    assert symmetry_score_factored(Wq, Wk) == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=200)
@given(factor_pairs(), st.sampled_from(["excess", "eq18"]))
def test_factored_directionality_equals_dense(pair, variant):
    Wq, Wk = pair
    M = _unit(Wq).T @ _unit(Wk)
    if np.abs(M).max() < 1e-6:
        return  # an all-zero form: both give 0, nothing to compare
    dense = directionality_score(M, variant=variant)
    fact = directionality_score_factored(Wq, Wk, variant=variant)
    # an exact tie with the threshold can fall either side of round-off; such draws are rare
    norms = np.concatenate([np.linalg.norm(M, axis=0), np.linalg.norm(M, axis=1)])
    assert fact == pytest.approx(dense, abs=1e-6) or np.ptp(norms) < 1e-6


def test_factored_scores_accept_stacks_of_heads():
    g = torch.Generator().manual_seed(0)
    Q = torch.randn(4, 8, 32, generator=g)
    K = torch.randn(4, 8, 32, generator=g)
    dense = (Q.transpose(-1, -2) @ K).double()
    np.testing.assert_allclose(symmetry_score_factored(Q, K), symmetry_score(dense), atol=1e-6)
    np.testing.assert_allclose(directionality_score_factored(Q, K), directionality_score(dense), atol=1e-6)
    assert structure_scores(Wq=Q, Wk=K)["symmetry"].shape == (4,)


# ---------------------------------------------------------------- inputs, dtypes, devices

def test_stack_returns_array_and_single_matrix_returns_float():
    M = np.random.default_rng(0).standard_normal((3, 2, 5, 5))
    s = symmetry_score(M)
    assert isinstance(s, np.ndarray) and s.shape == (3, 2)
    assert isinstance(symmetry_score(M[0, 0]), float)
    np.testing.assert_allclose(s[1, 1], symmetry_score(M[1, 1]))


def test_scores_do_not_depend_on_storage_dtype_beyond_rounding():
    M = torch.randn(64, 64, generator=torch.Generator().manual_seed(1))
    for dt, tol in ((torch.float32, 1e-6), (torch.bfloat16, 1e-2), (torch.float16, 1e-3)):
        assert symmetry_score(M.to(dt)) == pytest.approx(symmetry_score(M.to(dt).double()), abs=1e-12)
        assert symmetry_score(M.to(dt)) == pytest.approx(symmetry_score(M), abs=tol)


def test_numpy_and_torch_inputs_agree():
    M = np.random.default_rng(2).standard_normal((20, 20))
    assert symmetry_score(M) == symmetry_score(torch.from_numpy(M))
    assert directionality_score(M) == directionality_score(torch.from_numpy(M))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_gpu_input_gives_the_cpu_result():
    M = torch.randn(128, 128, dtype=torch.float64)
    assert symmetry_score(M.cuda()) == pytest.approx(symmetry_score(M), abs=1e-12)
    assert directionality_score(M.cuda()) == pytest.approx(directionality_score(M), abs=1e-12)


@pytest.mark.parametrize("bad, message", [
    (np.ones((3, 4)), "square"),
    (np.ones(5), "square matrix"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN or Inf"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), "NaN or Inf"),
    (np.array([["a", "b"], ["c", "d"]]), "numeric"),
    ("not a matrix", "numeric"),
    ({"a": 1}, "NumPy array or a torch tensor"),
])
def test_bad_input_raises_a_value_error_naming_the_problem(bad, message):
    with pytest.raises(ValueError, match=message):
        symmetry_score(bad)
    with pytest.raises(ValueError, match=message):
        directionality_score(bad)


def test_directionality_rejects_unknown_variant_and_negative_gamma():
    with pytest.raises(ValueError, match="variant"):
        directionality_score(np.eye(3), variant="eq19")
    with pytest.raises(ValueError, match="gamma"):
        directionality_score(np.eye(3), gamma=-1)
    with pytest.raises(ValueError, match="at least 2"):
        directionality_score(np.eye(1))


def test_factored_rejects_mismatched_factors():
    with pytest.raises(ValueError, match="same shape"):
        symmetry_score_factored(np.ones((2, 5)), np.ones((3, 5)))


# ---------------------------------------------------------------- scale invariance (issue: underflow)

def test_factored_symmetry_of_a_tiny_key_factor_is_exact():
    # The draw that once turned CI red: M = Wq^T Wk has a single non-zero column, so
    # tr(M^2) = M_00^2 and ||M||^2 = 3 M_00^2, i.e. s = 1/3 exactly (closed form).  The
    # Gram products of the factors used to underflow into subnormals and give 0.335.
    Wq = np.array([[2.0, 2.0, 2.0]])
    Wk = np.array([[1.6e-161, 0.0, 0.0]])
    assert symmetry_score_factored(Wq, Wk) == pytest.approx(1 / 3, abs=1e-12)
    assert symmetry_score(Wq.T @ Wk) == pytest.approx(1 / 3, abs=1e-12)


scales = st.sampled_from([1e-300, 1e-200, 1e-161, 1e-100, 1e-50, 1.0, 1e50, 1e100, 1e154, 1e200, 1e300])


@given(nonzero_square_matrices(max_d=8), scales)
def test_dense_scores_do_not_depend_on_the_scale_of_M(M, c):
    # Both scores are ratios of homogeneous functions of M, so s(cM) = s(M) and
    # d(cM) = d(M) for every c > 0; the reference is the score of M at its own scale.
    M = M / np.abs(M).max()  # a well-scaled reference whose entries are in [-1, 1]
    assert symmetry_score(c * M) == pytest.approx(symmetry_score(M), abs=1e-9)
    assert directionality_score(c * M) == pytest.approx(directionality_score(M), abs=1e-9)


@given(factor_pairs(), scales, scales)
def test_factored_scores_do_not_depend_on_the_scale_of_either_factor(pair, a, b):
    Wq, Wk = pair
    if np.abs(Wq).max() < 1e-6 or np.abs(Wk).max() < 1e-6:
        return  # an all-zero factor: both scores are 0 at every scale
    ref_dense = Wq.T @ Wk  # entries bounded by 10 * 10 * 6: no under/overflow here
    if np.abs(ref_dense).max() < 1e-6:
        return
    # independent reference: the dense score of the well-scaled product
    assert symmetry_score_factored(a * Wq, b * Wk) == pytest.approx(symmetry_score(ref_dense), abs=1e-9)
    norms = np.concatenate([np.linalg.norm(ref_dense, axis=0), np.linalg.norm(ref_dense, axis=1)])
    d_fact = directionality_score_factored(a * Wq, b * Wk)
    assert d_fact == pytest.approx(directionality_score(ref_dense), abs=1e-6) or np.ptp(norms) < 1e-6


def test_structure_scores_of_huge_square_factors_are_finite():
    g = np.random.default_rng(3)
    Wq, Wk = g.standard_normal((6, 6)), g.standard_normal((6, 6))
    ref = structure_scores(Wq=Wq, Wk=Wk)
    big = structure_scores(Wq=1e200 * Wq, Wk=1e200 * Wk)  # the dense product alone would be inf
    assert big["symmetry"] == pytest.approx(ref["symmetry"], abs=1e-12)
    assert big["directionality"] == pytest.approx(ref["directionality"], abs=1e-12)


@pytest.mark.parametrize("make", [lambda a: a.astype(np.complex128), lambda a: torch.from_numpy(a).to(torch.complex128)])
def test_complex_input_is_refused_not_silently_made_real(make):
    M = np.eye(3) + 1j * 0  # even a zero imaginary part: the caller must decide
    with pytest.raises(ValueError, match="complex"):
        symmetry_score(make(np.real(M)))
    with pytest.raises(ValueError, match="complex"):
        directionality_score_factored(make(np.ones((2, 3))), np.ones((2, 3)))
