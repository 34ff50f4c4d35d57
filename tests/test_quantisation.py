"""companion.survey.quantisation: the round trips against gguf's own reading of the blocks and
against hand-made grids, and MiniLM float against its shipped int8 copy."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from companion.adapters.types import QKCheckpoint, QKLayer
from companion.base.errors import CompanionError
from companion.core.scores import structure_scores
from companion.survey import quantisation as qz

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType  # noqa: E402
from gguf.quants import dequantize  # noqa: E402


def _weights(rows=48, cols=512, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((rows, cols)).astype(np.float32) * 0.05
    W[3, 7] = 0.9          # an outlier, as real projections have
    W[5, :32] = 0.0        # an all-zero block
    return W


@pytest.mark.parametrize("scheme", qz.GGUF_SCHEMES)
def test_round_trip_is_ggufs_own_dequantisation(scheme):
    W = _weights()
    values, stored = qz.round_trip(W, scheme)
    assert stored == scheme
    blocks = qz.encode_blocks(W, scheme)
    theirs = dequantize(blocks, GGMLQuantizationType[scheme]).reshape(W.shape)
    np.testing.assert_array_equal(values, theirs)
    # and the layout read here, without gguf, gives the same values
    own = qz.decode_blocks(blocks, scheme, W.shape[1])
    np.testing.assert_allclose(own, theirs, rtol=0, atol=1e-6)
    # a quantiser, not the identity: the values move, but not far (4-bit blocks: ~9% of the norm)
    err = np.linalg.norm(values - W) / np.linalg.norm(W)
    assert 1e-4 < err < 0.12, err


def test_q4_k_values_match_ggufs_reading_and_beat_min_max():
    W = _weights(seed=3)
    blocks, values = qz.quantise_q4_k(W)
    assert blocks.shape == (W.shape[0], W.shape[1] // 256 * 144)
    theirs = dequantize(blocks, GGMLQuantizationType.Q4_K).reshape(W.shape)
    np.testing.assert_allclose(values, theirs, rtol=0, atol=1e-6)
    # each value sits within one step (d * sc) of a code; the search's error is no worse than
    # Q4_1's plain min-max blocks of 32 (llama.cpp's own ranking of the two types)
    q4k = np.linalg.norm(values - W)
    q41 = np.linalg.norm(qz.round_trip(W, "Q4_1")[0] - W)
    assert q4k < q41, (q4k, q41)


def test_q4_k_rows_not_a_multiple_of_256_are_written_as_q5_0():
    W = _weights(cols=384)
    values, stored = qz.round_trip(W, "Q4_K")
    assert stored == "Q5_0"
    np.testing.assert_array_equal(values, qz.round_trip(W, "Q5_0")[0])
    with pytest.raises(CompanionError, match="blocks of 256"):
        qz.quantise_q4_k(W)


def test_int8_error_is_at_most_half_a_step():
    W = _weights(cols=200)   # int8/channel needs no blocks
    codes, scale, values = qz.int8_per_channel(W)
    assert codes.dtype == np.int8 and np.abs(codes).max() == 127
    err = np.abs(values.astype(np.float64) - W)
    half = scale[:, None] / 2
    assert (err <= half * (1 + 1e-6) + 1e-12).all()
    # and the bound is nearly reached somewhere: the rounding is really there
    assert (err / half).max() > 0.9


def _grid_checkpoint():
    """A checkpoint whose weights lie on both grids: int8 codes times an fp16 scale per row, the
    row's largest entry 127 codes (so Q8_0 blocks with a 127 code per block, and int8/channel,
    read back the very same numbers)."""
    rng = np.random.default_rng(11)
    layers = []
    for i in range(3):
        mats = []
        for _ in range(2):
            codes = rng.integers(-127, 128, size=(64, 128)).astype(np.float32)
            codes[:, ::32] = 127                       # each block of 32 and each row reaches 127
            step = np.float16(2.0 ** -9 * (1 + i))     # exact in fp16 and in float32
            mats.append(torch.from_numpy(codes * np.float32(step)))
        layers.append(QKLayer(index=i, role="encoder", Wq=mats[0], Wk=mats[1], n_heads=4, n_kv_heads=4,
                              component="encoder"))
    return QKCheckpoint(source="grid", family="test", layers=layers, meta={"name": "grid"})


@pytest.mark.parametrize("scheme", ["Q8_0", "int8/channel"])
def test_weights_on_the_grid_score_identically(scheme):
    ckpt = _grid_checkpoint()
    copy = qz.quantised_copy(ckpt, scheme)
    for a, b in zip(ckpt.layers, copy.layers):
        np.testing.assert_array_equal(a.Wq.numpy(), b.Wq.numpy())
        np.testing.assert_array_equal(a.Wk.numpy(), b.Wk.numpy())
    t = qz.compare_layers(ckpt, copy, "grid", scheme)
    assert (t["d_symmetry"] == 0).all() and (t["d_directionality"] == 0).all()
    # the scores themselves are those of the forms, computed here without the package's table
    for (_, row), layer in zip(t.iterrows(), ckpt.layers):
        s = structure_scores(layer.Wq.double().T @ layer.Wk.double())
        assert math.isclose(row["symmetry"], float(s["symmetry"]), abs_tol=1e-12)
    # off the grid by a third of a step, the same scheme does move the weights
    shifted = QKCheckpoint(source="g", family="t", meta={"name": "g"}, layers=[
        QKLayer(index=x.index, role=x.role, Wq=x.Wq + 2.0 ** -9 / 3, Wk=x.Wk, n_heads=4, n_kv_heads=4,
                component="encoder") for x in ckpt.layers])
    moved = qz.quantised_copy(shifted, scheme)
    assert any(not torch.equal(a.Wq, b.Wq) for a, b in zip(shifted.layers, moved.layers))


def test_bad_input_is_refused_in_one_line():
    with pytest.raises(CompanionError, match="unknown quantisation scheme"):
        qz.round_trip(np.ones((2, 32)), "Q3_X")
    with pytest.raises(CompanionError, match="blocks of 32"):
        qz.round_trip(np.ones((2, 40)), "Q8_0")
    with pytest.raises(CompanionError, match="NaN or Inf"):
        qz.round_trip(np.full((2, 32), np.nan), "Q8_0")
    with pytest.raises(CompanionError, match="matrix"):
        qz.round_trip(np.ones(32), "int8/channel")


def _medians(changes):
    return pd.DataFrame({"model": ["a", "b", "a", "b"], "component": "encoder", "scheme": ["Q4_0"] * 2 + ["Q8_0"] * 2,
                         "d_symmetry_median": [-0.01, 0.004, 0.0, 0.0001],
                         "d_directionality_median": changes})


def test_against_gap_and_the_sentence():
    t = qz.against_gap(_medians([0.02, -0.05, 0.001, 0.0]), {"symmetry": 0.3, "directionality": -0.1})
    row = t[(t["scheme"] == "Q4_0") & (t["score"] == "directionality")].iloc[0]
    assert row["largest_change"] == pytest.approx(0.05) and row["model"] == "b"
    assert row["ratio"] == pytest.approx(0.5)
    sym = t[(t["scheme"] == "Q4_0") & (t["score"] == "symmetry")].iloc[0]
    assert sym["ratio"] == pytest.approx(0.01 / 0.3)
    assert "could not explain" in qz.directionality_sentence(0.01, 0.2)
    assert "could explain it" in qz.directionality_sentence(0.3, 0.2)
    assert "0.010" in qz.directionality_sentence(-0.01, 0.2)
    for bad in (float("nan"), float("inf"), None):
        with pytest.raises(CompanionError, match="finite"):
            qz.directionality_sentence(bad, 0.2)
        with pytest.raises(CompanionError, match="finite"):
            qz.directionality_sentence(0.01, bad)
    with pytest.raises(CompanionError, match="finite non-zero"):
        qz.against_gap(_medians([0.0] * 4), {"directionality": float("nan")})
    with pytest.raises(CompanionError, match="per score"):
        qz.against_gap(_medians([0.0] * 4), {"sym": 0.1})


def test_gaps_are_differences_of_medians():
    contrast = {"sym_enc": [0.5, 0.3, 0.4], "sym_dec": [0.1, 0.2], "dir_enc": [0.0, -0.2, 0.1],
                "dir_dec": [-0.3, -0.1]}
    g = qz.unit_gaps(contrast)
    assert g["symmetry"] == pytest.approx(0.4 - 0.15)
    assert g["directionality"] == pytest.approx(0.0 - (-0.2))


# ------------------------------------------------------------------------ the zoo's files


def _zoo_or_skip(*names):
    from companion.zoo.registry import status
    for name in names:
        try:
            state = status(name)["state"]
        except CompanionError as err:
            pytest.skip(f"{name} is not in this build's registry ({err})")
        if state.startswith("missing"):
            pytest.skip(f"the zoo file of {name} is absent ({state}); `companion zoo fetch {name}` installs it")


def test_minilm_float_against_its_shipped_int8_copy():
    _zoo_or_skip("all-minilm-l6-v2", "all-minilm-l6-v2-int8")
    from companion.adapters import read_qk
    from companion.zoo.registry import zoo_path

    t = qz.minilm_int8_change()
    assert list(t["layer"]) == list(range(6)) and (t["scheme"] == qz.SHIPPED).all()
    # the same model: each projection within about one int8 step of the float one (not zero,
    # not a different model, whose relative difference would be of order 1)
    assert ((t["wq_error"] > 1e-4) & (t["wq_error"] < 0.05)).all()
    # the columns are the scores of each copy, computed again here from the forms
    f = read_qk(zoo_path("all-minilm-l6-v2"), progress=False).self_attention_layers()
    q = read_qk(zoo_path("all-minilm-l6-v2-int8"), progress=False).self_attention_layers()
    for (_, row), a, b in zip(t.iterrows(), f, q):
        # M = Wq^T Wk summed over heads (12 query heads, 12 key heads), in float64
        sa, sb = (structure_scores(x.Wq.double().T @ x.Wk.double()) for x in (a, b))
        assert row["symmetry"] == pytest.approx(float(sa["symmetry"]), abs=1e-9)
        assert row["directionality_quantised"] == pytest.approx(float(sb["directionality"]), abs=1e-9)
        assert row["d_symmetry"] == pytest.approx(float(sb["symmetry"]) - float(sa["symmetry"]), abs=1e-9)
    m = qz.median_changes(t).iloc[0]
    assert m["d_symmetry_median"] == pytest.approx(np.median(t["symmetry_quantised"]) - np.median(t["symmetry"]))


def test_float_checkpoints_are_the_unquantised_ones():
    _zoo_or_skip("all-minilm-l6-v2", "smollm2-135m", "all-minilm-l6-v2-int8")
    found = qz.float_checkpoints(["all-minilm-l6-v2", "smollm2-135m", "all-minilm-l6-v2-int8"])
    assert list(found) == ["all-minilm-l6-v2"]
    assert qz.stored_bits(found["all-minilm-l6-v2"]) == 32


def test_scheme_changes_on_a_real_checkpoint():
    _zoo_or_skip("paraphrase-minilm-l3")
    ck = qz.float_checkpoints(["paraphrase-minilm-l3"])
    t = qz.scheme_changes(ck, schemes=("Q8_0", "Q4_0"))
    assert set(t["scheme"]) == {"Q8_0", "Q4_0"} and len(t) == 6
    by = t.groupby("scheme")["wq_error"].median()
    assert by["Q8_0"] < by["Q4_0"] / 5        # 8 bits move the weights far less than 4
    with pytest.raises(CompanionError, match="no float checkpoint"):
        qz.scheme_changes({})


def test_q4_k_requantises_llama_cpps_own_blocks_to_the_same_bytes():
    # a llama.cpp Q4_K tensor read back lies on its grid: a quantiser that follows llama.cpp's
    # reference finds the same scales, minimums and codes for (nearly) every block
    _zoo_or_skip("qwen2.5-coder-1.5b")
    from pathlib import Path

    from companion.adapters.gguf_parts import GGUFPartsSource
    from companion.zoo.registry import zoo_path

    src = GGUFPartsSource(Path(zoo_path("qwen2.5-coder-1.5b")))
    info = src._tensors["blk.10.attn_k.weight"]
    assert info.tensor_type == GGMLQuantizationType.Q4_K
    raw = np.asarray(src._read(info.data_offset, info.n_bytes), dtype=np.uint8).reshape(info.ne[1], -1)
    V = dequantize(raw, GGMLQuantizationType.Q4_K).reshape(info.ne[1], -1)
    blocks, values = qz.quantise_q4_k(V)
    assert (blocks == raw).mean() > 0.99
    assert np.linalg.norm(values - V) / np.linalg.norm(V) < 0.01


def test_gguf_qk_types_agree_with_ggufs_reader():
    _zoo_or_skip("smollm2-135m", "gemma-3-270m")
    from adapters_data import gguf_reader

    from companion.zoo.registry import zoo_path

    t = qz.gguf_qk_types(["smollm2-135m", "gemma-3-270m", "all-minilm-l6-v2"])
    assert set(t["model"]) == {"smollm2-135m", "gemma-3-270m"}     # not a GGUF model: no rows
    for name, g in t.groupby("model"):
        theirs = {}
        for tensor in gguf_reader(zoo_path(name)).tensors:
            parts = tensor.name.split(".")
            if parts[-1] == "weight" and parts[-2] in ("attn_q", "attn_k"):
                key = (parts[-2], tensor.tensor_type.name)
                theirs[key] = theirs.get(key, 0) + 1
        assert dict(zip(zip(g["tensor"], g["type"]), g["layers"])) == theirs
