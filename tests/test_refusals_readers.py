"""Checkpoints that would give a wrong number are refused with one line, or read correctly.

The malformed inputs are built by ``tests/malformed.py``.  Where a rule comes from the
safetensors format, the safetensors library itself is the independent judge: whatever it
refuses, ``companion`` must refuse too.  A quantization config must fit the stored
types and shapes (fp8 blocks, bitsandbytes row scales).
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from safetensors import safe_open

import malformed as bad
from one_line import one_line_error
from companion.adapters import read_qk
from companion.adapters.hf_folder import read_safetensors_header
from companion.base.errors import CompanionError
from companion.core.scores import directionality_score, symmetry_score


def _one_line_error(argv, capsys, *words):
    return one_line_error(argv, capsys, *words)


# ----------------------------------------------------------------------------- headers


@pytest.mark.parametrize("case", sorted(bad.MALFORMED_HEADERS))
def test_malformed_safetensors_headers_are_refused_like_the_safetensors_library(tmp_path, case):
    header, data = bad.MALFORMED_HEADERS[case]
    path = bad.write_raw_safetensors(tmp_path / "x.safetensors", header, data)
    with pytest.raises(Exception):  # the format's own reader refuses it ...
        with safe_open(str(path), "pt") as f:
            for k in f.keys():
                f.get_tensor(k)
    with pytest.raises(CompanionError, match="not a valid safetensors file"):  # ... and so do we
        read_safetensors_header(path)


def test_a_valid_raw_header_is_accepted_and_agrees_with_the_library(tmp_path):
    header, data = bad.two_tensor_header()
    path = bad.write_raw_safetensors(tmp_path / "x.safetensors", header, data)
    ours, _ = read_safetensors_header(path)
    with safe_open(str(path), "pt") as f:
        assert sorted(f.keys()) == sorted(ours)


def test_a_duplicated_tensor_name_in_one_header_is_refused(tmp_path):
    text = ('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},'
            ' "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}')
    path = bad.write_raw_safetensors(tmp_path / "x.safetensors", text, bytes(8))
    with pytest.raises(CompanionError, match="twice"):
        read_safetensors_header(path)


def test_a_header_length_beyond_the_file_is_refused(tmp_path):
    path = bad.header_with_huge_length(tmp_path / "x.safetensors")
    with pytest.raises(CompanionError, match="does not fit"):
        read_safetensors_header(path)


def test_a_malformed_header_in_a_model_folder_is_one_line(tmp_path, capsys):
    bad.tiny_llama(tmp_path)
    header, data = bad.MALFORMED_HEADERS["overlapping offsets"]
    bad.write_raw_safetensors(tmp_path / "model.safetensors", header, data)
    _one_line_error(["score", str(tmp_path)], capsys, "overlapping")


# ----------------------------------------------------------------------------- incomplete


def test_a_missing_shard_without_an_index_is_refused(tmp_path, capsys):
    bad.drop_a_shard_and_the_index(tmp_path)
    _one_line_error(["score", str(tmp_path)], capsys, "missing", "incomplete")


def test_an_index_listing_only_some_shards_is_refused(tmp_path, capsys):
    bad.index_listing_some_shards(tmp_path)
    _one_line_error(["score", str(tmp_path)], capsys, "incomplete")


def test_an_index_that_forgets_a_shard_still_on_disk_is_refused(tmp_path):
    bad.index_and_shard_names_without_the_last_shard(tmp_path)
    with pytest.raises(CompanionError, match="incomplete"):
        read_qk(tmp_path, progress=False)


def test_a_missing_layer_is_refused_against_the_configured_layer_count(tmp_path, capsys):
    bad.drop_a_layer(tmp_path, layer=1)
    line = _one_line_error(["score", str(tmp_path)], capsys, "3 decoder layers", "[1]")
    assert "num_hidden_layers" in line


def test_a_missing_last_gguf_block_is_refused(tmp_path):
    path = bad.tiny_gguf(tmp_path / "m.gguf", layers=2, block_count=3)
    with pytest.raises(CompanionError, match=r"announces 3 decoder layers.*\[2\]"):
        read_qk(path, progress=False)
    good = bad.tiny_gguf(tmp_path / "ok.gguf", layers=2)
    assert len(read_qk(good, progress=False).layers) == 2


# ----------------------------------------------------------------------------- which files


def test_the_index_decides_which_copy_of_a_duplicated_tensor_is_read(tmp_path):
    model, stray = bad.same_tensor_in_two_shards(tmp_path, honoured_by_index=True)
    ckpt = read_qk(tmp_path, progress=False)
    q, k = bad.qk_of(model, 0)
    assert torch.equal(ckpt.layers[0].Wq, q)  # not the stray copy of 3.0s
    assert torch.equal(ckpt.layers[0].Wk, k)


def test_a_duplicated_tensor_the_index_does_not_settle_is_refused(tmp_path, capsys):
    bad.same_tensor_in_two_shards(tmp_path, honoured_by_index=False)
    _one_line_error(["score", str(tmp_path)], capsys, "both", bad.Q0)


def test_unrelated_safetensors_files_in_one_folder_are_not_merged(tmp_path, capsys):
    bad.unrelated_safetensors_files(tmp_path)
    _one_line_error(["score", str(tmp_path)], capsys, "several .safetensors files",
                    "llama-a.safetensors")


def test_model_safetensors_wins_over_stray_files_beside_it(tmp_path):
    model = bad.tiny_llama(tmp_path)
    other = bad.tiny_llama(tmp_path / "other", seed=1)
    os.replace(tmp_path / "other" / "model.safetensors", tmp_path / "adapter.safetensors")
    ckpt = read_qk(tmp_path, progress=False)
    assert torch.equal(ckpt.layers[0].Wq, bad.qk_of(model, 0)[0])
    assert not torch.equal(ckpt.layers[0].Wq, bad.qk_of(other, 0)[0])


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_an_index_pointing_outside_the_model_folder_is_refused(tmp_path, how, capsys):
    folder = bad.index_pointing_outside(tmp_path / "model", how)
    _one_line_error(["score", str(folder)], capsys, "outside the model folder")


def test_a_hub_cache_snapshot_whose_files_link_into_blobs_is_read(tmp_path):
    """The Hugging Face cache keeps files as symlinks to ../../blobs: that is not 'outside'."""
    src = tmp_path / "src"
    model, _ = bad.sharded_llama(src)
    snap = tmp_path / "models--org--tiny" / "snapshots" / "abc"
    blobs = tmp_path / "models--org--tiny" / "blobs"
    snap.mkdir(parents=True)
    blobs.mkdir()
    for f in src.iterdir():
        os.replace(f, blobs / f.name)
        (snap / f.name).symlink_to(os.path.relpath(blobs / f.name, snap))
    ckpt = read_qk(snap, progress=False)
    assert torch.equal(ckpt.layers[2].Wk, bad.qk_of(model, 2)[1])


def test_a_malformed_index_is_one_line(tmp_path, capsys):
    bad.sharded_llama(tmp_path)
    bad.edit_index(tmp_path, lambda idx: idx.__setitem__("weight_map", ["not", "a", "map"]))
    _one_line_error(["score", str(tmp_path)], capsys, "weight_map", "malformed")


def test_an_index_naming_a_tensor_its_shard_lacks_is_refused(tmp_path):
    bad.sharded_llama(tmp_path)
    bad.edit_index(tmp_path, lambda idx: idx["weight_map"].__setitem__(
        "model.layers.9.self_attn.q_proj.weight", sorted(set(idx["weight_map"].values()))[0]))
    with pytest.raises(CompanionError, match="does not hold it"):
        read_qk(tmp_path, progress=False)


# ----------------------------------------------------------------------------- quantized


def _scores(W):
    q, k = W
    M = q.double().T @ k.double().repeat_interleave(4, 0)  # 8 heads, 2 kv heads: grouped
    return float(symmetry_score(M)), float(directionality_score(M))


def _check_dequantized(ckpt, model, stored):
    for i, layer in enumerate(ckpt.layers):
        name = f"model.layers.{i}.self_attn.%s_proj.weight"
        torch.testing.assert_close(layer.Wq, stored[name % "q"], rtol=1e-6, atol=0)
        torch.testing.assert_close(layer.Wk, stored[name % "k"], rtol=1e-6, atol=0)
        # and the scores stay near those of the float model the checkpoint was made from
        q, k = bad.qk_of(model, i)
        for ours, true in zip(_scores((layer.Wq, layer.Wk)), _scores((q, k))):
            assert ours == pytest.approx(true, abs=0.05)


def test_bitsandbytes_int8_is_dequantized_with_its_row_scales(tmp_path):
    model, stored = bad.bnb_int8_llama(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    assert ckpt.meta["quantization"] == "bitsandbytes-8bit"
    _check_dequantized(ckpt, model, stored)
    assert ckpt.n_parameters == model.num_parameters()


def test_fp8_with_block_scales_is_dequantized(tmp_path):
    model, stored = bad.fp8_block_llama(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    assert ckpt.meta["quantization"].startswith("fp8")
    _check_dequantized(ckpt, model, stored)


@pytest.mark.parametrize("method,name", [("gptq", "GPTQ"), ("awq", "AWQ"),
                                         ("compressed-tensors", "compressed-tensors")])
def test_other_quantization_methods_are_refused_by_name(tmp_path, capsys, method, name):
    bad.gptq_like_llama(tmp_path)
    bad.edit_config(tmp_path, quantization_config={"quant_method": method, "bits": 4})
    _one_line_error(["score", str(tmp_path)], capsys, name, "unquantized")


def test_bitsandbytes_4bit_is_refused_by_name(tmp_path, capsys):
    bad.tiny_llama(tmp_path)
    bad.edit_config(tmp_path, quantization_config={"quant_method": "bitsandbytes",
                                                   "load_in_4bit": True})
    _one_line_error(["score", str(tmp_path)], capsys, "bitsandbytes 4-bit")


def test_int8_weights_without_a_quantization_config_are_refused(tmp_path, capsys):
    bad.bnb_int8_llama(tmp_path)
    bad.edit_config(tmp_path, quantization_config=None)
    _one_line_error(["score", str(tmp_path)], capsys, "quantization_config")


# ----------------------------------------------------------------------------- values


def test_nan_weights_are_one_line(tmp_path, capsys):
    bad.nan_in_a_query(tmp_path)
    _one_line_error(["score", str(tmp_path)], capsys, "NaN", "layer 2")


def test_nan_in_a_gguf_is_one_line(tmp_path, capsys):
    path = bad.tiny_gguf(tmp_path / "m.gguf", nan=True)
    _one_line_error(["score", str(path)], capsys, "NaN")


def test_zero_size_query_tensors_are_one_line(tmp_path, capsys):
    bad.zero_size_query(tmp_path)
    _one_line_error(["score", str(tmp_path)], capsys, "empty")


def test_a_truncated_gguf_is_one_line(tmp_path, capsys):
    path = bad.truncated(bad.tiny_gguf(tmp_path / "m.gguf"))
    _one_line_error(["score", str(path)], capsys, "GGUF")


def test_a_config_that_is_not_an_object_is_one_line(tmp_path, capsys):
    bad.tiny_llama(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps([1, 2, 3]))
    _one_line_error(["score", str(tmp_path)], capsys, "config.json")


# ----------------------------------------------------------------------------- torch files


def test_legacy_non_zip_pytorch_model_bin_is_read_under_allow_pickle(tmp_path):
    model = bad.tiny_llama(tmp_path / "st")
    folder = bad.legacy_pickle_folder(tmp_path / "legacy", model)
    ckpt = read_qk(folder, allow_pickle=True, progress=False)
    for i, layer in enumerate(ckpt.layers):
        q, k = bad.qk_of(model, i)
        assert torch.equal(layer.Wq, q) and torch.equal(layer.Wk, k)


def test_a_pickle_that_would_run_code_is_refused_without_running_it(tmp_path, capsys):
    model = bad.tiny_llama(tmp_path / "st")
    marker = tmp_path / "ran"
    folder = bad.code_running_pickle_folder(tmp_path / "evil", model, marker)
    _one_line_error(["score", str(folder), "--allow-pickle"], capsys, "plain tensors")
    assert not marker.exists()


# ----------------------------------------------------------------------------- names


def test_a_bare_name_that_is_not_a_folder_is_not_taken_for_a_hub_id(capsys, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    line = _one_line_error(["score", "no-such-model-anywhere"], capsys, "owner/name",
                           "companion zoo list")
    assert "not a folder" in line


def test_huge_but_finite_weights_are_not_taken_for_nan():
    """Weights near the float32 limit are finite, however their sums overflow."""
    from companion.adapters.reader import _check_finite
    from companion.adapters.types import QKLayer

    big = torch.full((4, 4), 3e38)  # finite, but the sum overflows float32
    _check_finite(QKLayer(0, "encoder", big, big, 1, 1), "x")
    big[1, 2] = float("inf")
    with pytest.raises(CompanionError, match="NaN or infinite"):
        _check_finite(QKLayer(0, "encoder", big, big.clone(), 1, 1), "x")


# ---------------------------------------------------------------- quantization that does not fit


def _retype_qk(folder, dtype):
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    state = load_file(str(path))
    for k in list(state):
        if k.endswith(("q_proj.weight", "k_proj.weight")):
            state[k] = torch.round(state[k].float() * 100).to(dtype)
    save_file(state, str(path), metadata={"format": "pt"})


@pytest.mark.parametrize("method, stored", [("fp8", torch.int8), ("fp8", torch.int32),
                                            ("bitsandbytes", torch.int32), ("bitsandbytes", torch.float8_e4m3fn)])
def test_a_quantization_config_that_does_not_fit_the_stored_type_is_refused(tmp_path, capsys, method, stored):
    bad.tiny_llama(tmp_path)
    _retype_qk(tmp_path, stored)
    qc = ({"quant_method": "fp8", "weight_block_size": [16, 16]} if method == "fp8" else
          {"quant_method": "bitsandbytes", "load_in_8bit": True})
    bad.edit_config(tmp_path, quantization_config=qc)
    _one_line_error(["score", str(tmp_path)], capsys, "does not fit", str(stored).replace("torch.", ""))


def test_a_bitsandbytes_checkpoint_as_stored_still_reads_to_its_weights(tmp_path):
    from companion.adapters import read_qk

    _, floats = bad.bnb_int8_llama(tmp_path)
    got = read_qk(tmp_path, progress=False)
    assert torch.allclose(got.layers[0].Wq, floats["model.layers.0.self_attn.q_proj.weight"], atol=1e-6)


def _edit_weights(folder, edit):
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    state = load_file(str(path))
    edit(state)
    save_file({k: v.contiguous() for k, v in state.items()}, str(path), metadata={"format": "pt"})


@pytest.mark.parametrize("reshape", [lambda w: w[0], lambda w: w[None]])
def test_an_fp8_weight_that_is_not_a_matrix_is_refused_in_one_line(tmp_path, capsys, reshape):
    bad.fp8_block_llama(tmp_path)
    _edit_weights(tmp_path, lambda s: s.__setitem__(bad.Q0, reshape(s[bad.Q0])))
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, bad.Q0, "not a matrix")


@pytest.mark.parametrize("reshape", [lambda w: w[0, 0].clone(), lambda w: w[0]])
def test_a_bitsandbytes_weight_that_is_not_a_matrix_is_refused_not_broadcast(tmp_path, capsys, reshape):
    # a vector of 64 int8 values with 64 row scales was broadcast into a 64 x 64 "weight"
    bad.bnb_int8_llama(tmp_path)
    _edit_weights(tmp_path, lambda s: s.__setitem__(bad.Q0, reshape(s[bad.Q0])))
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, bad.Q0, "not a matrix")


@pytest.mark.parametrize("method, scale", [("fp8", "weight_scale_inv"), ("bnb", "SCB")])
def test_a_quantization_scale_stored_as_integers_is_named_as_a_scale(tmp_path, capsys, method, scale):
    (bad.fp8_block_llama if method == "fp8" else bad.bnb_int8_llama)(tmp_path)
    name = bad.Q0[: -len("weight")] + scale
    _edit_weights(tmp_path, lambda s: s.__setitem__(name, s[name].to(torch.int8 if method == "bnb" else
                                                                      torch.float8_e4m3fn)))
    line = one_line_error(["score", str(tmp_path), "--quiet"], capsys, name, "scales must be stored as floats")
    assert "weight_scaweight" not in line and "prSCB" not in line


@pytest.mark.parametrize("block", [[True, 16], 0, [], [16, 0]])
def test_an_fp8_block_size_that_is_not_two_counts_is_refused_by_name(tmp_path, capsys, block):
    bad.fp8_block_llama(tmp_path)
    bad.edit_config(tmp_path, quantization_config={"quant_method": "fp8", "weight_block_size": block})
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, "weight_block_size", "not two positive integers")
