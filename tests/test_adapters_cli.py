"""``companion score``: CSVs with one row per layer, and one clear line for bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

import transformers as T
from adapters_data import minilm_folder, smollm2_gguf
from companion.cli import main


def test_score_minilm_writes_one_row_per_layer(tmp_path, capsys):
    out = tmp_path / "minilm.csv"
    assert main(["score", str(minilm_folder()), "--out", str(out), "--quiet"]) == 0
    df = pd.read_csv(out)
    assert len(df) == 6 and list(df.layer) == list(range(6))
    assert {"layer", "symmetry", "directionality"} <= set(df.columns)
    assert df.symmetry.between(-1, 1).all() and df.directionality.between(-1, 1).all()
    printed = capsys.readouterr().out
    assert "median" in printed and "encoder (6 layers)" in printed


def test_score_smollm2_gguf_writes_thirty_rows(tmp_path):
    out = tmp_path / "smollm2.csv"
    assert main(["score", str(smollm2_gguf()), "--out", str(out), "--quiet"]) == 0
    df = pd.read_csv(out)
    assert len(df) == 30 and (df.n_heads == 9).all() and (df.n_kv_heads == 3).all()


def test_score_per_head_adds_a_head_column(tmp_path):
    out = tmp_path / "heads.csv"
    assert main(["score", str(minilm_folder()), "--per-head", "--out", str(out), "--quiet"]) == 0
    df = pd.read_csv(out)
    assert "head" in df.columns and len(df) == 6 * (12 + 1)


def _fails_cleanly(argv, capsys, *words):
    capsys.readouterr()  # drop what the set-up printed
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc != 0
    assert "Traceback" not in err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0]


def test_unknown_architecture_is_one_clear_line(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "no-such-model"}))
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2, 2)}, str(tmp_path / "model.safetensors"))
    _fails_cleanly(["score", str(tmp_path)], capsys, "unknown architecture", "no-such-model")


def test_missing_key_tensor_is_one_clear_line(tmp_path, capsys):
    T.BertModel(T.BertConfig(hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                             intermediate_size=64, vocab_size=100)).save_pretrained(tmp_path)
    from safetensors.torch import load_file, save_file

    state = load_file(str(tmp_path / "model.safetensors"))
    del state["encoder.layer.1.attention.self.key.weight"]
    save_file(state, str(tmp_path / "model.safetensors"))
    _fails_cleanly(["score", str(tmp_path)], capsys, "layers [1]")


def test_offline_hub_id_is_one_clear_line(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _fails_cleanly(["score", "someone/some-model"], capsys, "HF_HUB_OFFLINE")


def test_corrupt_safetensors_is_one_clear_line(tmp_path, capsys):
    T.BertModel(T.BertConfig(hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                             intermediate_size=64, vocab_size=100)).save_pretrained(tmp_path)
    f = tmp_path / "model.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])  # a truncated download
    _fails_cleanly(["score", str(tmp_path)], capsys, "safetensors")


def test_corrupt_gguf_is_one_clear_line(tmp_path, capsys):
    f = tmp_path / "broken.gguf"
    f.write_bytes(b"GGUF" + bytes(100))
    _fails_cleanly(["score", str(f)], capsys, "GGUF")


def test_bias_term_column_holds_each_layers_share_in_unit_interval(tmp_path):
    from adapters_data import zoo_checkpoint

    zoo_checkpoint("kokoro-albert")  # skips where the zoo package is not installed
    out = tmp_path / "albert.csv"
    assert main(["score", "kokoro-albert", "--bias-term", "--per-head", "--out", str(out), "--quiet"]) == 0
    df = pd.read_csv(out)
    assert len(df) == 13 and df.bias_term_share.between(0, 1).all()
    # the layer's share is the ratio of summed variances: it lies within its heads' range
    heads = df[df["head"] >= 0].bias_term_share
    assert heads.min() <= df[df["head"] == -1].bias_term_share.item() <= heads.max()


def test_bias_term_for_a_model_without_captured_inputs_is_one_clear_line(capsys):
    _fails_cleanly(["score", "gemma-3-270m", "--bias-term"], capsys, "--bias-term", "gemma-3-270m")
