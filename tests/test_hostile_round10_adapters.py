"""Hardening round 10 (issue 74), the checkpoint readers: structural lies and odd-but-legal
structure, where round 9 (tests/test_hostile_round9.py, section 3) tried extreme values.

Every checkpoint here is a tiny fake written into ``tmp_path`` from arrays the test holds, so
the right answer is known apart from the readers: the per-head forms
``M_h = W_q^h (W_k^{g(h)})^T`` (``nn.Linear`` rows, Eq. S20) are computed by hand in NumPy,
and a checkpoint whose structure contradicts itself must be refused in one line naming the
problem, never read into a different matrix.

Not tested because it cannot be detected: a square query or key weight stored transposed
(``[d, d]`` either way), a float dtype relabelled as another of the same width (F16 as BF16),
or a head count that lies consistently with every tensor and field (then the model computes
with that count too).  Nothing in the bytes tells these from the honest file.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.base.errors import CompanionError
from one_line import one_line as _one_line

RNG = np.random.default_rng(10)


# ============================================================ helpers: fakes and the by-hand answer

def _w(rows: int, cols: int) -> np.ndarray:
    return RNG.standard_normal((rows, cols)).astype(np.float32)


def _save(folder: Path, config: dict, tensors: dict) -> Path:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(folder / "model.safetensors"))
    return folder


def _llama(folder: Path, *, d=32, heads=4, kv=2, d_head=None, layers=3, bias=False, extra=None,
           names=None, **cfg):
    """A LLaMA folder with random q/k (and nothing else); returns ``(folder, {layer: (Wq, Wk)})``."""
    dh = d_head or d // heads
    config = {"model_type": "llama", "hidden_size": d, "num_attention_heads": heads,
              "num_key_value_heads": kv, "num_hidden_layers": layers, **cfg}
    weights, tensors = {}, {}
    for i in (range(layers) if names is None else names):
        q, k = _w(heads * dh, d), _w(kv * dh, d)
        weights[i] = (q, k)
        tensors[f"model.layers.{i}.self_attn.q_proj.weight"] = q
        tensors[f"model.layers.{i}.self_attn.k_proj.weight"] = k
        if bias:
            tensors[f"model.layers.{i}.self_attn.q_proj.bias"] = _w(1, heads * dh)[0] * 100
            tensors[f"model.layers.{i}.self_attn.k_proj.bias"] = _w(1, kv * dh)[0] * 100
    tensors.update(extra or {})
    return _save(folder, config, tensors), weights


def _by_hand(q: np.ndarray, k: np.ndarray, heads: int, kv: int) -> np.ndarray:
    """``[heads, d, d]``: ``M_h = Wq_h^T Wk_{h // (heads / kv)}`` with rows ``h*dh:(h+1)*dh``."""
    q, k = q.astype(np.float64), k.astype(np.float64)
    dh = q.shape[0] // heads
    out = []
    for h in range(heads):
        g = h // (heads // kv)
        out.append(q[h * dh:(h + 1) * dh].T @ k[g * dh:(g + 1) * dh])
    return np.stack(out)


def _forms(layer) -> np.ndarray:
    from companion.core.bilinear import per_head_bilinear_forms

    return per_head_bilinear_forms(layer.Wq.double(), layer.Wk.double(), layer.n_heads,
                                   layer.n_kv_heads).numpy()


def _read(path):
    from companion.adapters import read_qk

    return read_qk(str(path), progress=False)


def _refused(path, *words) -> str:
    with pytest.raises(CompanionError) as err:
        _read(path)
    line = _one_line(err)
    for w in words:
        assert w in line, line
    return line


# ============================================================ 1. config.json lies and odd-but-legal fields

def test_an_odd_but_legal_gqa_folder_splits_every_head_as_numpy_does_by_hand(tmp_path):
    folder, weights = _llama(tmp_path / "m", d=48, heads=6, kv=2, layers=2)
    ck = _read(folder)
    assert [(l.n_heads, l.n_kv_heads) for l in ck.layers] == [(6, 2), (6, 2)]
    for layer in ck.layers:
        q, k = weights[layer.index]
        np.testing.assert_allclose(_forms(layer), _by_hand(q, k, 6, 2), rtol=1e-6, atol=1e-9)


def test_a_head_dim_that_is_not_hidden_over_heads_is_honoured(tmp_path):
    """Mistral-Nemo style: ``head_dim * heads != hidden_size`` and the tensors agree with head_dim."""
    folder, weights = _llama(tmp_path / "m", d=32, heads=4, kv=2, d_head=16, head_dim=16)
    for layer in _read(folder).layers:
        q, k = weights[layer.index]
        assert layer.Wq.shape == (64, 32)
        np.testing.assert_allclose(_forms(layer), _by_hand(q, k, 4, 2), rtol=1e-6, atol=1e-9)


def test_a_head_dim_that_disagrees_with_the_tensors_is_refused(tmp_path):
    """heads 4 x head_dim 16 = 64 rows announced; the tensors hold 32 rows (4 heads of 8, or 2 of
    16: which one the model meant is unknown).  Read as 4 heads of 8, the per-head forms were those
    of a model the configuration does not describe."""
    folder, _ = _llama(tmp_path / "m", d=32, heads=4, kv=2, head_dim=16)
    _refused(folder, "head_dim", "16")


def _t5(folder, d_kv_said, d_kv=8, heads=4, d=32):
    cfg = {"model_type": "t5", "d_model": d, "d_kv": d_kv_said, "num_heads": heads, "num_layers": 2}
    weights = {i: (_w(heads * d_kv, d), _w(heads * d_kv, d)) for i in range(2)}
    tensors = {}
    for i, (q, k) in weights.items():
        tensors[f"encoder.block.{i}.layer.0.SelfAttention.q.weight"] = q
        tensors[f"encoder.block.{i}.layer.0.SelfAttention.k.weight"] = k
    return _save(folder, cfg, tensors), weights


def test_an_mt5_style_d_kv_whose_heads_do_not_fill_d_model_is_honoured(tmp_path):
    """mT5-small: 6 heads of d_kv 64 = 384 rows for d_model 512; here 4 heads of 12 for 32."""
    folder, weights = _t5(tmp_path / "m", d_kv_said=12, d_kv=12)
    for layer in _read(folder).layers:
        assert layer.Wq.shape == (48, 32)
        np.testing.assert_allclose(_forms(layer), _by_hand(*weights[layer.index], 4, 4), rtol=1e-6, atol=1e-9)


def test_a_t5_d_kv_that_disagrees_with_the_tensors_is_refused(tmp_path):
    folder, _ = _t5(tmp_path / "m", d_kv_said=16, d_kv=8)
    _refused(folder, "d_kv", "16")


def test_heads_that_do_not_divide_the_query_rows_are_refused(tmp_path):
    folder, _ = _llama(tmp_path / "m", d=32, heads=4, kv=4)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(num_attention_heads=3, num_key_value_heads=3)
    (folder / "config.json").write_text(json.dumps(cfg))
    _refused(folder, "layer 0", "3 heads")


@pytest.mark.parametrize("heads, kv", [(4, 3), (4, 8)], ids=["kv does not divide", "kv above heads"])
def test_gqa_key_heads_that_do_not_fit_the_query_heads_are_refused(tmp_path, heads, kv):
    folder, _ = _llama(tmp_path / "m", d=32, heads=4, kv=4)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(num_attention_heads=heads, num_key_value_heads=kv)
    (folder / "config.json").write_text(json.dumps(cfg))
    _refused(folder, f"{heads} query heads", f"{kv} key/value heads")


def test_key_rows_that_disagree_with_the_kv_head_count_are_refused(tmp_path):
    """config: 2 key heads; tensors: 4 key heads of 8 rows."""
    folder, _ = _llama(tmp_path / "m", d=32, heads=4, kv=4)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["num_key_value_heads"] = 2
    (folder / "config.json").write_text(json.dumps(cfg))
    _refused(folder, "32 key rows", "2 kv heads")


@pytest.mark.parametrize("field, value", [("num_attention_heads", "4"), ("num_attention_heads", True),
                                          ("num_attention_heads", 4.5), ("num_key_value_heads", "2"),
                                          ("num_hidden_layers", "3"), ("hidden_size", [32]),
                                          ("head_dim", "8")])
def test_a_count_given_as_a_string_a_bool_a_fraction_or_a_list_is_refused_naming_the_field(tmp_path, field, value):
    folder, _ = _llama(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    cfg[field] = value
    (folder / "config.json").write_text(json.dumps(cfg))
    _refused(folder, field)


def test_counts_written_as_whole_floats_read_as_the_integers(tmp_path):
    """12.0 as some exporters write: the same checkpoint as with 12 (the same forms, bit for bit)."""
    folder, weights = _llama(tmp_path / "m", d=32, heads=4, kv=2, head_dim=8)
    want = [_forms(l) for l in _read(folder).layers]
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(num_attention_heads=4.0, num_key_value_heads=2.0, num_hidden_layers=3.0,
               hidden_size=32.0, head_dim=8.0)
    (folder / "config.json").write_text(json.dumps(cfg))
    got = _read(folder).layers
    assert len(got) == 3
    for layer, w in zip(got, want):
        np.testing.assert_array_equal(_forms(layer), w)
        np.testing.assert_allclose(w, _by_hand(*weights[layer.index], 4, 2), rtol=1e-6, atol=1e-9)


def test_no_kv_head_count_means_multi_head_attention(tmp_path):
    """``num_key_value_heads: null`` (Phi-2) is ``num_attention_heads``."""
    folder, weights = _llama(tmp_path / "m", d=32, heads=4, kv=4, num_key_value_heads=None)
    for layer in _read(folder).layers:
        assert layer.n_kv_heads == 4
        np.testing.assert_allclose(_forms(layer), _by_hand(*weights[layer.index], 4, 4), rtol=1e-6, atol=1e-9)


def test_a_query_weight_of_another_width_than_hidden_size_is_refused(tmp_path):
    folder, _ = _llama(tmp_path / "m", d=32, heads=4, kv=2, hidden_size=64)
    _refused(folder, "width 32", "64")


def test_a_non_square_key_weight_stored_transposed_is_refused(tmp_path):
    folder, weights = _llama(tmp_path / "m", d=32, heads=4, kv=2)
    tensors = {}
    for i, (q, k) in weights.items():
        tensors[f"model.layers.{i}.self_attn.q_proj.weight"] = q
        tensors[f"model.layers.{i}.self_attn.k_proj.weight"] = k.T if i == 1 else k
    _save(folder, json.loads((folder / "config.json").read_text()), tensors)
    _refused(folder, "layer 1")


def test_a_query_weight_with_three_axes_is_refused(tmp_path):
    folder, weights = _llama(tmp_path / "m", d=32, heads=4, kv=4)
    tensors = {}
    for i, (q, k) in weights.items():
        tensors[f"model.layers.{i}.self_attn.q_proj.weight"] = q.reshape(4, 8, 32) if i == 0 else q
        tensors[f"model.layers.{i}.self_attn.k_proj.weight"] = k
    _save(folder, json.loads((folder / "config.json").read_text()), tensors)
    _refused(folder, "layer 0")


def test_biases_beside_the_weights_leave_the_forms_as_without_them(tmp_path):
    """The projection biases are outside the bilinear form ``x^T Wq^T Wk y`` (Remark S1.5)."""
    folder, weights = _llama(tmp_path / "m", bias=True)
    for layer in _read(folder).layers:
        np.testing.assert_allclose(_forms(layer), _by_hand(*weights[layer.index], 4, 2), rtol=1e-6, atol=1e-9)


def test_a_huge_hidden_size_is_refused_before_anything_is_allocated(tmp_path):
    folder, _ = _llama(tmp_path / "m", hidden_size=10 ** 12)
    t0 = time.monotonic()
    _refused(folder, "1000000000000")
    assert time.monotonic() - t0 < 10


# ============================================================ 2. layers: missing, tied, written twice

def test_layer_3_missing_of_6_is_refused_naming_it(tmp_path):
    folder, _ = _llama(tmp_path / "m", layers=6, names=[0, 1, 2, 4, 5])
    _refused(folder, "[3]", "missing")


@pytest.mark.parametrize("announced, words", [(4, ("announces 4", "[4, 5]")),
                                               (10 ** 12, ("announces 1000000000000", "missing"))],
                         ids=["fewer than stored", "a trillion"])
def test_a_layer_count_that_disagrees_with_the_stored_layers_is_refused_at_once(tmp_path, announced, words):
    folder, _ = _llama(tmp_path / "m", layers=6)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["num_hidden_layers"] = announced
    (folder / "config.json").write_text(json.dumps(cfg))
    t0 = time.monotonic()
    _refused(folder, *words)
    assert time.monotonic() - t0 < 10


def test_tied_layers_are_read_each_as_stored(tmp_path):
    """Two layers holding the same arrays (shared weights) are legal and read twice."""
    folder, weights = _llama(tmp_path / "m", layers=3)
    q, k = weights[0]
    tensors = {}
    for i in range(3):
        tensors[f"model.layers.{i}.self_attn.q_proj.weight"] = q
        tensors[f"model.layers.{i}.self_attn.k_proj.weight"] = k
    _save(folder, json.loads((folder / "config.json").read_text()), tensors)
    layers = _read(folder).layers
    assert len(layers) == 3
    for layer in layers:
        np.testing.assert_allclose(_forms(layer), _by_hand(q, k, 4, 2), rtol=1e-6, atol=1e-9)


def test_a_layer_index_written_two_ways_is_refused_not_picked(tmp_path):
    """``layers.3`` and ``layers.03`` both parse as layer 3; one of them was silently dropped, and
    which one depended on the order of the header (or of the shards)."""
    extra = {"model.layers.03.self_attn.q_proj.weight": _w(32, 32),
             "model.layers.03.self_attn.k_proj.weight": _w(16, 32)}
    folder, _ = _llama(tmp_path / "m", layers=6, extra=extra)
    _refused(folder, "layers.3.", "layers.03.", "layer 3")


def test_a_layer_index_in_other_digits_is_no_layer(tmp_path):
    """``layers.\u0663`` (an Arabic-Indic three) is no layer the model has (transformers loads
    ``layers.3``); Python's ``\\d`` read it as layer 3 and it replaced the real layer 3."""
    extra = {"model.layers.\u0663.self_attn.q_proj.weight": _w(32, 32),
             "model.layers.\u0663.self_attn.k_proj.weight": _w(16, 32)}
    folder, weights = _llama(tmp_path / "m", layers=6, extra=extra)
    layers = _read(folder).layers
    assert [l.index for l in layers] == list(range(6))
    np.testing.assert_array_equal(layers[3].Wq.numpy(), weights[3][0])
    np.testing.assert_array_equal(layers[3].Wk.numpy(), weights[3][1])


# ============================================================ 3. fused q|k|v tensors

def _phi3(folder, heads=4, kv=2, d=32, **cfg):
    dh = d // heads
    config = {"model_type": "phi3", "hidden_size": d, "num_attention_heads": heads,
              "num_key_value_heads": kv, "num_hidden_layers": 2, **cfg}
    weights, tensors = {}, {}
    for i in range(2):
        q, k, v = _w(heads * dh, d), _w(kv * dh, d), _w(kv * dh, d)
        weights[i] = (q, k)
        tensors[f"model.layers.{i}.self_attn.qkv_proj.weight"] = np.concatenate([q, k, v])
    return _save(folder, config, tensors), weights


def test_a_fused_phi3_qkv_splits_into_the_stored_q_and_k(tmp_path):
    folder, weights = _phi3(tmp_path / "m")
    for layer in _read(folder).layers:
        np.testing.assert_allclose(_forms(layer), _by_hand(*weights[layer.index], 4, 2), rtol=1e-6, atol=1e-9)


def test_a_fused_qkv_of_the_wrong_size_for_its_config_is_refused(tmp_path):
    """Rows for 2 key heads; the config says 4: q|k|v would be cut in the wrong places."""
    folder, _ = _phi3(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["num_key_value_heads"] = 4
    (folder / "config.json").write_text(json.dumps(cfg))
    _refused(folder, "layer 0", "(64, 32)", "96 rows")


def test_a_gpt_neox_interleaved_qkv_splits_per_head_as_by_hand(tmp_path):
    """``query_key_value`` rows ``[H, 3, d_head]``: head h's q rows are ``h*3*dh .. h*3*dh+dh``."""
    d, heads = 32, 4
    dh = d // heads
    fused = {i: _w(3 * d, d) for i in range(2)}
    cfg = {"model_type": "gpt_neox", "hidden_size": d, "num_attention_heads": heads, "num_hidden_layers": 2}
    folder = _save(tmp_path / "m", cfg, {f"gpt_neox.layers.{i}.attention.query_key_value.weight": w
                                         for i, w in fused.items()})
    for layer in _read(folder).layers:
        w = fused[layer.index]
        q = np.concatenate([w[h * 3 * dh: h * 3 * dh + dh] for h in range(heads)])
        k = np.concatenate([w[h * 3 * dh + dh: h * 3 * dh + 2 * dh] for h in range(heads)])
        np.testing.assert_allclose(_forms(layer), _by_hand(q, k, heads, heads), rtol=1e-6, atol=1e-9)


def test_a_gpt2_c_attn_stored_in_linear_layout_is_refused(tmp_path):
    """Conv1D is ``[d, 3d]``; a converter that wrote ``[3d, d]`` must not be cut by columns."""
    d = 32
    cfg = {"model_type": "gpt2", "n_embd": d, "n_head": 4, "n_layer": 1}
    folder = _save(tmp_path / "m", cfg, {"h.0.attn.c_attn.weight": _w(3 * d, d)})
    _refused(folder, "c_attn", "(32, 96)")


# ============================================================ 4. safetensors headers that lie

def _raw_llama(folder: Path, header: dict, data: bytes):
    import malformed as bad

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "llama", "hidden_size": 4, "num_attention_heads": 2, "num_hidden_layers": 1}))
    return bad.write_raw_safetensors(folder / "model.safetensors", header, data)


Q, K = "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight"
_HEADERS = {
    "k reads q's bytes": ({Q: {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]},
                           K: {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}, 128),
    "k runs past the data": ({Q: {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]},
                              K: {"dtype": "F32", "shape": [4, 4], "data_offsets": [64, 128]}}, 100),
    "dtype says F16, bytes hold F32": ({Q: {"dtype": "F16", "shape": [4, 4], "data_offsets": [0, 64]},
                                        K: {"dtype": "F32", "shape": [4, 4], "data_offsets": [64, 128]}}, 128),
    "a shape asking for 2^44 floats": ({Q: {"dtype": "F32", "shape": [1 << 40, 16], "data_offsets": [0, 1 << 46]},
                                        K: {"dtype": "F32", "shape": [4, 4], "data_offsets": [1 << 46, (1 << 46) + 64]}},
                                       128),
}


@pytest.mark.parametrize("case", list(_HEADERS))
def test_a_safetensors_header_that_lies_about_its_data_is_refused_at_once(tmp_path, case):
    header, n = _HEADERS[case]
    path = _raw_llama(tmp_path / "m", header, np.arange(n // 4, dtype=np.float32).tobytes())
    t0 = time.monotonic()
    _refused(tmp_path / "m", str(path))
    assert time.monotonic() - t0 < 10


# ============================================================ 5. GGUF tensor infos that lie

_F32, _F16 = 0, 1


def _gguf(path: Path, arch: str, meta: dict, tensors: list, lie=None) -> Path:
    """A GGUF v3 file written byte by byte (F32 tensors, alignment 32); ``lie(infos)`` may edit
    the tensor infos ``[name, ne, type, offset]`` after the data is laid out honestly."""
    def s(x: str) -> bytes:
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    items = {"general.architecture": arch, **meta}
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(items)))
    for key, v in items.items():
        out += s(key)
        if isinstance(v, str):
            out += struct.pack("<I", 8) + s(v)
        elif isinstance(v, float):
            out += struct.pack("<If", 6, v)
        else:
            out += struct.pack("<II", 4, v)
    infos, data = [], bytearray()
    for name, a in tensors:
        infos.append([name, tuple(reversed(a.shape)), _F32, len(data)])
        data += np.ascontiguousarray(a, dtype="<f4").tobytes()
        data += b"\0" * ((-len(data)) % 32)
    if lie is not None:
        lie(infos)
    for name, ne, typ, off in infos:
        out += s(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", typ, off)
    out += b"\0" * ((-len(out)) % 32)
    path.write_bytes(bytes(out + data))
    return path


def _qwen2_gguf(path: Path, heads=4, kv=2, d=32, layers=2, lie=None, **meta):
    dh = d // heads
    # whole numbers: their float32 bytes read as float16 are finite too, so a type lie is not
    # given away by a NaN
    weights = {i: (np.round(2 * _w(heads * dh, d)), np.round(2 * _w(kv * dh, d))) for i in range(layers)}
    tensors = []
    for i, (q, k) in weights.items():
        tensors += [(f"blk.{i}.attn_q.weight", q), (f"blk.{i}.attn_k.weight", k)]
    m = {"qwen2.block_count": layers, "qwen2.attention.head_count": heads,
         "qwen2.attention.head_count_kv": kv, "qwen2.embedding_length": d, **meta}
    return _gguf(path, "qwen2", m, tensors, lie), weights


def test_an_honest_byte_by_byte_gguf_reads_as_its_arrays(tmp_path):
    """The writer above is right: the file reads back as the arrays it was given."""
    path, weights = _qwen2_gguf(tmp_path / "m.gguf")
    for layer in _read(path).layers:
        q, k = weights[layer.index]
        np.testing.assert_array_equal(layer.Wq.numpy(), q)
        np.testing.assert_allclose(_forms(layer), _by_hand(q, k, 4, 2), rtol=1e-6, atol=1e-9)


def _type_lie(infos):
    infos[0][2] = _F16          # blk.0.attn_q: F32 bytes declared F16 (half the bytes)


def _offset_swap(infos):
    infos[0][3], infos[2][3] = infos[2][3], infos[0][3]   # blk.0.attn_q <-> blk.1.attn_q


def _dims_lie(infos):
    infos[0][1] = (32, 16)       # blk.0.attn_q declares half its rows


def _huge_dims(infos):
    infos[0][1] = (1 << 20, 1 << 40)


def _last_type_lie(infos):
    infos[-1][2] = _F16         # blk.1.attn_k, the last tensor: nothing after it to misplace


@pytest.mark.parametrize("lie, word", [(_type_lie, "not what the header says"),
                                       (_offset_swap, "not what the header says"),
                                       (_dims_lie, "blk.0"),   # also caught by the head split
                                       (_huge_dims, "outside the file"),
                                       (_last_type_lie, "not what the header says")],
                         ids=["type F32 -> F16", "two q offsets swapped", "rows halved", "2^60 elements",
                              "last tensor F32 -> F16"])
def test_a_gguf_tensor_info_that_lies_about_type_offset_or_dims_is_refused(tmp_path, lie, word):
    """llama.cpp's loader requires each tensor to start where the one before it ends (padded to
    the alignment); a type, shape or offset that breaks this tiling is a lie about the bytes.
    Before, a swap of two q offsets read layer 0 from layer 1's bytes, and F32 bytes declared
    F16 were read as other numbers, both without a word."""
    path, _ = _qwen2_gguf(tmp_path / "m.gguf", lie=lie)
    t0 = time.monotonic()
    _refused(path, str(path), word)
    assert time.monotonic() - t0 < 10


def test_a_gguf_key_length_that_disagrees_with_the_tensors_is_refused(tmp_path):
    """``qwen2.attention.key_length`` is the head size: 16 here, while 32 rows / 4 heads = 8."""
    path, _ = _qwen2_gguf(tmp_path / "m.gguf", **{"qwen2.attention.key_length": 16})
    _refused(path, "key_length", "16")


@pytest.mark.parametrize("meta, word", [({"qwen2.attention.head_count_kv": 8}, "key/value heads"),
                                        ({"qwen2.attention.head_count": "4"}, "head_count"),
                                        ({"qwen2.attention.head_count": 4.5}, "head_count")],
                         ids=["kv above heads", "heads as a string", "heads as a fraction"])
def test_gguf_head_counts_that_cannot_split_are_refused(tmp_path, meta, word):
    path, _ = _qwen2_gguf(tmp_path / "m.gguf", **meta)
    _refused(path, word)


def _gemma3_gguf(path: Path, gain_len: int | None = None, heads=2, kv=1, d=32):
    dh = 16
    tensors, weights = [], {}
    for i in range(2):
        q, k = _w(heads * dh, d), _w(kv * dh, d)
        gq, gk = _w(1, gain_len or dh)[0], _w(1, gain_len or dh)[0]
        weights[i] = (q, k, gq, gk)
        tensors += [(f"blk.{i}.attn_q.weight", q), (f"blk.{i}.attn_k.weight", k),
                    (f"blk.{i}.attn_q_norm.weight", gq), (f"blk.{i}.attn_k_norm.weight", gk)]
    meta = {"gemma3.block_count": 2, "gemma3.attention.head_count": heads,
            "gemma3.attention.head_count_kv": kv, "gemma3.embedding_length": d}
    return _gguf(path, "gemma3", meta, tensors), weights


def test_gemma3_norm_gains_fold_into_each_heads_rows_as_by_hand(tmp_path):
    path, weights = _gemma3_gguf(tmp_path / "m.gguf")
    for layer in _read(path).layers:
        q, k, gq, gk = weights[layer.index]
        q2, k2 = q * np.tile(gq, 2)[:, None], k * gk[:, None]
        np.testing.assert_allclose(_forms(layer), _by_hand(q2, k2, 2, 1), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("gain_len", [8, 32], ids=["half a head", "two heads"])
def test_a_gemma3_norm_gain_that_is_not_one_head_long_is_refused(tmp_path, gain_len):
    """Gains of 8 entries for heads of 16 rows were folded with period 8: every head scaled by
    the wrong gains, silently; gains of 32 were refused with a message about reshaping."""
    path, _ = _gemma3_gguf(tmp_path / "m.gguf", gain_len=gain_len)
    _refused(path, "attn_q_norm", str(gain_len))


# ============================================================ 6. the head split itself (core.bilinear)

def test_per_head_forms_of_gqa_and_their_sum_match_numpy_by_hand():
    from companion.core.bilinear import bilinear_form, layer_factors, per_head_bilinear_forms

    q, k = _w(6 * 5, 20), _w(2 * 5, 20)
    want = _by_hand(q, k, 6, 2)
    got = per_head_bilinear_forms(torch.from_numpy(q).double(), torch.from_numpy(k).double(), 6, 2).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(bilinear_form(q.astype(np.float64), k.astype(np.float64), 6, 2).numpy(),
                               want.sum(0), rtol=1e-12, atol=1e-12)
    a, b = layer_factors(q.astype(np.float64), k.astype(np.float64), 6, 2)
    np.testing.assert_allclose((a.T @ b).numpy(), want.sum(0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_heads, n_kv", [(0, None), (True, None), (2.5, None), ("2", None), (4, 0), (4, True)],
                         ids=["zero heads", "True heads", "2.5 heads", "'2' heads", "zero kv", "True kv"])
def test_a_head_count_that_is_not_a_positive_integer_is_refused_by_the_split(n_heads, n_kv):
    """0 heads divided by zero (a ZeroDivisionError); ``True`` was read as one head."""
    from companion.core.bilinear import per_head_bilinear_forms

    with pytest.raises(ValueError) as err:
        per_head_bilinear_forms(_w(8, 8), _w(8, 8), n_heads, n_kv)
    line = _one_line(err)
    bad = n_heads if n_kv is None else n_kv
    assert "heads" in line and repr(bad) in line, line


# ============================================================ 7. the same refusals through the command line

def test_the_score_command_refuses_a_gguf_with_swapped_offsets_in_one_line(tmp_path, capsys):
    from one_line import one_line_error

    path, _ = _qwen2_gguf(tmp_path / "m.gguf", lie=_offset_swap)
    one_line_error(["score", str(path), "--quiet"], capsys, str(path), "not what the header says", within_s=60)


def test_the_score_command_refuses_a_lying_head_dim_in_one_line(tmp_path, capsys):
    from one_line import one_line_error

    folder, _ = _llama(tmp_path / "m", d=32, heads=4, kv=2, head_dim=16)
    one_line_error(["score", str(folder), "--quiet"], capsys, "head_dim is 16", "layer 0", within_s=60)
