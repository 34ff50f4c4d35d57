"""The two real offline checkpoints: all-MiniLM-L6-v2 (safetensors) and SmolLM2 (GGUF)."""

from __future__ import annotations

import pytest
import torch

from adapters_data import minilm_folder, smollm2_gguf, zoo_checkpoint
from companion.adapters import read_qk
from companion.adapters.gguf_file import transformers_parse_once
from companion.core.bilinear import bilinear_form
from qk_logits import encoder_logit_errors


@pytest.fixture(scope="module")
def minilm():
    return read_qk(minilm_folder(), progress=False)


@pytest.fixture(scope="module")
def smollm2():
    return read_qk(smollm2_gguf(), progress=False)


def test_minilm_has_six_bert_layers_of_width_384(minilm):
    assert minilm.family == "bert"
    assert [l.index for l in minilm.layers] == list(range(6))
    assert all(l.d_model == 384 and l.n_heads == 12 and l.role == "encoder" for l in minilm.layers)


def test_minilm_reads_only_its_query_and_key_bytes(minilm):
    qk_bytes = sum(l.Wq.numel() + l.Wk.numel() for l in minilm.layers) * 4  # stored as F32
    assert qk_bytes <= minilm.bytes_read <= 1.05 * qk_bytes
    total = sum(p.stat().st_size for p in minilm_folder().glob("*.safetensors"))
    assert minilm.bytes_read < 0.5 * total


def test_minilm_parameter_count_matches_the_loaded_model(minilm):
    from transformers import BertModel

    model = BertModel.from_pretrained(minilm_folder())
    assert minilm.n_parameters == model.num_parameters()


def test_minilm_form_reproduces_the_models_logits_in_every_layer(minilm):
    from transformers import BertModel

    model = BertModel.from_pretrained(minilm_folder()).eval().double()
    torch.manual_seed(0)
    errors = encoder_logit_errors(model, minilm, "encoder.layer.{i}.attention.self.query",
                                  "encoder.layer.{i}.attention.self.key", "interface",
                                  torch.randint(1000, 30000, (8, 64)))
    assert len(errors) == 6 and max(errors.values()) < 1e-9


def test_smollm2_gguf_has_thirty_grouped_query_layers(smollm2):
    assert smollm2.family == "llama" and smollm2.meta["format"] == "gguf"
    assert len(smollm2.layers) == 30
    for l in smollm2.layers:
        assert (l.n_heads, l.n_kv_heads, l.d_model, l.d_head) == (9, 3, 576, 64)
        assert l.Wq.shape == (576, 576) and l.Wk.shape == (192, 576)


def test_smollm2_gguf_reads_about_a_tenth_of_the_file(smollm2):
    size = smollm2_gguf().stat().st_size
    assert smollm2.bytes_read < 0.15 * size
    # n_parameters from the tensor infos: SmolLM2-135M has ~135M values
    assert 1.3e8 < smollm2.n_parameters < 1.4e8


@pytest.mark.slow
def test_smollm2_gguf_matches_transformers_own_gguf_loader(smollm2):
    """Same rows of Wq, Wk (so the llama.cpp permutation is undone) and the same forms."""
    pytest.importorskip("accelerate")
    from transformers import AutoModelForCausalLM

    path = smollm2_gguf()
    with transformers_parse_once():   # the header once, for the config and the weights
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    cfg = model.config
    assert (cfg.num_attention_heads, cfg.num_key_value_heads) == (9, 3)
    for layer, block in zip(smollm2.layers, model.model.layers, strict=True):
        wq, wk = block.self_attn.q_proj.weight.detach(), block.self_attn.k_proj.weight.detach()
        # both sides dequantize the same Q4_1 blocks; float32 rounding at most
        torch.testing.assert_close(layer.Wq, wq, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(layer.Wk, wk, rtol=1e-6, atol=1e-6)
        ours = layer.form().double()
        theirs = bilinear_form(wq.double(), wk.double(), 9, 3)
        assert float((ours - theirs).norm() / theirs.norm()) < 1e-5


@pytest.mark.slow
def test_qwen2_gguf_matches_transformers_gguf_loader():
    """Qwen2.5-Coder-0.5B (zoo, Q4_K_M): our dequantised q/k weights and every layer's form
    equal those of transformers' own GGUF loader, which also reads the q/k biases."""
    pytest.importorskip("accelerate")
    from transformers import AutoModelForCausalLM

    path = zoo_checkpoint("qwen2.5-coder-0.5b")
    ours = read_qk(path, progress=False)
    with transformers_parse_once():   # the header once, for the config and the weights
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    cfg = model.config
    assert (cfg.model_type, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.hidden_size) == ("qwen2", 14, 2, 896)
    assert len(ours.layers) == cfg.num_hidden_layers == 24
    for layer, block in zip(ours.layers, model.model.layers, strict=True):
        attn = block.self_attn
        assert attn.q_proj.bias is not None and attn.k_proj.bias is not None  # biases: outside M
        wq, wk = attn.q_proj.weight.detach(), attn.k_proj.weight.detach()
        torch.testing.assert_close(layer.Wq, wq, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(layer.Wk, wk, rtol=1e-6, atol=1e-6)
        theirs = bilinear_form(wq.double(), wk.double(), 14, 2)
        assert float((layer.form().double() - theirs).norm() / theirs.norm()) < 1e-5
        # the modulo pairing gives another form (the check can tell pairings apart)
        wrong = bilinear_form(wq.double(), wk.double(), 14, 2, pairing="modulo")
        assert float((layer.form().double() - wrong).norm() / theirs.norm()) > 1e-2
