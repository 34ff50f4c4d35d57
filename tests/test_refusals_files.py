"""Only regular files are read, and JSON within bounds: a FIFO, /dev/zero behind a link, a
huge or deeply nested config are refused in one line, within seconds, never opened or read
to the end."""

from __future__ import annotations

import os

import pytest

import malformed as bad
from deadline import within
from one_line import one_line_error


def _one_line_error(argv, capsys, *words):
    return one_line_error(argv, capsys, *words, within_s=20)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_config_json_is_refused_without_opening_it(tmp_path, capsys):
    bad.tiny_llama(tmp_path)
    (tmp_path / "config.json").unlink()
    os.mkfifo(tmp_path / "config.json")            # opening it for reading would block forever
    _one_line_error(["score", str(tmp_path)], capsys, "a FIFO", "not a regular file")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_config_json_linked_to_dev_zero_is_refused(tmp_path, capsys):
    bad.tiny_llama(tmp_path)
    (tmp_path / "config.json").unlink()
    (tmp_path / "config.json").symlink_to("/dev/zero")
    _one_line_error(["score", str(tmp_path)], capsys, "a device")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_gguf_linked_to_dev_zero_is_named_as_a_device_not_a_missing_path(tmp_path, capsys):
    (tmp_path / "m.gguf").symlink_to("/dev/zero")
    line = _one_line_error(["score", str(tmp_path / "m.gguf")], capsys, "a device")
    assert "neither an existing path" not in line


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_weights_is_refused(tmp_path, capsys):
    bad.tiny_llama(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    os.mkfifo(tmp_path / "model.safetensors")
    _one_line_error(["score", str(tmp_path)], capsys, "a FIFO")


def test_a_deeply_nested_config_is_one_line(tmp_path, capsys):
    bad.tiny_llama(tmp_path)
    (tmp_path / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    _one_line_error(["score", str(tmp_path)], capsys, "config")


def test_a_config_far_larger_than_any_config_is_refused_before_reading(tmp_path, capsys, monkeypatch):
    import companion.adapters.tensor_source as sources

    bad.tiny_llama(tmp_path)
    monkeypatch.setattr(sources, "MAX_JSON_BYTES", 100)    # the real limit, scaled down for the test
    monkeypatch.setattr(sources._read_json, "__defaults__", (100,))
    _one_line_error(["score", str(tmp_path)], capsys, "limit 100")


# ---------------------------------------------------------------- weights that are not a regular file


def test_allow_pickle_refuses_a_fifo_weights_file_at_once(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=1)
    (tmp_path / "model.safetensors").unlink()
    os.mkfifo(tmp_path / "pytorch_model.bin")
    with within(20, tmp_path / "pytorch_model.bin"):
        one_line_error(["score", str(tmp_path), "--allow-pickle", "--quiet"], capsys, "FIFO")
