"""Parameter counts and survey rows of checkpoints read from files: a tied output matrix saved under
both its names, a Marian model saved without its sinusoidal position tables, the head numbers of a
model saved after ``prune_heads``, and the head pairings written by the two survey paths.

Right answers come from outside the code under test: transformers' own ``num_parameters()`` of a
tiny model built in-process from a random initialisation (nothing downloaded), and NumPy on the
weight matrices of that model.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from companion.adapters import open_source, read_qk
from one_line import refused

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()
# the model classes load lazily: loaded once here, not inside the first case that builds one
from transformers import (BartForConditionalGeneration, BertModel, GPT2LMHeadModel,  # noqa: E402,F401
                          LlamaForCausalLM, MarianMTModel)

V, D = 50, 16


def _save_all_names(model, folder: Path, drop_tie_flag: bool = False) -> Path:
    """The model's whole state dict as safetensors, every tied name stored as its own copy (as
    some converters and older savers write them), with the model's config.json."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    config = model.config.to_dict()
    if drop_tie_flag:
        config.pop("tie_word_embeddings", None)
    (folder / "config.json").write_text(json.dumps(config))
    save_file({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()},
              str(folder / "model.safetensors"))
    return folder


def _gpt2():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_embd=D, n_head=2, vocab_size=V, n_positions=32,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


def _llama(tied: bool, n_kv: int = 1, n_heads: int = 2, layers: int = 1):
    torch.manual_seed(1)
    cfg = transformers.LlamaConfig(num_hidden_layers=layers, hidden_size=D, intermediate_size=32,
                                   num_attention_heads=n_heads, num_key_value_heads=n_kv, vocab_size=V,
                                   tie_word_embeddings=tied)
    return transformers.LlamaForCausalLM(cfg)


# ============================================================ 1. a tied output matrix stored under both names


@pytest.mark.parametrize("make", [_gpt2, lambda: _llama(tied=True)], ids=["gpt2", "llama-tied"])
def test_a_tied_output_matrix_saved_under_both_names_counts_once(tmp_path, make):
    model = make()
    folder = _save_all_names(model, tmp_path / "m")
    src = open_source(folder)
    assert "lm_head.weight" in src.shapes   # both names are in the file
    assert src.n_parameters == model.num_parameters()


def test_without_a_tie_flag_a_stored_copy_is_told_by_its_values(tmp_path):
    tied = _gpt2()
    untied = _llama(tied=False)
    assert open_source(_save_all_names(tied, tmp_path / "t", drop_tie_flag=True)).n_parameters \
        == tied.num_parameters()
    # an output matrix of its own (values apart from the embedding's) is a parameter of its own
    assert open_source(_save_all_names(untied, tmp_path / "u", drop_tie_flag=True)).n_parameters \
        == untied.num_parameters()


def test_a_hub_repository_tells_a_stored_copy_by_the_rows_it_fetches(tmp_path, monkeypatch):
    from local_hub import LocalHub

    model = _gpt2()
    folder = _save_all_names(model, tmp_path / "m", drop_tie_flag=True)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("companion.adapters.hub._hub_offline", lambda: False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with LocalHub({"someone/tiny-gpt2": folder}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        src = open_source("someone/tiny-gpt2")
        before = hub.bytes_served
        assert src.n_parameters == model.num_parameters()
        fetched = hub.bytes_served - before
    # 16 rows of the embedding and 16 of the output matrix, float32, and nothing else
    assert fetched == 2 * 16 * D * 4


def test_an_untied_model_keeps_both_matrices(tmp_path):
    model = _llama(tied=False)
    folder = _save_all_names(model, tmp_path / "m")
    w = model.state_dict()
    embed, head = w["model.embed_tokens.weight"].numel(), w["lm_head.weight"].numel()
    assert open_source(folder).n_parameters == model.num_parameters()
    assert model.num_parameters() == sum(t.numel() for t in model.parameters()) and embed == head == V * D


def test_an_encoder_decoder_saved_with_every_copy_of_its_shared_embedding_counts_it_once(tmp_path):
    torch.manual_seed(2)
    cfg = transformers.BartConfig(vocab_size=V, d_model=D, encoder_layers=1, decoder_layers=1,
                                  encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                                  decoder_ffn_dim=32, max_position_embeddings=20)
    model = transformers.BartForConditionalGeneration(cfg)
    src = open_source(_save_all_names(model, tmp_path / "m"))
    assert {"model.encoder.embed_tokens.weight", "lm_head.weight"} <= set(src.shapes)
    assert src.n_parameters == model.num_parameters()


# ============================================================ 2. Marian's unstored position tables


def _marian(**extra):
    torch.manual_seed(3)
    cfg = transformers.MarianConfig(vocab_size=V, d_model=D, encoder_layers=1, decoder_layers=1,
                                    encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                                    decoder_ffn_dim=32, max_position_embeddings=20, pad_token_id=V - 1,
                                    decoder_start_token_id=V - 1, **extra)
    return transformers.MarianMTModel(cfg)


@pytest.mark.parametrize("shared", [True, False])
def test_a_marian_model_saved_without_its_position_tables_counts_them(tmp_path, shared):
    model = _marian(share_encoder_decoder_embeddings=shared)
    model.save_pretrained(tmp_path / "m")
    src = open_source(tmp_path / "m")
    assert not any("embed_positions" in n for n in src.shapes)   # what the saved file leaves out
    assert src.n_parameters == model.num_parameters()


def test_a_marian_file_that_stores_its_tables_counts_them_once(tmp_path):
    model = _marian()
    src = open_source(_save_all_names(model, tmp_path / "m"))
    assert "model.encoder.embed_positions.weight" in src.shapes
    assert src.n_parameters == model.num_parameters()


def test_a_marian_width_that_is_no_number_is_refused_in_one_line(tmp_path):
    model = _marian()
    model.save_pretrained(tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    (tmp_path / "m" / "config.json").write_text(json.dumps({**cfg, "max_position_embeddings": "20"}))
    refused(lambda: open_source(tmp_path / "m").n_parameters, "max_position_embeddings", "config.json")


# ============================================================ 3. heads kept after prune_heads


def _sym(M) -> float:
    """Def. 3.1 from the split into symmetric and skew parts."""
    M = np.asarray(M, dtype=np.float64)
    S, N = (M + M.T) / 2, (M - M.T) / 2
    return float(((S ** 2).sum() - (N ** 2).sum()) / (M ** 2).sum())


def test_a_pruned_model_numbers_its_kept_heads_as_before_pruning(tmp_path):
    """The file prune_heads leaves: config.json's pruned_heads (the removed heads' original numbers)
    and each layer's query/key rows of the kept heads only, in their order."""
    from safetensors.numpy import save_file

    from companion.survey.tables import layer_scores

    torch.manual_seed(4)
    cfg = transformers.BertConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=32, max_position_embeddings=20)
    sd = {k: v.detach().numpy().astype(np.float64) for k, v in transformers.BertModel(cfg).state_dict().items()}
    removed = {0: [1], 1: [0, 2]}
    kept = {layer: [h for h in range(4) if h not in gone] for layer, gone in removed.items()}
    stored = {}
    for layer in removed:
        for part in ("query", "key"):
            name = f"encoder.layer.{layer}.attention.self.{part}.weight"
            stored[name] = np.concatenate([sd[name][h * 8:(h + 1) * 8] for h in kept[layer]]).astype(np.float32)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({**cfg.to_dict(), "pruned_heads": removed}))
    save_file(stored, str(tmp_path / "m" / "model.safetensors"))
    ckpt = read_qk(tmp_path / "m", progress=False)
    df = layer_scores(ckpt, per_head=True)
    for layer in removed:
        q = sd[f"encoder.layer.{layer}.attention.self.query.weight"]   # before pruning: 4 heads of 8 rows
        k = sd[f"encoder.layer.{layer}.attention.self.key.weight"]
        rows = df[(df["layer"] == layer) & (df["head"] >= 0)].sort_values("head")
        assert rows["head"].tolist() == kept[layer]
        assert ckpt.layers[layer].head_ids == tuple(kept[layer])
        expected = [_sym(q[h * 8:(h + 1) * 8].T @ k[h * 8:(h + 1) * 8]) for h in kept[layer]]
        assert rows["symmetry"].to_numpy() == pytest.approx(expected, abs=1e-5)


def test_an_unpruned_model_numbers_its_heads_from_zero(tmp_path):
    from companion.survey.tables import layer_scores

    model = _llama(tied=False, n_kv=2, n_heads=4)
    model.save_pretrained(tmp_path / "m")
    ckpt = read_qk(tmp_path / "m", progress=False)
    assert ckpt.layers[0].head_ids is None
    assert layer_scores(ckpt, per_head=True).query("head >= 0")["head"].tolist() == [0, 1, 2, 3]


# ============================================================ 4. the two survey paths write the same rows


@pytest.mark.parametrize("n_kv,pairings", [(1, ["grouped"]), (2, ["grouped", "modulo"])], ids=["mqa", "gqa"])
def test_score_zoo_and_score_entry_write_the_same_rows(tmp_path, monkeypatch, n_kv, pairings):
    import companion.zoo.registry as registry
    from companion.survey.scoring import score_entry
    from companion.survey.sources import SurveySource
    from companion.survey.zoo_walk import score_zoo

    model = _llama(tied=False, n_kv=n_kv, n_heads=4, layers=2)
    model.save_pretrained(tmp_path / "m")
    entry = SimpleNamespace(name="tiny", catalog_key=None, model="tiny/llama", role="decoder", modality="text",
                            reader="safetensors", licence="none", sha256="0" * 64, reader_module="none")
    monkeypatch.setattr(registry, "ZOO", {"tiny": entry})
    monkeypatch.setattr(registry, "reader_available", lambda m: True)
    monkeypatch.setattr(registry, "zoo_path", lambda name: tmp_path / "m")
    _, zoo, _ = score_zoo(["tiny"], catalog=pd.DataFrame({"key": [], "n_params": []}))
    one = score_entry({"key": "tiny", "hub_id": "tiny/llama", "n_params": None},
                      SurveySource(location=str(tmp_path / "m"), kind="local"))
    index = ["pairing", "layer", "head"]
    a, b = zoo.set_index(index).sort_index(), one.set_index(index).sort_index()
    assert a.index.equals(b.index)
    assert sorted(set(a.index.get_level_values("pairing"))) == pairings
    for col in ("symmetry", "directionality", "n_params"):
        assert a[col].to_numpy() == pytest.approx(b[col].to_numpy(), abs=1e-12)
    # the grouped whole-layer form, from the model's own weights: M = sum_h Wq_h^T Wk_(h // (4 / n_kv))
    w = {k: v.detach().numpy().astype(np.float64) for k, v in model.state_dict().items()}
    for layer in (0, 1):
        q, k = w[f"model.layers.{layer}.self_attn.q_proj.weight"], w[f"model.layers.{layer}.self_attn.k_proj.weight"]
        dh = q.shape[0] // 4
        M = sum(q[h * dh:(h + 1) * dh].T @ k[(h // (4 // n_kv)) * dh:(h // (4 // n_kv) + 1) * dh] for h in range(4))
        assert a.loc[("grouped", layer, -1), "symmetry"] == pytest.approx(_sym(M), abs=1e-6)
