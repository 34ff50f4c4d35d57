"""Sources and the public entry point: sharded, pickled, GGUF permutation, scores table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import transformers as T
from companion.adapters import read_qk, unpermute_llama_cpp
from companion.core.bilinear import per_head_bilinear_forms
from companion.base.errors import CompanionError
from companion.core.scores import directionality_score, symmetry_score
from companion.survey.tables import layer_scores, summarize_layers


def _tiny_llama(tmp_path, **save):
    torch.manual_seed(0)
    cfg = T.LlamaConfig(hidden_size=64, num_attention_heads=8, num_key_value_heads=2,
                        num_hidden_layers=3, intermediate_size=96, vocab_size=100)
    model = T.LlamaModel(cfg)
    model.save_pretrained(tmp_path, **save)
    return model


def test_sharded_checkpoint_gives_the_same_forms_as_one_file(tmp_path):
    model = _tiny_llama(tmp_path / "one")
    T.LlamaModel(model.config).load_state_dict(model.state_dict())
    model.save_pretrained(tmp_path / "sharded", max_shard_size="50KB")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").exists()
    one = read_qk(tmp_path / "one", progress=False)
    sharded = read_qk(tmp_path / "sharded", progress=False)
    assert len(one.layers) == len(sharded.layers) == 3
    for a, b in zip(one.layers, sharded.layers):
        assert torch.equal(a.Wq, b.Wq) and torch.equal(a.Wk, b.Wk)
    assert one.n_parameters == sharded.n_parameters == model.num_parameters()


def test_pickled_weights_need_explicit_permission(tmp_path):
    model = _tiny_llama(tmp_path / "st")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    torch.save(model.state_dict(), bin_dir / "pytorch_model.bin")
    (bin_dir / "config.json").write_text((tmp_path / "st" / "config.json").read_text())
    with pytest.raises(CompanionError, match="allow_pickle"):
        read_qk(bin_dir, progress=False)
    pickled = read_qk(bin_dir, allow_pickle=True, progress=False)
    safe = read_qk(tmp_path / "st", progress=False)
    for a, b in zip(pickled.layers, safe.layers):
        assert torch.equal(a.Wq, b.Wq) and torch.equal(a.Wk, b.Wk)


def _llama_cpp_permute(w: torch.Tensor, n_head: int) -> torch.Tensor:
    """llama.cpp's converter (convert_hf_to_gguf.py, LlamaModel.permute), written out."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


@pytest.mark.parametrize("heads", [1, 3, 9])
def test_unpermute_inverts_llama_cpp_permutation(heads):
    w = torch.randn(heads * 64, 40)
    permuted = _llama_cpp_permute(w, heads)
    assert not torch.equal(permuted, w)
    assert torch.equal(unpermute_llama_cpp(permuted, heads), w)


def test_llama_cpp_permutation_leaves_every_head_form_unchanged():
    q, k = torch.randn(9 * 64, 50, dtype=torch.float64), torch.randn(3 * 64, 50, dtype=torch.float64)
    before = per_head_bilinear_forms(q, k, 9, 3)
    after = per_head_bilinear_forms(_llama_cpp_permute(q, 9), _llama_cpp_permute(k, 3), 9, 3)
    torch.testing.assert_close(before, after)


def test_per_head_table_agrees_with_dense_per_head_forms(tmp_path):
    _tiny_llama(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    df = layer_scores(ckpt, per_head=True)
    assert set(df["head"]) == set(range(-1, 8))
    for layer in ckpt.layers:
        forms = per_head_bilinear_forms(layer.Wq.double(), layer.Wk.double(), 8, 2)
        rows = df[(df.layer == layer.index) & (df["head"] >= 0)].sort_values("head")
        np.testing.assert_allclose(rows.symmetry, symmetry_score(forms), atol=1e-10)
        np.testing.assert_allclose(rows.directionality, directionality_score(forms), atol=1e-10)
        whole = df[(df.layer == layer.index) & (df["head"] == -1)].iloc[0]
        assert whole.symmetry == pytest.approx(symmetry_score(forms.sum(0)), abs=1e-10)


def test_layer_table_has_the_documented_columns(tmp_path):
    _tiny_llama(tmp_path)
    df = layer_scores(read_qk(tmp_path, progress=False))
    for col in ("model", "component", "role", "layer", "head", "symmetry", "directionality",
                "d_model", "n_heads", "n_kv_heads"):
        assert col in df.columns
    assert (df["head"] == -1).all() and len(df) == 3
    assert (df.n_heads == 8).all() and (df.n_kv_heads == 2).all() and (df.d_model == 64).all()


def test_cross_attention_layers_are_not_scored(tmp_path):
    T.T5Model(T.T5Config(d_model=32, d_kv=8, num_heads=4, num_layers=2, d_ff=64,
                         vocab_size=100)).save_pretrained(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    assert sorted({l.role for l in ckpt.layers}) == ["causal", "cross", "encoder"]
    df = layer_scores(ckpt)
    assert "cross" not in set(df.role) and len(df) == 4


def test_summary_uses_linear_interpolation_quartiles():
    df = pd.DataFrame({"model": "m", "component": "encoder", "layer": range(5), "head": -1,
                       "symmetry": [0.0, 1.0, 2.0, 3.0, 10.0],
                       "directionality": [-4.0, -1.0, 0.0, 0.5, 1.0]})
    s = summarize_layers(df).iloc[0]
    assert (s.symmetry_q25, s.symmetry_median, s.symmetry_q75) == (1.0, 2.0, 3.0)
    assert (s.directionality_q25, s.directionality_median, s.directionality_q75) == (-1.0, 0.0, 0.5)
    assert s.n_layers == 5


def test_modulo_pairing_differs_from_grouped_only_under_gqa(tmp_path):
    _tiny_llama(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    layer = ckpt.layers[0]
    assert not torch.allclose(layer.form("grouped"), layer.form("modulo"))
    mha = type(layer)(0, "causal", layer.Wq, layer.Wq, 8, 8)
    assert torch.equal(mha.form("grouped"), mha.form("modulo"))


def test_head_counts_that_do_not_fit_the_weights_are_a_clear_error(tmp_path):
    import json

    _tiny_llama(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["num_attention_heads"] = 6  # 64 rows do not split into 6 heads
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CompanionError, match="does not match its configuration"):
        read_qk(tmp_path, progress=False)


def test_tensor_names_with_two_prefixes_resolve_to_the_shortest():
    from companion.adapters.families import llama

    keys = [f"{p}layers.{i}.self_attn.{w}_proj.weight"
            for p in ("model.", "teacher.model.") for i in range(3) for w in "qk"]
    plans = llama({"num_attention_heads": 2}, keys)
    assert [p.keys[0] for p in plans] == [f"model.layers.{i}.self_attn.q_proj.weight" for i in range(3)]
