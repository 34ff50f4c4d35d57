"""Inputs that would give a wrong number or a lost file, round 2: catalog keys that escape
--out, --out onto the model's own files, masked arrays, long doubles beyond float64, a
checkpoint that is not one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import malformed as bad
from one_line import one_line_error
from companion.cli import main
from companion.base.errors import CompanionError
from companion.core.scores import directionality_score, symmetry_score


def _one_line_error(argv, capsys, *words):
    return one_line_error(argv, capsys, *words)


@pytest.mark.parametrize("key", ["../../x", "a/b", ".hidden", "x" * 200])
def test_a_catalog_key_that_is_not_a_plain_name_is_refused(tmp_path, key):
    from companion.zoo.catalog import DATA_DIR, load_catalog

    text = (DATA_DIR / "catalog.csv").read_text().splitlines()
    header, first = text[0], text[1]
    old_key = first.split(",", 1)[0]
    path = tmp_path / "catalog.csv"
    path.write_text("\n".join([header, key + first[len(old_key):]] + text[2:]) + "\n")
    with pytest.raises(ValueError, match="not a plain name"):
        load_catalog(path)


def test_score_out_onto_the_models_own_config_is_refused_and_leaves_it(tmp_path, capsys):
    bad.tiny_llama(tmp_path / "m")
    before = (tmp_path / "m" / "config.json").read_bytes()
    _one_line_error(["score", str(tmp_path / "m"), "--out", str(tmp_path / "m" / "config.json")], capsys,
                    "would overwrite")
    assert (tmp_path / "m" / "config.json").read_bytes() == before
    assert main(["score", str(tmp_path / "m"), "--out", str(tmp_path / "scores.csv"), "--quiet"]) == 0


def test_a_masked_array_with_masked_entries_is_refused_and_an_unmasked_one_is_scored():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((6, 6))
    masked = np.ma.masked_array(M, mask=np.eye(6, dtype=bool))
    with pytest.raises(ValueError, match="6 masked entries"):
        symmetry_score(masked)
    unmasked = np.ma.masked_array(M, mask=False)
    assert symmetry_score(unmasked) == pytest.approx(symmetry_score(M), abs=0)
    assert directionality_score(unmasked) == pytest.approx(directionality_score(M), abs=0)


@pytest.mark.skipif(np.finfo(np.longdouble).maxexp <= np.finfo(np.float64).maxexp,
                    reason="long double is float64 on this platform")
def test_a_long_double_matrix_beyond_float64_is_refused_and_rescaled_it_scores_right():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((5, 5))
    tiny = M.astype(np.longdouble) * np.longdouble("1e-4000")
    with pytest.raises(ValueError, match="outside float64's range"):
        symmetry_score(tiny)
    rescaled = (tiny / np.abs(tiny).max()).astype(np.float64)
    assert symmetry_score(rescaled) == pytest.approx(symmetry_score(M), rel=1e-12)   # the scale does not matter


@pytest.mark.parametrize("payload", [[1, 2, 3], {"model": {}}])
def test_a_checkpoint_that_is_not_one_is_refused_in_one_line(tmp_path, payload):
    from companion.train.runner.loop import load_checkpoint

    torch.save(payload, tmp_path / "checkpoint.pt")
    with pytest.raises(CompanionError, match="not a checkpoint this package wrote"):
        load_checkpoint(tmp_path / "checkpoint.pt", verify=False)


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
