"""The score API (``companion.core.scores``, ``bilinear_form``) and the range of the weights it
is given: masked arrays, long doubles beyond float64, sparse, quantized, nested, meta and
rank-0 tensors are scored as the matrices they hold or refused in one line; float64 weights
far outside float32 (safetensors or GGUF) and factors that would underflow score as at unit
scale."""

from __future__ import annotations

import numpy as np
import pytest

import malformed as bad
from companion.core.scores import directionality_score, symmetry_score


# ---------------------------------------------------------------- arrays that are not plain matrices


def test_a_masked_array_with_masked_entries_is_refused_and_an_unmasked_one_is_scored():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((6, 6))
    masked = np.ma.masked_array(M, mask=np.eye(6, dtype=bool))
    with pytest.raises(ValueError, match="6 masked entries"):
        symmetry_score(masked)
    unmasked = np.ma.masked_array(M, mask=False)
    assert symmetry_score(unmasked) == pytest.approx(symmetry_score(M), abs=0)
    assert directionality_score(unmasked) == pytest.approx(directionality_score(M), abs=0)


@pytest.mark.skipif(np.finfo(np.longdouble).maxexp <= np.finfo(np.float64).maxexp,
                    reason="long double is float64 on this platform")
def test_a_long_double_matrix_beyond_float64_is_refused_and_rescaled_it_scores_right():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((5, 5))
    tiny = M.astype(np.longdouble) * np.longdouble("1e-4000")
    with pytest.raises(ValueError, match="outside float64's range"):
        symmetry_score(tiny)
    rescaled = (tiny / np.abs(tiny).max()).astype(np.float64)
    assert symmetry_score(rescaled) == pytest.approx(symmetry_score(M), rel=1e-12)   # the scale does not matter


def _score_inputs():
    import torch

    g = torch.Generator().manual_seed(0)
    M = torch.randn(5, 5, generator=g, dtype=torch.float64)
    Wq, Wk = torch.randn(3, 5, generator=g, dtype=torch.float64), torch.randn(3, 5, generator=g, dtype=torch.float64)
    return M, Wq, Wk


@pytest.mark.parametrize("layout", ["coo", "csr", "quantized"])
def test_sparse_and_quantized_tensors_are_scored_as_the_matrices_they_hold(layout):
    import torch

    from companion.core.bilinear import bilinear_form
    from companion.core.scores import directionality_score, structure_scores, symmetry_score, symmetry_score_factored

    M, Wq, Wk = _score_inputs()
    if layout == "quantized":
        M = torch.quantize_per_tensor(M.float(), 0.01, 0, torch.qint32).dequantize().double()
    convert = {"coo": lambda t: t.to_sparse(), "csr": lambda t: t.to_sparse_csr(),
               "quantized": lambda t: torch.quantize_per_tensor(t.float(), 0.01, 0, torch.qint32)}[layout]
    assert symmetry_score(convert(M)) == pytest.approx(symmetry_score(M), abs=1e-6)
    assert directionality_score(convert(M)) == pytest.approx(directionality_score(M), abs=1e-6)
    assert structure_scores(convert(M))["symmetry"] == pytest.approx(symmetry_score(M), abs=1e-6)
    if layout != "quantized":
        assert symmetry_score_factored(convert(Wq), Wk) == pytest.approx(symmetry_score_factored(Wq, Wk))
        assert torch.allclose(bilinear_form(convert(Wq), Wk), bilinear_form(Wq, Wk))


@pytest.mark.parametrize("case, words", [
    ("nested", "nested tensor"),
    ("meta", "meta device"),
    ("meta factors", "meta device"),
    ("rank-0 factors", "got shape ()"),
    ("numpy rank-0 factors", "got shape ()"),
    ("empty factors", "is empty"),
    ("meta bilinear", "meta device"),
])
def test_tensors_without_one_matrix_of_values_are_refused_in_one_line(case, words):
    import torch

    from companion.core.bilinear import bilinear_form
    from companion.core.scores import structure_scores, symmetry_score, symmetry_score_factored

    meta = torch.empty(3, 5, device="meta")
    call = {
        "nested": lambda: symmetry_score(torch.nested.nested_tensor([torch.eye(2), torch.eye(3)])),
        "meta": lambda: symmetry_score(torch.empty(4, 4, device="meta")),
        "meta factors": lambda: structure_scores(Wq=meta, Wk=meta),
        "rank-0 factors": lambda: symmetry_score_factored(torch.tensor(1.0), torch.tensor(2.0)),
        "numpy rank-0 factors": lambda: symmetry_score_factored(np.float64(1.0), np.float64(2.0)),
        "empty factors": lambda: structure_scores(Wq=torch.empty(0, 4), Wk=torch.empty(0, 4)),
        "meta bilinear": lambda: bilinear_form(meta, meta),
    }[case]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=words) as err:
            call()
    assert "\n" not in str(err.value)



# ---------------------------------------------------------------- weights far from unit scale


@pytest.mark.parametrize("scale", [1e-50, 1e50])
def test_float64_weights_far_outside_float32_score_as_at_unit_scale(tmp_path, scale):
    from safetensors.torch import load_file, save_file

    from companion.adapters import read_qk
    from companion.survey.tables import layer_scores

    bad.tiny_llama(tmp_path, layers=2)
    ref = layer_scores(read_qk(tmp_path, progress=False))
    path = tmp_path / "model.safetensors"
    state = load_file(str(path))
    state = {k: (v.double() * scale if k.endswith(("q_proj.weight", "k_proj.weight")) else v)
             for k, v in state.items()}
    save_file(state, str(path), metadata={"format": "pt"})
    got = layer_scores(read_qk(tmp_path, progress=False))
    assert np.allclose(got["symmetry"], ref["symmetry"], atol=1e-6)
    assert np.allclose(got["directionality"], ref["directionality"], atol=1e-6)
    assert (got["symmetry"].abs() > 1e-3).any()


def test_a_gguf_of_float64_weights_is_read_at_their_range(tmp_path):
    import gguf

    from companion.adapters import read_qk
    from companion.survey.tables import layer_scores

    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((32, 32)), rng.standard_normal((16, 32))
    scores = []
    for scale in (1.0, 1e-50):
        path = tmp_path / f"m{scale}.gguf"
        w = gguf.GGUFWriter(str(path), "llama")
        w.add_block_count(1)
        w.add_head_count(4)
        w.add_head_count_kv(2)
        w.add_embedding_length(32)
        w.add_tensor("blk.0.attn_q.weight", q * scale)
        w.add_tensor("blk.0.attn_k.weight", k * scale)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        scores.append(layer_scores(read_qk(path, progress=False)))
    assert np.allclose(scores[1]["symmetry"], scores[0]["symmetry"], atol=1e-9)
    assert (scores[0]["symmetry"].abs() > 1e-3).any()


def test_factored_scores_do_not_underflow_where_the_dense_score_does_not():
    from companion.core.scores import (directionality_score, directionality_score_factored, structure_scores,
                                  symmetry_score, symmetry_score_factored)

    q = np.array([[1.0, 0.5, 0.2], [1e-200, 2e-200, 0.0]])
    k = np.array([[1e-200, 0.0, 3e-200], [1.0, 0.3, 0.7]])
    M = q.T @ k
    dense = symmetry_score(M)
    assert dense > 0.2
    assert symmetry_score_factored(q, k) == pytest.approx(dense, rel=1e-12)
    assert structure_scores(Wq=q, Wk=k, factored=True)["symmetry"] == pytest.approx(dense, rel=1e-12)
    rng = np.random.default_rng(0)
    q2, k2 = rng.standard_normal((2, 6)), rng.standard_normal((2, 6))
    q2[1] *= 1e-180
    k2[0] *= 1e-180
    assert symmetry_score_factored(q2, k2) == pytest.approx(symmetry_score(q2.T @ k2), rel=1e-9)
    assert directionality_score_factored(q2, k2) == pytest.approx(directionality_score(q2.T @ k2), abs=1e-9)
