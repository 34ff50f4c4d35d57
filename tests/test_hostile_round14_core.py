"""Hostile round 14: the mathematics of the query-key form (companion.core).

The scores (Defs. 3.1-3.2) against closed forms for special matrices (permutations,
triangular, block-diagonal, rotations, rank-1 pairs) and the invariances the definitions do
and do not have; the bilinear form with heads in another order; the appendix helpers with
inputs of the wrong shape, NaN parameters and one Monte Carlo sample; rotary embeddings
against the formula at far offsets and with numpy inputs; the random-matrix null (low-rank
draws scored from their factors against the same draws formed, seeds beyond 64 bits, its
summary by hand); the tiny attention model's gradients against autograd and the rank-1 sum of
Prop. 2.2, its causal mask, and its refusals of tokens, masks, objectives and seeds.

Each case states the right behaviour: a value computed apart from the code under test (numpy
by hand, autograd, a closed form), or a one-line refusal naming the input.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import torch

from one_line import one_line as _one_line

REFUSED = ValueError


def _sym(M):
    M = np.asarray(M, dtype=np.float64)
    return float((M * M.T).sum() / (M * M).sum())


def _outlier_mass(n, gamma, variant="excess"):
    t = n.mean() + gamma * n.std(ddof=1)
    out = n - t > 1e-12 * n.max()
    return float(((n - t) if variant == "excess" else n)[out].sum())


def _dir(M, gamma=2.0, variant="excess"):
    M = np.asarray(M, dtype=np.float64)
    R = _outlier_mass(np.linalg.norm(M, axis=1), gamma, variant)
    C = _outlier_mass(np.linalg.norm(M, axis=0), gamma, variant)
    return 0.0 if R + C == 0 else (R - C) / (R + C)


# ============================================================ (a) the scores: closed forms

@pytest.mark.parametrize("perm", [[0, 1, 2, 3, 4, 5], [1, 0, 3, 2, 5, 4], [1, 2, 0, 3, 4, 5],
                                  [1, 2, 3, 4, 5, 0], [1, 0, 2, 4, 5, 3]])
def test_symmetry_of_a_permutation_is_the_share_of_points_its_square_fixes(perm):
    """tr(P^2) counts the i with p(p(i)) = i (fixed points and 2-cycles), ||P||^2 = n."""
    from companion.core.scores import symmetry_score

    P = np.eye(len(perm))[perm]
    want = sum(perm[perm[i]] == i for i in range(len(perm))) / len(perm)
    assert symmetry_score(P) == pytest.approx(want, abs=1e-15)


def test_symmetry_of_a_triangular_matrix_is_the_share_of_its_diagonal():
    """M strictly triangular off the diagonal: tr(M M) = sum of the squared diagonal."""
    from companion.core.scores import symmetry_score

    U = np.triu(np.arange(1.0, 26.0).reshape(5, 5))
    want = float((np.diag(U) ** 2).sum() / (U ** 2).sum())
    assert symmetry_score(U) == pytest.approx(want, rel=1e-14)
    assert symmetry_score(U.T) == pytest.approx(want, rel=1e-14)
    assert symmetry_score(np.triu(U, 1)) == 0.0          # nilpotent: tr(M^2) = 0


@pytest.mark.parametrize("theta", [0.0, 0.3, math.pi / 4, 1.2, math.pi / 2, 2.5])
def test_symmetry_of_a_plane_rotation_is_cos_two_theta(theta):
    """R(t) = [[c, -s], [s, c]]: tr(R^2) = 2 cos 2t and ||R||^2 = 2."""
    from companion.core.scores import symmetry_score

    R = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    assert symmetry_score(R) == pytest.approx(math.cos(2 * theta), abs=1e-14)


def test_symmetry_of_a_block_diagonal_matrix_is_the_norm_weighted_mean_of_its_blocks():
    from companion.core.scores import symmetry_score

    g = np.random.default_rng(1)
    A, B = g.normal(size=(3, 3)), 4.0 * g.normal(size=(2, 2))
    M = np.zeros((5, 5))
    M[:3, :3], M[3:, 3:] = A, B
    want = (np.trace(A @ A) + np.trace(B @ B)) / ((A ** 2).sum() + (B ** 2).sum())
    assert symmetry_score(M) == pytest.approx(want, rel=1e-13)


def test_symmetry_and_directionality_of_minus_m_equal_those_of_m():
    """tr((-M)^2) = tr(M^2) and the norms of -M are those of M."""
    from companion.core.scores import directionality_score, symmetry_score

    M = np.random.default_rng(2).normal(size=(6, 6))
    M[:, 1] *= 6
    assert symmetry_score(-M) == pytest.approx(_sym(M), abs=1e-14)
    assert directionality_score(-M, gamma=1.0) == pytest.approx(_dir(M, 1.0), abs=1e-14)


def test_symmetry_is_not_invariant_under_a_similarity_that_is_not_orthogonal():
    """Def. 3.1 is invariant under Q M Q^T with Q orthogonal only: S M S^-1 with S a shear
    keeps the spectrum (so tr(M^2)) but not ||M||_F."""
    from companion.core.scores import symmetry_score

    M = np.array([[1.0, 2.0], [0.0, 3.0]])
    S = np.array([[1.0, 5.0], [0.0, 1.0]])
    N = S @ M @ np.linalg.inv(S)
    assert symmetry_score(N) == pytest.approx(_sym(N), abs=1e-14)
    assert abs(symmetry_score(N) - symmetry_score(M)) > 0.1


def test_symmetry_is_not_invariant_under_a_one_sided_rotation():
    from companion.core.scores import symmetry_score

    M = np.diag([3.0, 1.0, 2.0])                             # symmetric: s = 1
    Q, _ = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))
    assert symmetry_score(M) == 1.0
    assert symmetry_score(Q @ M) == pytest.approx(_sym(Q @ M), abs=1e-14)
    assert symmetry_score(Q @ M) < 0.99


def test_directionality_is_invariant_under_permuting_rows_or_columns():
    """Row norms of P M are a permutation of those of M and its column norms are the same."""
    from companion.core.scores import directionality_score

    g = np.random.default_rng(4)
    M = g.normal(size=(8, 8))
    M[2] *= 5
    M[:, 6] *= 3
    P = np.eye(8)[g.permutation(8)]
    want = _dir(M, 1.0)
    assert want != 0.0
    for N in (P @ M, M @ P, P @ M @ P.T):
        assert directionality_score(N, gamma=1.0) == pytest.approx(want, abs=1e-13)


def test_directionality_is_not_invariant_under_an_orthogonal_similarity():
    """Q M Q^T mixes the rows: a heavy column of M is spread over all columns."""
    from companion.core.scores import directionality_score

    M = np.ones((6, 6))
    M[:, 0] = 10.0
    Q, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(6, 6)))
    N = Q @ M @ Q.T
    assert directionality_score(M) == pytest.approx(_dir(M), abs=1e-13) and _dir(M) == -1.0
    assert directionality_score(N) == pytest.approx(_dir(N), abs=1e-12)
    assert directionality_score(N) != pytest.approx(-1.0, abs=1e-3)


@pytest.mark.parametrize("gamma", [0.0, 1.0, 2.0])
def test_directionality_of_a_rank_one_form_from_its_two_vectors(gamma):
    """uv^T: row i has norm |u_i| ||v||, column j has norm |v_j| ||u||."""
    from companion.core.scores import directionality_score, directionality_score_factored

    u = np.array([1.0, 0.5, 8.0, 0.7, 1.1, 0.9])
    v = np.array([1.0, 1.2, 0.8, 1.1, 0.9, 1.0])
    rows, cols = np.abs(u) * np.linalg.norm(v), np.abs(v) * np.linalg.norm(u)
    R, C = _outlier_mass(rows, gamma), _outlier_mass(cols, gamma)
    want = 0.0 if R + C == 0 else (R - C) / (R + C)
    assert directionality_score(np.outer(u, v), gamma=gamma) == pytest.approx(want, abs=1e-13)
    assert directionality_score_factored(u[None], v[None], gamma=gamma) == pytest.approx(want, abs=1e-12)
    assert directionality_score(np.outer(v, u), gamma=gamma) == pytest.approx(-want, abs=1e-13)


def test_factored_symmetry_of_a_rank_one_pair_is_the_squared_cosine():
    """Wq = u^T, Wk = v^T (one row each): M = u v^T and s = (u.v)^2 / (|u|^2 |v|^2)."""
    from companion.core.scores import structure_scores, symmetry_score_factored

    u, v = np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.5, 1.0, 4.0, -1.0])
    want = (u @ v) ** 2 / ((u @ u) * (v @ v))
    assert symmetry_score_factored(u[None], v[None]) == pytest.approx(want, rel=1e-13)
    assert structure_scores(Wq=u[None], Wk=v[None], factored=True)["symmetry"] == pytest.approx(want, rel=1e-13)
    assert symmetry_score_factored(u[None], u[None]) == pytest.approx(1.0, abs=1e-15)


def test_directionality_of_a_diagonal_matrix_is_zero_whatever_its_outliers():
    """Row i and column i of a diagonal matrix have the same norm: R = C."""
    from companion.core.scores import directionality_score

    D = np.diag([1.0, 1.0, 1.0, 1.0, 50.0, 1.0])
    for gamma in (0.0, 1.0, 2.0):
        for variant in ("excess", "eq18"):
            assert directionality_score(D, gamma=gamma, variant=variant) == 0.0


def test_a_stack_of_rank_four_scores_each_matrix_in_place():
    from companion.core.scores import directionality_score, symmetry_score

    g = np.random.default_rng(6)
    stack = g.normal(size=(2, 3, 5, 5))
    stack[..., 0, :] *= 4
    s, d = symmetry_score(stack), directionality_score(stack, gamma=1.0)
    assert s.shape == (2, 3) and d.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert s[i, j] == pytest.approx(_sym(stack[i, j]), abs=1e-13)
            assert d[i, j] == pytest.approx(_dir(stack[i, j], 1.0), abs=1e-13)


@pytest.mark.parametrize("kind", ["numpy", "torch64", "torch32"])
def test_scoring_leaves_the_input_unchanged(kind):
    from companion.core.scores import directionality_score, structure_scores, symmetry_score

    g = np.random.default_rng(7)
    q, k = g.normal(size=(2, 9)) * 3, g.normal(size=(2, 9)) * 5
    if kind == "numpy":
        wq, wk, M = q.copy(), k.copy(), q.T @ k
    else:
        dt = torch.float64 if kind == "torch64" else torch.float32
        wq, wk = torch.tensor(q, dtype=dt), torch.tensor(k, dtype=dt)
        M = wq.T @ wk
    as64 = lambda x: (x.numpy() if isinstance(x, torch.Tensor) else x).astype(np.float64)  # noqa: E731
    before = [as64(x).copy() for x in (wq, wk, M)]
    symmetry_score(M), directionality_score(M)
    for factored in (True, False):
        structure_scores(Wq=wq, Wk=wk, factored=factored)
    for x, b in zip((wq, wk, M), before):
        np.testing.assert_array_equal(as64(x), b)


# ============================================================ (b) the scores: odd inputs

def test_a_ragged_nested_list_is_refused_naming_the_matrix():
    """numpy's own 'inhomogeneous shape' message named no input."""
    from companion.core.scores import directionality_score, symmetry_score

    for f in (symmetry_score, directionality_score):
        with pytest.raises(REFUSED, match=r"\bM\b") as err:
            f([[1.0, 2.0], [3.0]])
        _one_line(err)


def test_a_read_only_array_is_scored_without_a_warning():
    """torch warned of 'undefined behavior' on writing to a read-only array that is never written."""
    from companion.core.scores import structure_scores, symmetry_score

    M = np.array([[1.0, 2.0], [2.0, 5.0]])
    M.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert symmetry_score(M) == 1.0
        assert structure_scores(Wq=M, Wk=M, factored=True)["symmetry"] == pytest.approx(1.0)


@pytest.mark.parametrize("gamma", [Fraction(1), Fraction(3, 2), np.float32(1.0), np.int64(2)])
def test_gamma_given_as_any_real_number_is_used_as_its_value(gamma):
    """A Fraction passed the check and then raised a raw TypeError inside torch."""
    from companion.core.scores import directionality_score, directionality_score_factored, structure_scores

    g = np.random.default_rng(8)
    q, k = g.normal(size=(3, 7)), g.normal(size=(3, 7))
    q[:, 2] *= 6
    M = q.T @ k
    want = _dir(M, float(gamma))
    assert directionality_score(M, gamma=gamma) == pytest.approx(want, abs=1e-12)
    assert directionality_score_factored(q, k, gamma=gamma) == pytest.approx(want, abs=1e-12)
    assert structure_scores(Wq=q, Wk=k, gamma=gamma)["directionality"] == pytest.approx(want, abs=1e-12)


def test_an_empty_stack_gives_empty_scores_without_warnings():
    """torch warned 'degrees of freedom is <= 0' for a stack of no matrices."""
    from companion.core.scores import directionality_score, structure_scores, symmetry_score

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert symmetry_score(np.zeros((0, 3, 3))).shape == (0,)
        assert directionality_score(np.zeros((0, 3, 3))).shape == (0,)
        got = structure_scores(Wq=np.zeros((0, 2, 7)), Wk=np.zeros((0, 2, 7)))
        assert got["directionality"].shape == (0,)


# ============================================================ (c) the bilinear form

def test_heads_in_another_order_change_the_head_forms_not_the_layer_form():
    """Permuting the heads of Wq and Wk together permutes the M_h and keeps M = sum_h M_h;
    permuting only the query heads pairs each query with another key head."""
    from companion.core.bilinear import bilinear_form, per_head_bilinear_forms

    g = np.random.default_rng(9)
    H, dh, d = 3, 2, 5
    Wq, Wk = g.normal(size=(H * dh, d)), g.normal(size=(H * dh, d))
    order = [2, 0, 1]
    rows = np.concatenate([np.arange(h * dh, (h + 1) * dh) for h in order])
    per = per_head_bilinear_forms(Wq, Wk, H).numpy()
    np.testing.assert_allclose(per_head_bilinear_forms(Wq[rows], Wk[rows], H).numpy(), per[order], atol=1e-13)
    np.testing.assert_allclose(bilinear_form(Wq[rows], Wk[rows], H).numpy(), Wq.T @ Wk, atol=1e-12)
    mixed = sum(Wq[rows][h * dh:(h + 1) * dh].T @ Wk[h * dh:(h + 1) * dh] for h in range(H))
    np.testing.assert_allclose(bilinear_form(Wq[rows], Wk, H).numpy(), mixed, atol=1e-12)
    assert np.abs(mixed - Wq.T @ Wk).max() > 0.1


@pytest.mark.parametrize("bad", [np.array([[1.0, None]], dtype=object), [["a", "b"]]])
def test_bilinear_form_refuses_weights_that_are_not_numbers_in_one_line(bad):
    """torch raised "can't convert np.ndarray of type numpy.object_", naming no input."""
    from companion.core.bilinear import bilinear_form, layer_factors

    for f in (bilinear_form, layer_factors):
        with pytest.raises(REFUSED, match="Wq") as err:
            f(bad, np.ones((1, 2)), 1)
        _one_line(err)


def test_long_double_weights_give_the_form_of_their_float64_values():
    """torch has no long double: "can't convert np.ndarray of type numpy.longdouble" before."""
    from companion.core.bilinear import bilinear_form, per_head_bilinear_forms

    g = np.random.default_rng(20)
    Wq, Wk = g.normal(size=(4, 3)), g.normal(size=(4, 3))
    got = bilinear_form(Wq.astype(np.longdouble), Wk.astype(np.longdouble), 2)
    np.testing.assert_allclose(got.numpy(), Wq.T @ Wk, rtol=1e-13)
    per = per_head_bilinear_forms(Wq.astype(np.longdouble), Wk, 2).numpy()
    np.testing.assert_allclose(per, np.stack([Wq[:2].T @ Wk[:2], Wq[2:].T @ Wk[2:]]), rtol=1e-13)


# ============================================================ (d) the appendix helpers

def test_bilinear_logits_of_a_batch_of_sequences_is_each_sequence_s_own_form():
    """X.T of a [B, N, d] batch reversed all three axes: with B = N = d the logits came out
    as numbers mixing the sequences, with only a deprecation warning."""
    from companion.core.theory import bilinear_logits

    g = np.random.default_rng(10)
    X, M = g.normal(size=(4, 4, 4)), g.normal(size=(4, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = bilinear_logits(X, M).numpy()
    np.testing.assert_allclose(got, np.stack([x @ M @ x.T for x in X]), atol=1e-12)
    Ms = g.normal(size=(3, 4, 4))                       # a stack of head forms on one sequence
    np.testing.assert_allclose(bilinear_logits(X[0], Ms).numpy(), np.stack([X[0] @ m @ X[0].T for m in Ms]),
                               atol=1e-12)


@pytest.mark.parametrize("X,M", [(np.ones((3, 2)), np.ones((3, 3))), (np.ones((3, 2)), np.ones((2, 3)))])
def test_bilinear_logits_refuses_shapes_that_do_not_pair_naming_them(X, M):
    from companion.core.theory import bilinear_logits

    with pytest.raises(REFUSED, match="M") as err:
        bilinear_logits(X, M)
    _one_line(err)


def test_operator_square_factor_refuses_vectors_of_another_width():
    from companion.core.theory import operator_square_factor

    with pytest.raises(REFUSED, match="x_i") as err:
        operator_square_factor(np.eye(3), np.ones(2), np.ones(3))
    _one_line(err)


def test_operator_square_factor_by_hand():
    """P(x) = (x^T M x_j) x_j; c = x_j^T M x_j and P(P(x)) = c P(x) exactly."""
    from companion.core.theory import operator_square_factor

    M = np.array([[2.0, 1.0], [0.0, 3.0]])
    c, err = operator_square_factor(M, np.array([1.0, 1.0]), np.array([1.0, 2.0]))
    assert c == 1 * 2 + 2 * (1 * 1 + 2 * 3) and err == pytest.approx(0.0, abs=1e-12)


def test_proof_beta_linear_refuses_widths_that_differ():
    from companion.core.theory import proof_beta_linear

    with pytest.raises(REFUSED, match="delta") as err:
        proof_beta_linear(np.ones((3, 2)), np.ones((3, 4)))
    _one_line(err)


@pytest.mark.parametrize("alpha_shape", [(3,), (1, 3), (2, 3)])
def test_softmax_beta_refuses_attention_of_another_shape(alpha_shape):
    """A row of attention weights [N] was broadcast over every query silently."""
    from companion.core.theory import softmax_beta

    g = np.random.default_rng(11)
    with pytest.raises(REFUSED, match="alpha") as err:
        softmax_beta(g.normal(size=(3, 2)), g.normal(size=(3, 2)), np.full(alpha_shape, 1 / 3))
    _one_line(err)


def test_softmax_beta_is_the_gradient_of_the_loss_with_respect_to_the_raw_logits():
    from companion.core.theory import softmax_beta

    g = torch.Generator().manual_seed(12)
    X = torch.randn(4, 3, generator=g, dtype=torch.float64)
    delta = torch.randn(4, 3, generator=g, dtype=torch.float64)
    a = torch.randn(4, 4, generator=g, dtype=torch.float64, requires_grad=True)
    alpha = torch.softmax(a, dim=-1)
    (delta * (alpha @ X)).sum().backward()
    beta = softmax_beta(delta, X, alpha.detach())
    np.testing.assert_allclose(beta.numpy(), a.grad.numpy(), atol=1e-14)
    np.testing.assert_allclose(beta.sum(-1).numpy(), 0.0, atol=1e-14)


def test_update_from_beta_refuses_batches_of_different_sizes():
    from companion.core.theory import update_from_beta

    with pytest.raises(REFUSED, match="beta") as err:
        update_from_beta(np.ones((2, 3, 2)), np.ones((3, 3, 3)))
    _one_line(err)


@pytest.mark.parametrize("gap", [float("nan"), float("inf"), "0"])
def test_order_preserved_refuses_a_min_gap_that_is_no_distance(gap):
    """min_gap NaN skipped every pair and read any order, even a reversed one, as kept."""
    from companion.core.theory import order_preserved

    with pytest.raises(REFUSED, match="min_gap") as err:
        order_preserved([[1.0, 2.0, 3.0]], [[0.5, 0.3, 0.2]], min_gap=gap)
    _one_line(err)


def test_order_preserved_skips_only_pairs_closer_than_min_gap():
    from companion.core.theory import order_preserved

    raw = [[0.0, 1.0, 1.05]]
    probs = [[0.1, 0.5, 0.4]]                  # the close pair (1.0, 1.05) reversed, the rest kept
    assert order_preserved(raw, probs) is False
    assert order_preserved(raw, probs, min_gap=0.1) is True
    assert order_preserved(raw, [[0.5, 0.1, 0.4]], min_gap=0.1) is False


@pytest.mark.parametrize("sigma_y", [float("nan"), float("inf"), "1"])
def test_norm_ratio_monte_carlo_refuses_a_sigma_y_that_is_no_scale(sigma_y):
    """NaN or inf gave a table of NaN or inf norms without a word; text a raw UFuncTypeError."""
    from companion.core.theory import norm_ratio_monte_carlo

    with pytest.raises(REFUSED, match="sigma_y") as err:
        norm_ratio_monte_carlo(np.eye(2), [1.0], "context", 10, sigma_y=sigma_y)
    _one_line(err)


def test_one_monte_carlo_sample_has_no_standard_error():
    """The standard error of one sample came out 0 (std with ddof 0), as if the mean were exact."""
    from companion.core.theory import norm_ratio_monte_carlo

    one = norm_ratio_monte_carlo(np.eye(3), [1.0, 0.5], "context", 1, seed=3)
    assert np.isnan(one["col_se"]).all() and np.isnan(one["row_se"]).all()
    many = norm_ratio_monte_carlo(np.eye(3), [1.0, 0.5], "prediction", 50, seed=3)
    # the standard error of a mean: the sample standard deviation (n - 1) over sqrt(n), checked
    # through the identity ||row m||^2 = a_m^2 ||b||^2 on a fresh draw of the same seed
    rng = np.random.default_rng(3)
    z = rng.standard_normal((50, 2, 3))
    v = np.einsum("i,sid->sd", np.array([1.0, 0.5]), z)
    y = rng.standard_normal((50, 3))
    row2 = y ** 2 * (v ** 2).sum(1, keepdims=True)
    np.testing.assert_allclose(many["row"], row2.mean(0), rtol=1e-12)
    np.testing.assert_allclose(many["row_se"], row2.std(0, ddof=1) / math.sqrt(50), rtol=1e-12)


@pytest.mark.parametrize("Sigma,case", [(np.diag([1.0, 0.0]), "context"), (np.zeros((2, 2)), "context"),
                                        (np.zeros((2, 2)), "prediction")])
def test_closed_form_norm_ratio_refuses_to_divide_by_a_zero_variance(Sigma, case):
    """The context ratio divides by each variance, the prediction ratio by their sum: inf or
    NaN ratios came back with only a RuntimeWarning."""
    from companion.core.theory import norm_ratio_closed_form

    with pytest.raises(REFUSED, match="Sigma") as err:
        norm_ratio_closed_form(Sigma, case)
    _one_line(err)


def test_closed_form_prediction_ratio_of_a_dimension_without_variance_is_zero():
    """d Sigma_kk / Tr(Sigma): a dimension of no variance has expected column norm 0."""
    from companion.core.theory import norm_ratio_closed_form

    np.testing.assert_allclose(norm_ratio_closed_form(np.diag([1.0, 0.0]), "prediction"), [[2.0, 2.0], [0.0, 0.0]])


def test_closed_form_norm_ratios_by_hand():
    """Eqs. S62 and S67 for Sigma = diag(1, 2, 3): Tr = 6, d = 3."""
    from companion.core.theory import norm_ratio_closed_form

    S = np.diag([1.0, 2.0, 3.0])
    ctx = norm_ratio_closed_form(S, "context")
    pred = norm_ratio_closed_form(S, "prediction")
    np.testing.assert_allclose(ctx[0], [6 / 3, 6 / 6, 6 / 9], rtol=1e-15)
    np.testing.assert_allclose(pred[:, 0], [3 / 6, 6 / 6, 9 / 6], rtol=1e-15)


@pytest.mark.parametrize("beta", [np.full((3, 3), np.nan), np.array([[0, np.inf], [1.0, 0]])])
def test_beta_pair_statistics_refuses_non_finite_coefficients(beta):
    """NaN coefficients read as 'no pair shares a sign' (same_sign 0.0) and none zero."""
    from companion.core.theory import beta_pair_statistics

    with pytest.raises(REFUSED, match="beta") as err:
        beta_pair_statistics(beta)
    _one_line(err)


@pytest.mark.parametrize("beta", [np.ones(3), np.ones((3, 4)), np.ones((1, 1))])
def test_beta_pair_statistics_refuses_a_beta_without_pairs(beta):
    """A vector or a non-square beta raised a raw IndexError; a 1 x 1 one averaged an empty slice."""
    from companion.core.theory import beta_pair_statistics

    with pytest.raises(REFUSED, match="beta") as err:
        beta_pair_statistics(beta)
    _one_line(err)


def test_beta_pair_statistics_of_symmetric_and_antisymmetric_coefficients():
    from companion.core.theory import beta_pair_statistics

    A = np.random.default_rng(14).normal(size=(6, 6))
    sym, skew = beta_pair_statistics(A + A.T), beta_pair_statistics(A - A.T)
    assert sym["correlation"] == pytest.approx(1.0) and sym["same_sign"] == 1.0 and sym["one_zero"] == 0.0
    assert skew["correlation"] == pytest.approx(-1.0) and skew["same_sign"] == 0.0
    causal = beta_pair_statistics(np.tril(A))
    assert causal["one_zero"] == 1.0


@pytest.mark.parametrize("p,N", [("0.5", 10), (0.5, "10"), (None, 10)])
def test_symmetric_update_share_refuses_text_in_one_line(p, N):
    from companion.core.theory import symmetric_update_share

    with pytest.raises(REFUSED) as err:
        symmetric_update_share(p, N)
    _one_line(err)


def test_symmetric_update_share_by_hand():
    """p = 0.3, N = 10: three masked tokens, 3*2 masked pairs over 3*7 cross pairs."""
    from companion.core.theory import symmetric_update_share

    got = symmetric_update_share(0.3, 10)
    assert got["ratio_exact"] == pytest.approx(6 / 21)
    assert got["ratio_limit"] == pytest.approx(0.3 / 0.7)
    assert got["share_of_all"] == pytest.approx(2 / 9)


def test_autoregressive_counts_by_hand():
    """Two sequences of three tokens: an occurrence at position k (1-based) is context for
    N - k later tokens and predicted by k - 1 earlier ones."""
    from companion.core.theory import autoregressive_counts, positional_expectations

    seqs = np.array([[0, 1, 0], [2, 2, 1]])
    mu_c, mu_p = autoregressive_counts(seqs, 4)
    np.testing.assert_allclose(mu_c, [(2 + 0) / 2, (1 + 0) / 2, (2 + 1) / 2, 0.0])
    np.testing.assert_allclose(mu_p, [(0 + 2) / 2, (1 + 2) / 2, (0 + 1) / 2, 0.0])
    e_c, e_p = positional_expectations(seqs, 4)
    np.testing.assert_allclose(e_c, mu_c) and np.testing.assert_allclose(e_p, mu_p)


@pytest.mark.parametrize("call", ["autoregressive_counts", "masked_counts", "s79_expectation"])
def test_counts_over_no_sequence_are_refused_not_nan(call):
    """Means over zero sequences came out NaN with only numpy's 'invalid value' warning."""
    from companion.core import theory as th

    seqs = np.zeros((0, 4), dtype=int)
    calls = {"autoregressive_counts": lambda: th.autoregressive_counts(seqs, 3),
             "masked_counts": lambda: th.masked_counts(seqs, 3, 0.5, 2),
             "s79_expectation": lambda: th.s79_expectation(seqs, 3, 0.5)}
    with pytest.raises(REFUSED, match="seqs") as err:
        calls[call]()
    _one_line(err)


def test_masked_counts_of_one_sequence_match_the_exact_expectation():
    """One sequence [0, 1, 2] at rate rho: an occurrence is context for the masked others when it
    is unmasked, (1 - rho) (N - 1) rho on average, which s79_expectation states."""
    from companion.core.theory import masked_counts, s79_expectation

    rho, N = 0.3, 3
    mu_c, mu_p = masked_counts(np.array([[0, 1, 2]]), 3, rho, 4000, seed=2)
    want = (1 - rho) * (N - 1) * rho
    np.testing.assert_allclose(s79_expectation(np.array([[0, 1, 2]]), 3, rho), want)
    # per draw the count lies in {0, 1, 2}: its standard deviation is below 1, so 4000 draws give
    # a standard error below 0.016
    np.testing.assert_allclose(mu_c, want, atol=0.07)
    np.testing.assert_allclose(mu_p, want, atol=0.07)


# ============================================================ (e) rotary embeddings

@pytest.mark.parametrize("delta", [1.0, 37.0, 4096.0, 131072.0, -65537.0])
def test_rotary_angles_match_the_formula_at_far_offsets(delta):
    """The (k, k + d/2) block of R(delta) rotates by delta * base^(-2k/d), computed in Python floats."""
    from companion.core.rope import rotary_matrix

    d_head, base = 16, 500000.0
    R = rotary_matrix(delta, d_head, base).numpy()
    for k in range(d_head // 2):
        a = delta * base ** (-2 * k / d_head)
        blk = R[np.ix_([k, k + d_head // 2], [k, k + d_head // 2])]
        np.testing.assert_allclose(blk, [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], atol=1e-9)


def test_rotary_matrices_compose_and_invert():
    from companion.core.rope import rotary_matrix

    a, b = 3.0, 11.0
    np.testing.assert_allclose((rotary_matrix(a, 8) @ rotary_matrix(b, 8)).numpy(),
                               rotary_matrix(a + b, 8).numpy(), atol=1e-12)
    np.testing.assert_allclose(rotary_matrix(-a, 8).numpy(), rotary_matrix(a, 8).numpy().T, atol=1e-15)


@pytest.mark.parametrize("delta,base", [(np.array(3.0), 10000.0), (3.0, np.array(10000.0)),
                                        (torch.tensor(3.0), 10000.0), (np.float32(3.0), np.int64(10000))])
def test_rotary_matrix_accepts_numpy_and_torch_scalars(delta, base):
    """A 0-d numpy array passed the check and then raised a raw TypeError inside torch."""
    from companion.core.rope import rotary_matrix

    got = rotary_matrix(delta, 4, base)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), rotary_matrix(3.0, 4, 10000.0).numpy(), atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex128])
def test_rotary_matrix_refuses_a_dtype_that_cannot_hold_a_rotation(dtype):
    from companion.core.rope import rotary_matrix

    with pytest.raises(REFUSED, match="dtype") as err:
        rotary_matrix(1.0, 4, dtype=dtype)
    _one_line(err)


def test_rotated_key_factors_of_numpy_heads_equal_those_of_torch_heads():
    """numpy key factors raised "'numpy.ndarray' object has no attribute 'to'"."""
    from companion.core.rope import rotated_key_factors

    K = np.random.default_rng(15).normal(size=(2, 4, 3))
    got = rotated_key_factors(K, 2.0)
    np.testing.assert_allclose(got.numpy(), rotated_key_factors(torch.tensor(K), 2.0).numpy(), atol=0)


def test_rotated_key_factors_refuse_complex_keys():
    """A complex key factor was cast to real, its imaginary part dropped with only a UserWarning."""
    from companion.core.rope import rotated_key_factors

    with pytest.raises(REFUSED, match="complex") as err:
        rotated_key_factors(torch.ones(2, 4, 3, dtype=torch.complex64), 1.0)
    _one_line(err)


def test_rotated_key_factors_give_the_logits_of_rotated_heads_at_two_positions():
    """sum_h x^T Q_h^T R(j - i) K_h y equals the sum over heads of (R(i) Q_h x) . (R(j) K_h y),
    with R applied in the Hugging Face rotate_half layout written out here."""
    from companion.core.rope import rotated_key_factors

    g = torch.Generator().manual_seed(16)
    H, dh, d, base = 3, 6, 5, 10000.0
    Q = torch.randn(H, dh, d, generator=g, dtype=torch.float64)
    K = torch.randn(H, dh, d, generator=g, dtype=torch.float64)
    x, y = torch.randn(d, generator=g, dtype=torch.float64), torch.randn(d, generator=g, dtype=torch.float64)
    inv = base ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)

    def rope(v, pos):
        ang = torch.cat([pos * inv, pos * inv])
        half = torch.cat([-v[dh // 2:], v[:dh // 2]])
        return v * torch.cos(ang) + half * torch.sin(ang)

    for i, j in ((0, 0), (3, 9), (9, 3), (100, 4000)):
        want = sum(float(rope(Q[h] @ x, i) @ rope(K[h] @ y, j)) for h in range(H))
        RK = rotated_key_factors(K, j - i, base)
        got = float(x @ sum(Q[h].T @ RK[h] for h in range(H)) @ y)
        assert got == pytest.approx(want, rel=1e-10, abs=1e-10)


# ============================================================ (f) the random-matrix null

def test_low_rank_null_scores_from_factors_equal_the_scores_of_the_formed_draws():
    """null_scores(rank=r) scores the factors; random_bilinear_forms forms the same draws."""
    from companion.core.null import null_scores, random_bilinear_forms
    from companion.core.scores import directionality_score

    table = null_scores(7, n_samples=6, rank=2, seed=5, gamma=1.0, device="cpu")
    Ms = random_bilinear_forms(7, 6, rank=2, seed=5, device="cpu").numpy()
    np.testing.assert_allclose(table["symmetry"].to_numpy(), [_sym(M) for M in Ms], atol=1e-12)
    np.testing.assert_allclose(table["directionality"].to_numpy(), directionality_score(Ms, gamma=1.0), atol=1e-12)
    assert all(np.linalg.matrix_rank(M) <= 2 for M in Ms)


def test_the_seed_of_a_low_rank_null_changes_the_draws_and_repeats_them():
    from companion.core.null import null_scores

    a = null_scores(6, n_samples=5, rank=3, seed=1, device="cpu")["symmetry"].to_numpy()
    b = null_scores(6, n_samples=5, rank=3, seed=1, device="cpu")["symmetry"].to_numpy()
    c = null_scores(6, n_samples=5, rank=3, seed=2, device="cpu")["symmetry"].to_numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_the_mean_symmetry_of_a_rank_one_null_is_one_over_d():
    """M = q k^T with independent Gaussian q, k: s = cos^2(q, k), whose mean is 1/d."""
    from companion.core.null import null_scores

    d = 5
    s = null_scores(d, n_samples=4000, rank=1, seed=3, device="cpu")["symmetry"].to_numpy()
    assert (s >= 0).all()
    se = s.std(ddof=1) / math.sqrt(len(s))
    assert abs(s.mean() - 1 / d) < 4 * se


@pytest.mark.parametrize("seed", [2 ** 70, -(2 ** 70)])
def test_a_null_seed_beyond_64_bits_is_refused_in_one_line(seed):
    """np.isfinite raised a raw TypeError on an int too large for a float's C type."""
    from companion.core.null import null_scores, random_bilinear_forms

    with pytest.raises(REFUSED, match="seed") as err:
        null_scores(3, 2, seed=seed, device="cpu", shipped=False)
    _one_line(err)
    with pytest.raises(REFUSED, match="seed"):
        random_bilinear_forms(3, 2, seed=seed, device="cpu")


@pytest.mark.parametrize("mbb", ["1", None])
def test_null_scores_refuse_a_batch_size_that_is_no_number_of_bytes(mbb):
    """Text or None raised a raw TypeError from the batch arithmetic."""
    from companion.core.null import null_scores

    with pytest.raises(REFUSED, match="max_batch_bytes") as err:
        null_scores(3, 2, seed=0, device="cpu", max_batch_bytes=mbb, shipped=False)
    _one_line(err)


def test_null_summary_of_a_table_without_its_columns_is_refused_naming_them():
    from companion.core.null import null_summary

    with pytest.raises(REFUSED, match="symmetry") as err:
        null_summary(pd.DataFrame({"d": [3], "rank": [-1], "sample": [0]}))
    _one_line(err)


def test_null_summary_by_hand():
    from companion.core.null import null_summary

    t = pd.DataFrame({"d": 4, "rank": -1, "sample": range(5), "symmetry": [0.1, 0.4, -0.2, 0.3, 0.0],
                      "directionality": [0.0, 0.0, 1.0, 0.0, -1.0]})
    s = null_summary(t, quantiles=(0.5,)).set_index("score")
    assert s.loc["symmetry", "mean"] == pytest.approx(0.12)
    assert s.loc["symmetry", "std"] == pytest.approx(math.sqrt(((np.array([0.1, 0.4, -0.2, 0.3, 0.0]) - 0.12) ** 2)
                                                               .sum() / 4))
    assert s.loc["symmetry", "q0.5"] == pytest.approx(0.1) and s.loc["directionality", "q0.5"] == 0.0
    assert s.loc["directionality", "n"] == 5


_BIG = 10 ** 400   # a Python int beyond float's range


@pytest.mark.parametrize("name", ["gamma", "null d", "null n_samples", "null law d", "rotary delta", "rotary base",
                                  "share N", "min_gap", "sigma_y", "lemma A", "eta"])
def test_an_integer_beyond_float_range_is_refused_naming_it(name):
    """math.isfinite(10**400) raised a raw OverflowError ('int too large to convert to float')."""
    from companion.core import null, rope, scores, theory, tiny_attention

    calls = {
        "gamma": (lambda: scores.directionality_score(np.eye(3), gamma=_BIG), "gamma"),
        "null d": (lambda: null.null_scores(_BIG, 2, device="cpu"), "d"),
        "null n_samples": (lambda: null.null_scores(3, _BIG, device="cpu"), "n_samples"),
        "null law d": (lambda: null.symmetry_null_law(_BIG), "d"),
        "rotary delta": (lambda: rope.rotary_matrix(_BIG, 4), "delta"),
        "rotary base": (lambda: rope.rotary_matrix(1.0, 4, base=_BIG), "base"),
        "share N": (lambda: theory.symmetric_update_share(0.5, _BIG), "N"),
        "min_gap": (lambda: theory.order_preserved([[1.0, 2.0]], [[0.3, 0.7]], min_gap=_BIG), "min_gap"),
        "sigma_y": (lambda: theory.norm_ratio_monte_carlo(np.eye(2), [1.0], "context", 3, sigma_y=_BIG), "sigma_y"),
        "lemma A": (lambda: theory.lemma_s111_counterexample(A=_BIG), "A"),
        "eta": (lambda: tiny_attention.implicit_update_errors([_BIG], d=4, N=3, vocab=5), "eta"),
    }
    call, word = calls[name]
    with pytest.raises(REFUSED, match=word) as err:
        call()
    _one_line(err)


# ============================================================ (g) the tiny attention model

def test_multi_head_projection_gradients_are_rank_one_sums_per_head():
    """Prop. 2.2 with separate projections: dL/dM_h = sum_ij beta_ij^h x_i x_j^T = G_h, and
    M_h = Wq_h^T Wk_h gives dL/dWq_h = Wk_h G_h^T and dL/dWk_h = Wq_h G_h (against autograd)."""
    from companion.core.theory import update_from_beta
    from companion.core.tiny_attention import TinyAttentionModel, next_token_loss

    m = TinyAttentionModel(9, d=6, n_layers=2, n_heads=3, max_len=7, seed=3).double()
    tok = torch.randint(0, 9, (2, 7), generator=torch.Generator().manual_seed(0))
    next_token_loss(m, tok).backward()
    for layer, b in enumerate(m.blocks):
        X = m.store["inputs"][layer].detach()
        for h in range(3):
            G = update_from_beta(X, m.store["scores"][layer].grad[:, h])
            sl = slice(2 * h, 2 * h + 2)
            np.testing.assert_allclose(b.q.weight.grad[sl].numpy(), (b.k.weight[sl].detach() @ G.T).numpy(),
                                       atol=1e-12)
            np.testing.assert_allclose(b.k.weight.grad[sl].numpy(), (b.q.weight[sl].detach() @ G).numpy(),
                                       atol=1e-12)


def test_the_tiny_model_s_layer_forms_are_the_package_s_bilinear_forms():
    from companion.core.bilinear import bilinear_form
    from companion.core.tiny_attention import TinyAttentionModel, bilinear_forms

    m = TinyAttentionModel(7, d=8, n_layers=2, n_heads=4, seed=2)
    for b, M in zip(m.blocks, bilinear_forms(m)):
        want = bilinear_form(b.q.weight.detach(), b.k.weight.detach(), 4)
        np.testing.assert_allclose(M.numpy(), want.numpy(), atol=1e-6)


def test_the_causal_model_s_logits_do_not_see_later_tokens_and_the_full_one_s_do():
    from companion.core.tiny_attention import TinyAttentionModel

    m = TinyAttentionModel(11, d=8, n_layers=2, n_heads=2, seed=4).double()
    a = torch.tensor([[1, 5, 2, 7, 3]])
    b = a.clone()
    b[0, 3] = 9
    with torch.no_grad():
        ca, cb = m(a, "causal"), m(b, "causal")
        fa, fb = m(a, "full"), m(b, "full")
    np.testing.assert_allclose(ca[0, :3].numpy(), cb[0, :3].numpy(), atol=0)
    assert (ca[0, 3:] - cb[0, 3:]).abs().max() > 1e-6
    assert (fa[0, :3] - fb[0, :3]).abs().max() > 1e-6


def test_the_one_step_change_of_m_is_first_order_plus_exactly_the_stated_remainder():
    """Remark S1.6: M1 - M0 - first = eta^2 G M0^T G, so 'error' equals 'remainder'."""
    from companion.core.tiny_attention import implicit_update_errors

    t = implicit_update_errors([0.3, 0.01], seed=1, d=6, N=5, vocab=7)
    np.testing.assert_allclose(t["error"], t["remainder"], rtol=1e-8)
    assert (t["grad_check"] < 1e-12).all()
    assert t["error"].iloc[0] / t["error"].iloc[1] == pytest.approx((0.3 / 0.01) ** 2, rel=1e-6)


@pytest.mark.parametrize("eta", [float("nan"), float("inf")])
def test_implicit_update_errors_refuse_a_learning_rate_that_is_no_step(eta):
    """NaN gave a row of NaN errors, inf a NaN change and an infinite remainder."""
    from companion.core.tiny_attention import implicit_update_errors

    with pytest.raises(REFUSED, match="eta") as err:
        implicit_update_errors([0.1, eta], d=4, N=3, vocab=5)
    _one_line(err)


@pytest.mark.parametrize("objective", ["autoregresive", "Bidirectional", "masked", None])
def test_objective_loss_refuses_an_objective_it_does_not_know(objective):
    """Any name but 'autoregressive' (a typo included) trained the masked objective silently."""
    from companion.core.tiny_attention import TinyAttentionModel, objective_loss

    with pytest.raises(REFUSED, match="objective") as err:
        objective_loss(TinyAttentionModel(5, d=4), torch.tensor([[1, 2, 3]]), objective, torch.Generator(), 4)
    _one_line(err)


def test_objective_loss_counts_its_predictions():
    from companion.core.tiny_attention import TinyAttentionModel, next_token_loss, objective_loss

    m = TinyAttentionModel(6, d=4, seed=0)
    batch = torch.tensor([[1, 2, 3, 4], [0, 1, 2, 3]])
    loss, n = objective_loss(m, batch, "autoregressive", torch.Generator(), 5)
    assert n == 6 and float(loss.detach()) == pytest.approx(float(next_token_loss(m, batch).detach()))
    loss, n = objective_loss(m, batch, "bidirectional", torch.Generator().manual_seed(0), 5, mask_rate=0.5)
    assert 2 <= n <= 8


@pytest.mark.parametrize("rate", [float("nan"), 0.0, 1.5, -1])
def test_objective_loss_refuses_a_mask_rate_that_is_no_share(rate):
    """NaN, 0 or -1 masked one position a sequence (the fallback) and 1.5 every position, silently."""
    from companion.core.tiny_attention import TinyAttentionModel, objective_loss

    with pytest.raises(REFUSED, match="mask_rate") as err:
        objective_loss(TinyAttentionModel(6, d=4), torch.tensor([[1, 2, 3, 4]]), "bidirectional",
                       torch.Generator().manual_seed(0), 5, mask_rate=rate)
    _one_line(err)


@pytest.mark.parametrize("mask_id", [7, -1, 2.5])
def test_masked_token_loss_refuses_a_mask_id_outside_the_vocabulary_naming_it(mask_id):
    """The refusal named the token ids ('got 2 to 7') as if the sequence were at fault."""
    from companion.core.tiny_attention import TinyAttentionModel, masked_token_loss

    with pytest.raises(REFUSED, match="mask_id") as err:
        masked_token_loss(TinyAttentionModel(5, d=4), torch.tensor([[1, 2, 3]]),
                          torch.tensor([[True, False, False]]), mask_id)
    _one_line(err)


@pytest.mark.parametrize("masked", [torch.tensor([True, False, False]), torch.tensor([[1, 0, 0]]),
                                    np.array([[True, False, False]])])
def test_masked_token_loss_refuses_a_mask_of_another_shape_or_type(masked):
    from companion.core.tiny_attention import TinyAttentionModel, masked_token_loss

    with pytest.raises(REFUSED, match="masked") as err:
        masked_token_loss(TinyAttentionModel(5, d=4), torch.tensor([[1, 2, 3]]), masked, 4)
    _one_line(err)


@pytest.mark.parametrize("tokens", [torch.tensor([1, 2]), torch.ones(1, 2, 2, dtype=torch.long),
                                    torch.tensor([[1.0, 2.0]]), [[1, 2]]])
def test_the_tiny_model_refuses_tokens_that_are_not_a_batch_of_ids(tokens):
    """A 1-D tensor raised 'not enough values to unpack', floats a raw embedding error."""
    from companion.core.tiny_attention import TinyAttentionModel

    with pytest.raises(REFUSED, match="tokens") as err:
        TinyAttentionModel(5, d=4)(tokens)
    _one_line(err)


@pytest.mark.parametrize("seed", [1.5, True, float("nan")])
def test_the_tiny_model_refuses_a_seed_that_is_not_whole(seed):
    """seed=1.5 (or True) built the model of seed 1 without a word; NaN a raw 'cannot convert'."""
    from companion.core.tiny_attention import TinyAttentionModel

    with pytest.raises(REFUSED, match="seed") as err:
        TinyAttentionModel(5, d=4, seed=seed)
    _one_line(err)


@pytest.mark.parametrize("bad", [True, "1", 10 ** 400, float("nan")])
def test_the_counterexample_refuses_a_scale_that_is_no_finite_number_in_one_line(bad):
    """True read as a scale of 1 and text raised a raw TypeError from math.isfinite."""
    from companion.core.theory import lemma_s111_counterexample

    with pytest.raises(ValueError, match="A=.* must be a finite number > 0"):
        lemma_s111_counterexample(A=bad)


def test_the_counterexample_takes_numpy_scales_as_their_values():
    import numpy as np

    from companion.core.theory import lemma_s111_counterexample

    got = lemma_s111_counterexample(A=np.float32(1.5), K=np.int64(5))
    assert got["var_a"] == pytest.approx(1.5 ** 2 / 3) and got["z"] == pytest.approx(0.5 * (1.5 + 5))
