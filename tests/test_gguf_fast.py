"""The fast GGUF path gives what ``gguf.GGUFReader`` + ``gguf.quants.dequantize`` give.

``GGUFSource`` parses the header itself (seeking past the tokenizer arrays) and
dequantizes each tensor in one call; both must be invisible in the results: the same
metadata, the same tensor shapes and offsets, and every q/k tensor equal bit for bit to
what the ``gguf`` package's own reader and dequantizer produce.  The single-pass
``structure_scores`` must equal the public score functions exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adapters_data import gguf_reader, smollm2_gguf, zoo_checkpoint
from companion.adapters.gguf_file import GGUFSource, parse_gguf_header
from companion.base.errors import CompanionError
from companion.core.scores import (directionality_score, directionality_score_factored,
                              structure_scores, symmetry_score, symmetry_score_factored)


def _gguf_files():
    return [pytest.param("smollm2", id="smollm2-Q4_1"),
            pytest.param("gemma-3-270m", id="gemma3-Q5_0", marks=pytest.mark.slow),
            pytest.param("nomic-embed-text-v1.5", id="nomic-F16", marks=pytest.mark.slow)]


def _path(which):
    return smollm2_gguf() if which == "smollm2" else zoo_checkpoint(which)


@pytest.mark.parametrize("which", _gguf_files())
def test_header_and_qk_tensors_equal_the_gguf_packages_reader(which):
    from gguf.quants import dequantize

    path = _path(which)
    src = GGUFSource(path)
    reader = gguf_reader(path)
    cfg, infos, data_offset = GGUFSource._header_with_gguf_reader(path, reader)
    assert src.config == cfg and src.bytes_read == reader.data_offset == data_offset
    assert not any(k.startswith("tokenizer.") for k in src.config)
    checked = 0
    for t in reader.tensors:
        assert src.shapes[t.name] == tuple(reversed(t.shape.tolist()))
        assert src.stored_nbytes(t.name) == t.n_bytes
        if any(s in t.name for s in ("attn_q.weight", "attn_k.weight", "attn_qkv.weight")):
            expected = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(src.shapes[t.name])
            np.testing.assert_array_equal(src.get(t.name).numpy(), expected)
            checked += 1
    assert checked >= 12


def test_truncated_gguf_is_one_clear_error(tmp_path):
    data = smollm2_gguf().read_bytes()
    for n in (100, len(data) // 2):  # inside the header, inside the tensor data
        bad = tmp_path / f"cut{n}.gguf"
        bad.write_bytes(data[:n])
        with pytest.raises(CompanionError, match="GGUF"):
            GGUFSource(bad)


def test_header_parser_refuses_a_non_gguf_file(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"GGML" + bytes(100))
    with pytest.raises(ValueError, match="magic"):
        parse_gguf_header(bad)


@pytest.mark.parametrize("r, d", [(16, 64), (24, 40), (64, 64), (96, 48)])
def test_single_pass_scores_equal_the_public_functions_exactly(r, d):
    g = torch.Generator().manual_seed(r * d)
    q = torch.randn(r, d, generator=g, dtype=torch.float32) * 3
    k = torch.randn(r, d, generator=g, dtype=torch.float32) * 1e-3
    got = structure_scores(Wq=q, Wk=k)
    factored = (symmetry_score_factored(q, k), directionality_score_factored(q, k))
    if 3 * r < d:  # the factored route is the cheaper one (issue 71: from d > 3r on)
        want = factored
    else:  # dense: M from the unit-scaled factors, as the scores always built it
        q64, k64 = q.double(), k.double()
        M = (q64 / q64.abs().max()).T @ (k64 / k64.abs().max())
        want = (symmetry_score(M), directionality_score(M))
    assert (got["symmetry"], got["directionality"]) == want
    # forced, the factored route shares its Gram matrices between the two scores and still
    # gives the public functions' numbers bit for bit
    forced = structure_scores(Wq=q, Wk=k, factored=True)
    assert (forced["symmetry"], forced["directionality"]) == factored
    heads = structure_scores(Wq=q.reshape(2, r // 2, d), Wk=k.reshape(2, r // 2, d), factored=True)
    np.testing.assert_array_equal(heads["symmetry"], symmetry_score_factored(
        q.reshape(2, r // 2, d), k.reshape(2, r // 2, d)))


def test_single_pass_scores_still_refuse_non_finite_factors():
    q = torch.randn(8, 16)
    k = torch.randn(8, 16)
    k[3, 4] = float("nan")
    with pytest.raises(ValueError, match="NaN or Inf"):
        structure_scores(Wq=q, Wk=k)
    q[0, 0] = float("inf")
    with pytest.raises(ValueError, match="Wq contains NaN or Inf"):
        structure_scores(Wq=q, Wk=torch.randn(8, 16))
