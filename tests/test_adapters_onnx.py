"""ONNX graphs: query/key weights found by tracing each Softmax, checked with onnxruntime.

The reference is onnxruntime running the packaged paraphrase-MiniLM-L3-v2 graph on a real
tokenized sentence, with two kinds of intermediate tensors made into extra outputs: the
input of every ``Softmax`` (the pre-softmax logits, per head) and the hidden states that
enter every layer.  Both are chosen here from the graph's structure (Softmax nodes and the
LayerNormalization nodes of a post-norm BERT, in order), not from what the reader traced.
The logits must equal ``(x^T M_h y + bias terms) / sqrt(d_head)`` for every head ``h`` with
``M_h`` built from :func:`read_qk`'s weights.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adapters_data import minilm_folder, paraphrase_minilm_onnx
from companion.adapters import read_qk
from companion.core.bilinear import bilinear_form
from companion.base.errors import CompanionError
from qk_logits import compare

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

# paraphrase-MiniLM-L3-v2 (its model card): 3 layers, width 384, 12 heads of 32
N_LAYERS, WIDTH, HEADS, D_HEAD = 3, 384, 12, 32
SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank."


@pytest.fixture(scope="module")
def minilm_l3():
    return read_qk(paraphrase_minilm_onnx(), progress=False)


@pytest.fixture(scope="module")
def runtime_tensors():
    """Per layer: the hidden states entering it and its pre-softmax logits, from onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    from transformers import AutoTokenizer

    model = onnx.load(str(paraphrase_minilm_onnx()))
    g = model.graph
    softmax_inputs = [n.input[0] for n in g.node if n.op_type == "Softmax"]
    norms = [n.output[0] for n in g.node if n.op_type == "LayerNormalization"]
    # post-norm BERT: embeddings LN, then per layer attention-output LN and output LN
    layer_inputs = [norms[0]] + [norms[2 * i + 2] for i in range(N_LAYERS - 1)]
    for name in softmax_inputs + layer_inputs:
        g.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    # the same uncased WordPiece vocabulary as all-MiniLM-L6-v2 (both from bert-base-uncased)
    tok = AutoTokenizer.from_pretrained(minilm_folder())
    enc = tok(SENTENCE, return_tensors="np")
    feeds = {"input_ids": enc["input_ids"].astype(np.int64),
             "attention_mask": enc["attention_mask"].astype(np.int64)}
    names = softmax_inputs + layer_inputs
    values = dict(zip(names, session.run(names, feeds)))
    assert enc["input_ids"].shape[1] > 10
    return [(values[layer_inputs[i]][0], values[softmax_inputs[i]][0]) for i in range(N_LAYERS)]


def test_traced_layers_have_the_models_shape(minilm_l3):
    assert minilm_l3.family == "onnx-attention" and minilm_l3.meta["format"] == "onnx"
    assert [l.index for l in minilm_l3.layers] == list(range(N_LAYERS))
    for l in minilm_l3.layers:
        assert l.role == "encoder" and l.component == "encoder"
        assert (l.n_heads, l.d_model, l.d_head) == (HEADS, WIDTH, D_HEAD)
        assert l.Wq.shape == l.Wk.shape == (WIDTH, WIDTH)


def test_every_head_reproduces_onnxruntime_pre_softmax_logits(minilm_l3, runtime_tensors):
    for layer, (x, logits) in zip(minilm_l3.layers, runtime_tensors, strict=True):
        X = torch.from_numpy(x).double()
        assert logits.shape == (HEADS, X.shape[0], X.shape[0])
        Q, K = layer.head_factors()
        for h in range(HEADS):
            M_h = Q[h].double().T @ K[h].double()
            assert compare(M_h, X, X, torch.from_numpy(logits[h]), scale=D_HEAD ** -0.5) < 1e-4
        # summed over heads: the layer's form
        M = bilinear_form(layer.Wq.double(), layer.Wk.double(), HEADS)
        total = torch.from_numpy(logits.sum(axis=0))
        assert compare(M, X, X, total, scale=D_HEAD ** -0.5) < 1e-4
        # query and key swapped, the logits are not reproduced (the check can fail)
        assert compare(M.T, X, X, total, scale=D_HEAD ** -0.5) > 1e-2


# ----------------------------------------------------------------------------- synthetic graphs


def _attention_graph(d=16, heads=4, causal=False, scale_query=False, fused=False, seed=0,
                     linear_layout=False):
    """A one-layer attention graph built with onnx.helper; initializers named to mislead."""
    rng = np.random.default_rng(seed)
    wq, wk, wv = (rng.standard_normal((d, d)).astype(np.float32) for _ in range(3))
    bq = rng.standard_normal(d).astype(np.float32)
    dh = d // heads
    nodes, inits = [], []
    # initializers listed in the order value, key, query, with names that say the opposite
    inits += [numpy_helper.from_array(wv, "proj_0"), numpy_helper.from_array(wk, "proj_1"),
              numpy_helper.from_array(wq, "proj_2"), numpy_helper.from_array(bq, "bias_2"),
              numpy_helper.from_array(np.array([0, 0, heads, dh], np.int64), "split_shape"),
              numpy_helper.from_array(np.array(np.sqrt(dh), np.float32), "sqrt_dh")]
    if fused:
        inits.append(numpy_helper.from_array(np.concatenate([wq, wk, wv], 1), "qkv"))
        nodes += [helper.make_node("MatMul", ["x", "qkv"], ["qkv_out"]),
                  helper.make_node("Split", ["qkv_out"], ["q_lin", "k_lin", "v_lin"], axis=-1,
                                   num_outputs=3)]
        q_src, k_src = "q_lin", "k_lin"
    elif linear_layout:  # older exporters: Gemm with transB, MatMul with Transpose(W)
        inits += [numpy_helper.from_array(wq.T.copy(), "lin_q"), numpy_helper.from_array(wk.T.copy(), "lin_k")]
        nodes += [helper.make_node("Reshape", ["x", "flat"], ["x2"]),
                  helper.make_node("Gemm", ["x2", "lin_q", "bias_2"], ["q2"], transB=1),
                  helper.make_node("Reshape", ["q2", "seq_shape"], ["q_lin"]),
                  helper.make_node("Transpose", ["lin_k"], ["lin_k_t"], perm=[1, 0]),
                  helper.make_node("MatMul", ["x", "lin_k_t"], ["k_lin"])]
        inits += [numpy_helper.from_array(np.array([-1, d], np.int64), "flat"),
                  numpy_helper.from_array(np.array([1, -1, d], np.int64), "seq_shape")]
        q_src, k_src = "q_lin", "k_lin"
    else:
        nodes += [helper.make_node("MatMul", ["x", "proj_2"], ["q_mm"]),
                  helper.make_node("Add", ["bias_2", "q_mm"], ["q_lin"]),
                  helper.make_node("MatMul", ["x", "proj_1"], ["k_lin"]),
                  helper.make_node("MatMul", ["x", "proj_0"], ["v_lin"])]
        q_src, k_src = "q_lin", "k_lin"
    if scale_query:
        inits.append(numpy_helper.from_array(np.array(dh ** -0.5, np.float32), "q_scale"))
        nodes.append(helper.make_node("Mul", [q_src, "q_scale"], ["q_scaled"]))
        q_src = "q_scaled"
    nodes += [
        helper.make_node("Reshape", [q_src, "split_shape"], ["q4"]),
        helper.make_node("Transpose", ["q4"], ["q_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", [k_src, "split_shape"], ["k4"]),
        helper.make_node("Transpose", ["k4"], ["k_t"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores"]),
    ]
    if scale_query:
        logits = "scores"
    else:
        nodes.append(helper.make_node("Div", ["scores", "sqrt_dh"], ["scaled"]))
        logits = "scaled"
    if causal:
        inits.append(numpy_helper.from_array(np.ones((8, 8), np.float32), "ones"))
        nodes += [helper.make_node("Trilu", ["ones"], ["tri"], upper=0),
                  helper.make_node("Add", [logits, "tri"], ["masked"])]
        logits = "masked"
    nodes += [helper.make_node("Softmax", [logits], ["probs"], axis=-1)]
    graph = helper.make_graph(
        nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, d])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9  # what onnxruntime 1.31 accepts (onnx 1.23 writes 14 by default)
    return model, wq, wk


def _runtime_logits(model, x):
    """The Softmax input of a one-layer graph, computed by onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    (softmax,) = [n for n in model.graph.node if n.op_type == "Softmax"]
    model.graph.output.append(helper.make_tensor_value_info(softmax.input[0], TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run([softmax.input[0]], {"x": x})[0][0]


@pytest.mark.parametrize("variant", ["matmul", "scaled query", "gemm and transposed weight"])
def test_query_and_key_are_found_by_the_graph_not_by_initializer_order(tmp_path, variant):
    model, wq, wk = _attention_graph(scale_query=variant == "scaled query",
                                     linear_layout=variant.startswith("gemm"))
    path = tmp_path / "attention.onnx"
    onnx.save(model, str(path))
    (layer,) = read_qk(path, progress=False).layers
    assert torch.equal(layer.Wq, torch.from_numpy(wq.T.copy()))
    assert torch.equal(layer.Wk, torch.from_numpy(wk.T.copy()))
    assert (layer.n_heads, layer.d_head, layer.role) == (4, 4, "encoder")
    # and onnxruntime's logits of the graph are those of the form, head by head
    x = np.random.default_rng(1).standard_normal((1, 8, 16)).astype(np.float32)
    logits = _runtime_logits(model, x)
    X = torch.from_numpy(x[0]).double()
    Q, K = layer.head_factors()
    for h in range(4):
        M_h = Q[h].double().T @ K[h].double()
        assert compare(M_h, X, X, torch.from_numpy(logits[h]), scale=0.5) < 1e-5


def test_triangular_mask_marks_the_layer_causal(tmp_path):
    model, _, _ = _attention_graph(causal=True)
    path = tmp_path / "causal.onnx"
    onnx.save(model, str(path))
    (layer,) = read_qk(path, progress=False).layers
    assert layer.role == "causal" and layer.component == "decoder"


# ----------------------------------------------------------------------------- bad input


def test_fused_qkv_graph_is_one_clear_error(tmp_path):
    model, _, _ = _attention_graph(fused=True)
    path = tmp_path / "fused.onnx"
    onnx.save(model, str(path))
    with pytest.raises(CompanionError, match=r"fused\.onnx: cannot trace attention 0 \(Softmax.*Split"):
        read_qk(path, progress=False)


def test_graph_without_softmax_is_refused(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "no-attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(CompanionError, match=r"relu\.onnx has no Softmax node"):
        read_qk(path, progress=False)


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_onnx_file_names_the_file_and_the_fix(tmp_path, damage):
    path = tmp_path / "broken.onnx"
    if damage == "garbage":
        path.write_bytes(b"\xff\xfe not a protobuf \x00\x01" * 100)
    else:
        with open(paraphrase_minilm_onnx(), "rb") as f:
            path.write_bytes(f.read(1_000_000))
    with pytest.raises(CompanionError, match=r"broken\.onnx (is not a readable ONNX model|holds an empty).*again"):
        read_qk(path, progress=False)
