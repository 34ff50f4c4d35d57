"""Rotary embeddings turn the query-key form into a family indexed by the offset j - i."""

import pytest
import torch

from companion.core.rope import rotary_matrix, rotated_key_factors


def test_rotary_matrix_is_a_rotation_and_identity_at_offset_zero():
    R = rotary_matrix(3.0, 8)
    assert torch.allclose(R.T @ R, torch.eye(8, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(rotary_matrix(0.0, 8), torch.eye(8, dtype=torch.float64))


def test_logit_of_rotated_query_and_key_depends_on_the_offset_only():
    torch.manual_seed(0)
    dh, d = 8, 5
    Wq, Wk = torch.randn(dh, d, dtype=torch.float64), torch.randn(dh, d, dtype=torch.float64)
    x, y = torch.randn(d, dtype=torch.float64), torch.randn(d, dtype=torch.float64)
    for i, j in ((0, 0), (2, 7), (10, 15), (7, 2)):
        q = rotary_matrix(i, dh) @ Wq @ x
        k = rotary_matrix(j, dh) @ Wk @ y
        form = Wq.T @ rotary_matrix(j - i, dh) @ Wk
        assert torch.allclose(q @ k, x @ form @ y, atol=1e-10)


def test_rotation_matches_the_hugging_face_rotate_half_convention():
    from transformers.models.llama.modeling_llama import rotate_half

    dh, pos, base = 8, 5.0, 10000.0
    q = torch.randn(dh, dtype=torch.float64)
    inv = 1.0 / base ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh)
    ang = torch.cat([pos * inv, pos * inv])
    hf = q * torch.cos(ang) + rotate_half(q) * torch.sin(ang)
    assert torch.allclose(rotary_matrix(pos, dh, base) @ q, hf, atol=1e-12)


def test_rotated_key_factors_needs_per_head_factors():
    with pytest.raises(ValueError, match="n_heads, d_head, d"):
        rotated_key_factors(torch.zeros(4, 4), 1.0)
    with pytest.raises(ValueError, match="even"):
        rotary_matrix(1.0, 3)
