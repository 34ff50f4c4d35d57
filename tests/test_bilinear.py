"""The bilinear form of a layer equals the attention logits it stands for (Eq. 2, S20)."""

import numpy as np
import pytest
import torch

from companion.core.bilinear import bilinear_form, head_factors, kv_head_index, per_head_bilinear_forms


def test_logit_of_each_head_is_x_transpose_M_h_y():
    g = torch.Generator().manual_seed(0)
    d, H, dh = 16, 4, 4
    Wq, Wk = torch.randn(H * dh, d, generator=g), torch.randn(H * dh, d, generator=g)
    x, y = torch.randn(d, generator=g), torch.randn(d, generator=g)
    q, k = (Wq @ x).reshape(H, dh), (Wk @ y).reshape(H, dh)
    Mh = per_head_bilinear_forms(Wq, Wk, H)
    for h in range(H):
        assert torch.allclose(x @ Mh[h] @ y, q[h] @ k[h], atol=1e-4)
    assert torch.allclose(x @ bilinear_form(Wq, Wk, H) @ y, (q * k).sum(), atol=1e-3)


def test_multi_head_form_is_sum_of_head_forms_and_equals_wq_t_wk():
    g = torch.Generator().manual_seed(1)
    Wq, Wk = torch.randn(12, 6, generator=g), torch.randn(12, 6, generator=g)
    M = bilinear_form(Wq, Wk, n_heads=3)
    assert torch.allclose(M, per_head_bilinear_forms(Wq, Wk, 3).sum(0), atol=1e-5)
    assert torch.allclose(M, Wq.T @ Wk, atol=1e-5)


def test_each_head_form_has_rank_at_most_d_head():
    g = torch.Generator().manual_seed(2)
    Mh = per_head_bilinear_forms(torch.randn(8, 32, generator=g), torch.randn(8, 32, generator=g), 4)
    assert all(int(torch.linalg.matrix_rank(m)) <= 2 for m in Mh)


def test_grouped_query_pairing_matches_repeat_kv():
    # 6 query heads, 2 kv heads: heads 0,1,2 read kv head 0; heads 3,4,5 read kv head 1
    assert kv_head_index(6, 2) == [0, 0, 0, 1, 1, 1]
    assert kv_head_index(6, 2, pairing="modulo") == [0, 1, 0, 1, 0, 1]
    g = torch.Generator().manual_seed(3)
    Wq, Wk = torch.randn(6 * 2, 5, generator=g), torch.randn(2 * 2, 5, generator=g)
    _, K = head_factors(Wq, Wk, 6, 2)
    assert torch.equal(K[2], Wk[0:2]) and torch.equal(K[3], Wk[2:4])


def test_bad_head_counts_are_explained():
    with pytest.raises(ValueError, match="multiple"):
        kv_head_index(6, 4)
    with pytest.raises(ValueError, match="divisible"):
        head_factors(np.ones((10, 4)), np.ones((10, 4)), n_heads=3)
    with pytest.raises(ValueError, match="expected n_kv_heads"):
        head_factors(np.ones((12, 4)), np.ones((6, 4)), n_heads=6, n_kv_heads=2)
