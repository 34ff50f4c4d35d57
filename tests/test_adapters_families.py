"""Every supported family: the adapter's form reproduces the model's own query-key logits.

For each family a tiny randomly initialised model is built from a transformers config (no
download), saved with ``save_pretrained`` and read back with :func:`read_qk`.  A forward
pass of the model records, per self-attention layer, the inputs of its query and key
projections and the per-head queries and keys it computes (see ``qk_logits``); the test
asserts ``sum_h q_h . k_g(h) = x^T M y`` up to bias terms (removed by double centring)
for every layer, with ``M`` the adapter's form.  Float64 throughout the comparison.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import pytest
import torch

pytest.importorskip("transformers")
import transformers as T  # noqa: E402

from companion.adapters import FAMILIES as REGISTRY  # noqa: E402
from companion.adapters import read_qk  # noqa: E402
from companion.core.bilinear import bilinear_form  # noqa: E402
from qk_logits import LogitRecorder, compare, named_layers  # noqa: E402

D, H, LAYERS, FF, VOCAB = 32, 4, 2, 64, 100
TOL = 1e-9
SPECIAL = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _ids(batch, seq):
    return {"input_ids": torch.randint(3, VOCAB, (batch, seq))}


def _ids_seq2seq(batch, seq):
    return {"input_ids": torch.randint(3, VOCAB, (batch, seq)),
            "decoder_input_ids": torch.randint(3, VOCAB, (batch, seq))}


def _pixels(size):
    return lambda batch, seq: {"pixel_values": torch.randn(batch, 3, size, size)}


def _audio(batch, seq):
    return {"input_values": torch.randn(batch, 400)}


def _whisper(batch, seq):
    return {"input_features": torch.randn(batch, 8, 32),
            "decoder_input_ids": torch.randint(3, VOCAB, (batch, seq))}


ENC_DEC = dict(d_model=D, encoder_attention_heads=H, decoder_attention_heads=H,
               encoder_layers=LAYERS, decoder_layers=LAYERS, encoder_ffn_dim=FF,
               decoder_ffn_dim=FF)
BERTISH = dict(hidden_size=D, num_attention_heads=H, num_hidden_layers=LAYERS,
               intermediate_size=FF)
SPEECH = dict(BERTISH, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3),
              num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
VISION = dict(BERTISH, image_size=16, patch_size=4)


@dataclasses.dataclass
class Family:
    name: str
    make: Callable[[], tuple]  # -> (config, model class)
    inputs: Callable  # (batch, seq) -> model kwargs
    layers: list  # (component, q-module pattern, k-module pattern) with {i}
    mode: str = "interface"
    rotary: bool = False  # sequences of length 1 so that rotary embeddings are the identity
    key_transposed: bool = False
    scale: float = 1.0  # factor between the captured q.k and x^T M y
    dtype: torch.dtype = torch.float64
    tol: float = 1e-9


def _enc(q, k=None):
    return [("encoder", q, k or q)]


FAMILIES = [
    Family("bert", lambda: (T.BertConfig(vocab_size=VOCAB, **BERTISH), T.BertModel), _ids,
           _enc("encoder.layer.{i}.attention.self.query", "encoder.layer.{i}.attention.self.key")),
    Family("roberta", lambda: (T.RobertaConfig(vocab_size=VOCAB, **BERTISH), T.RobertaModel), _ids,
           _enc("encoder.layer.{i}.attention.self.query", "encoder.layer.{i}.attention.self.key")),
    Family("xlm-roberta", lambda: (T.XLMRobertaConfig(vocab_size=VOCAB, **BERTISH), T.XLMRobertaModel),
           _ids, _enc("encoder.layer.{i}.attention.self.query", "encoder.layer.{i}.attention.self.key")),
    # MPNet's relative-position bias is added after the projections: proj_outputs compares
    # the content logits q.k, the part that is the bilinear form
    Family("mpnet", lambda: (T.MPNetConfig(vocab_size=VOCAB, **BERTISH), T.MPNetModel), _ids,
           _enc("encoder.layer.{i}.attention.attn.q", "encoder.layer.{i}.attention.attn.k"),
           mode="proj_outputs"),
    Family("distilbert", lambda: (T.DistilBertConfig(dim=D, n_heads=H, n_layers=LAYERS, hidden_dim=FF,
                                                     vocab_size=VOCAB), T.DistilBertModel), _ids,
           _enc("transformer.layer.{i}.attention.q_lin", "transformer.layer.{i}.attention.k_lin")),
    Family("albert", lambda: (T.AlbertConfig(embedding_size=16, vocab_size=VOCAB, **BERTISH),
                              T.AlbertModel), _ids,
           _enc("encoder.albert_layer_groups.0.albert_layers.{i}.attention.query",
                "encoder.albert_layer_groups.0.albert_layers.{i}.attention.key")),
    Family("deberta", lambda: (T.DebertaConfig(vocab_size=VOCAB, **BERTISH), T.DebertaModel), _ids,
           _enc("encoder.layer.{i}.attention.self.in_proj"), mode="deberta_v1"),
    Family("deberta-v2", lambda: (T.DebertaV2Config(vocab_size=VOCAB, **BERTISH), T.DebertaV2Model),
           _ids, _enc("encoder.layer.{i}.attention.self.query_proj",
                      "encoder.layer.{i}.attention.self.key_proj"), mode="proj_outputs"),
    Family("modernbert", lambda: (T.ModernBertConfig(vocab_size=VOCAB, cls_token_id=1, sep_token_id=2,
                                                     **SPECIAL, **BERTISH), T.ModernBertModel),
           _ids, _enc("layers.{i}.attn.Wqkv"), rotary=True,
           tol=1e-6),  # ModernBERT applies its rotary embedding in float32
    Family("openai-gpt", lambda: (T.OpenAIGPTConfig(n_embd=D, n_head=H, n_layer=LAYERS, vocab_size=VOCAB),
                                  T.OpenAIGPTModel), _ids,
           [("decoder", "h.{i}.attn.c_attn", "h.{i}.attn.c_attn")], mode="attn_method",
           key_transposed=True),
    Family("gpt2", lambda: (T.GPT2Config(n_embd=D, n_head=H, n_layer=LAYERS, vocab_size=VOCAB),
                            T.GPT2Model), _ids,
           [("decoder", "h.{i}.attn.c_attn", "h.{i}.attn.c_attn")]),
    Family("imagegpt", lambda: (T.ImageGPTConfig(n_embd=D, n_head=H, n_layer=LAYERS, vocab_size=17),
                                T.ImageGPTModel),
           lambda b, s: {"input_ids": torch.randint(0, 16, (b, s))},
           [("decoder", "h.{i}.attn.c_attn", "h.{i}.attn.c_attn")], mode="attn_method"),
    Family("gpt_neo", lambda: (T.GPTNeoConfig(hidden_size=D, num_heads=H, num_layers=LAYERS,
                                              attention_types=[[["global", "local"], 1]],
                                              vocab_size=VOCAB), T.GPTNeoModel), _ids,
           [("decoder", "h.{i}.attn.attention.q_proj", "h.{i}.attn.attention.k_proj")],
           mode="attn_method"),
    Family("gptj", lambda: (T.GPTJConfig(n_embd=D, n_head=H, n_layer=LAYERS, rotary_dim=4,
                                         vocab_size=VOCAB), T.GPTJModel), _ids,
           [("decoder", "h.{i}.attn.q_proj", "h.{i}.attn.k_proj")], mode="attn_method", rotary=True),
    Family("gpt_neox", lambda: (T.GPTNeoXConfig(vocab_size=VOCAB, **BERTISH), T.GPTNeoXModel), _ids,
           [("decoder", "layers.{i}.attention.query_key_value", "layers.{i}.attention.query_key_value")],
           rotary=True),
    Family("llama", lambda: (T.LlamaConfig(num_key_value_heads=2, vocab_size=VOCAB, **BERTISH),
                             T.LlamaModel), _ids,
           [("decoder", "layers.{i}.self_attn.q_proj", "layers.{i}.self_attn.k_proj")], rotary=True),
    Family("mistral", lambda: (T.MistralConfig(num_key_value_heads=2, vocab_size=VOCAB, **BERTISH),
                               T.MistralModel), _ids,
           [("decoder", "layers.{i}.self_attn.q_proj", "layers.{i}.self_attn.k_proj")], rotary=True),
    Family("mixtral", lambda: (T.MixtralConfig(num_key_value_heads=1, num_local_experts=2,
                                               vocab_size=VOCAB, **BERTISH), T.MixtralModel), _ids,
           [("decoder", "layers.{i}.self_attn.q_proj", "layers.{i}.self_attn.k_proj")], rotary=True,
           dtype=torch.float32, tol=1e-5),  # the expert kernels take no float64
    Family("phi", lambda: (T.PhiConfig(vocab_size=VOCAB, **BERTISH), T.PhiModel), _ids,
           [("decoder", "layers.{i}.self_attn.q_proj", "layers.{i}.self_attn.k_proj")], rotary=True),
    Family("phi3", lambda: (T.Phi3Config(num_key_value_heads=2, vocab_size=VOCAB, **SPECIAL, **BERTISH),
                            T.Phi3Model), _ids,
           [("decoder", "layers.{i}.self_attn.qkv_proj", "layers.{i}.self_attn.qkv_proj")], rotary=True),
    Family("t5", lambda: (T.T5Config(d_model=D, d_kv=8, num_heads=H, num_layers=LAYERS, d_ff=FF,
                                     vocab_size=VOCAB), T.T5Model), _ids_seq2seq,
           [("encoder", "encoder.block.{i}.layer.0.SelfAttention.q", "encoder.block.{i}.layer.0.SelfAttention.k"),
            ("decoder", "decoder.block.{i}.layer.0.SelfAttention.q", "decoder.block.{i}.layer.0.SelfAttention.k")]),
    Family("bart", lambda: (T.BartConfig(vocab_size=VOCAB, **ENC_DEC), T.BartModel), _ids_seq2seq,
           [("encoder", "encoder.layers.{i}.self_attn.q_proj", "encoder.layers.{i}.self_attn.k_proj"),
            ("decoder", "decoder.layers.{i}.self_attn.q_proj", "decoder.layers.{i}.self_attn.k_proj")]),
    Family("mbart", lambda: (T.MBartConfig(vocab_size=VOCAB, **ENC_DEC), T.MBartModel), _ids_seq2seq,
           [("encoder", "encoder.layers.{i}.self_attn.q_proj", "encoder.layers.{i}.self_attn.k_proj"),
            ("decoder", "decoder.layers.{i}.self_attn.q_proj", "decoder.layers.{i}.self_attn.k_proj")]),
    Family("whisper", lambda: (T.WhisperConfig(vocab_size=VOCAB, num_mel_bins=8, max_source_positions=16,
                                               max_target_positions=16, decoder_start_token_id=1,
                                               **SPECIAL, **ENC_DEC), T.WhisperModel), _whisper,
           [("encoder", "encoder.layers.{i}.self_attn.q_proj", "encoder.layers.{i}.self_attn.k_proj"),
            ("decoder", "decoder.layers.{i}.self_attn.q_proj", "decoder.layers.{i}.self_attn.k_proj")],
           scale=(D // H) ** -0.5),  # Whisper multiplies its queries by 1/sqrt(d_head) first
    Family("vit", lambda: (T.ViTConfig(**VISION), T.ViTModel), _pixels(16),
           _enc("layers.{i}.attention.q_proj", "layers.{i}.attention.k_proj")),
    Family("deit", lambda: (T.DeiTConfig(**VISION), T.DeiTModel), _pixels(16),
           _enc("layers.{i}.attention.q_proj", "layers.{i}.attention.k_proj")),
    Family("beit", lambda: (T.BeitConfig(vocab_size=VOCAB, **VISION), T.BeitModel), _pixels(16),
           _enc("layers.{i}.attention.q_proj", "layers.{i}.attention.k_proj")),
    Family("dinov2", lambda: (T.Dinov2Config(image_size=16, patch_size=4, hidden_size=D,
                                             num_attention_heads=H, num_hidden_layers=LAYERS),
                              T.Dinov2Model), _pixels(16),
           _enc("encoder.layer.{i}.attention.q_proj", "encoder.layer.{i}.attention.k_proj")),
    Family("vit_mae", lambda: (T.ViTMAEConfig(decoder_hidden_size=16, decoder_num_attention_heads=2,
                                              decoder_num_hidden_layers=1, decoder_intermediate_size=32,
                                              **VISION), T.ViTMAEModel), _pixels(16),
           _enc("layers.{i}.attention.q_proj", "layers.{i}.attention.k_proj")),
    Family("hubert", lambda: (T.HubertConfig(**SPEECH), T.HubertModel), _audio,
           _enc("encoder.layers.{i}.attention.q_proj", "encoder.layers.{i}.attention.k_proj")),
    Family("wavlm", lambda: (T.WavLMConfig(num_buckets=16, **SPEECH), T.WavLMModel), _audio,
           _enc("encoder.layers.{i}.attention.q_proj", "encoder.layers.{i}.attention.k_proj"),
           mode="functional_mha"),
    Family("detr", lambda: (T.DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False,
                                         backbone_config=T.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16],
                                                                         depths=[1, 1], out_features=["stage2"]),
                                         num_queries=5, **ENC_DEC), T.DetrModel), _pixels(32),
           [("encoder", "encoder.layers.{i}.self_attn.q_proj", "encoder.layers.{i}.self_attn.k_proj"),
            ("decoder", "decoder.layers.{i}.self_attn.q_proj", "decoder.layers.{i}.self_attn.k_proj")]),
    # further model types the registry maps onto the families above
    Family("electra", lambda: (T.ElectraConfig(vocab_size=VOCAB, embedding_size=16, **BERTISH),
                               T.ElectraModel), _ids,
           _enc("encoder.layer.{i}.attention.self.query", "encoder.layer.{i}.attention.self.key")),
    Family("camembert", lambda: (T.CamembertConfig(vocab_size=VOCAB, **BERTISH), T.CamembertModel),
           _ids, _enc("encoder.layer.{i}.attention.self.query", "encoder.layer.{i}.attention.self.key")),
    Family("qwen2", lambda: (T.Qwen2Config(num_key_value_heads=2, vocab_size=VOCAB, **BERTISH),
                             T.Qwen2Model), _ids,
           [("decoder", "layers.{i}.self_attn.q_proj", "layers.{i}.self_attn.k_proj")], rotary=True),
    Family("smollm3", lambda: (T.SmolLM3Config(num_key_value_heads=2, vocab_size=VOCAB, **SPECIAL,
                                               **BERTISH), T.SmolLM3Model), _ids,
           [("decoder", "layers.{i}.self_attn.q_proj", "layers.{i}.self_attn.k_proj")], rotary=True),
    Family("mt5", lambda: (T.MT5Config(d_model=D, d_kv=8, num_heads=H, num_layers=LAYERS, d_ff=FF,
                                       vocab_size=VOCAB), T.MT5Model), _ids_seq2seq,
           [("encoder", "encoder.block.{i}.layer.0.SelfAttention.q", "encoder.block.{i}.layer.0.SelfAttention.k"),
            ("decoder", "decoder.block.{i}.layer.0.SelfAttention.q", "decoder.block.{i}.layer.0.SelfAttention.k")]),
    Family("marian", lambda: (T.MarianConfig(vocab_size=VOCAB, decoder_start_token_id=1, **SPECIAL,
                                             **ENC_DEC), T.MarianModel), _ids_seq2seq,
           [("encoder", "encoder.layers.{i}.self_attn.q_proj", "encoder.layers.{i}.self_attn.k_proj"),
            ("decoder", "decoder.layers.{i}.self_attn.q_proj", "decoder.layers.{i}.self_attn.k_proj")]),
    Family("pegasus", lambda: (T.PegasusConfig(vocab_size=VOCAB, **ENC_DEC), T.PegasusModel), _ids_seq2seq,
           [("encoder", "encoder.layers.{i}.self_attn.q_proj", "encoder.layers.{i}.self_attn.k_proj"),
            ("decoder", "decoder.layers.{i}.self_attn.q_proj", "decoder.layers.{i}.self_attn.k_proj")]),
    Family("wav2vec2", lambda: (T.Wav2Vec2Config(**SPEECH), T.Wav2Vec2Model), _audio,
           _enc("encoder.layers.{i}.attention.q_proj", "encoder.layers.{i}.attention.k_proj")),
    Family("data2vec-audio", lambda: (T.Data2VecAudioConfig(**SPEECH), T.Data2VecAudioModel), _audio,
           _enc("encoder.layers.{i}.attention.q_proj", "encoder.layers.{i}.attention.k_proj")),
    Family("unispeech", lambda: (T.UniSpeechConfig(**SPEECH), T.UniSpeechModel), _audio,
           _enc("encoder.layers.{i}.attention.q_proj", "encoder.layers.{i}.attention.k_proj")),
]


def _form64(layer):
    """The layer's form in float64 (the weights are stored in float32; no rounding added)."""
    return bilinear_form(layer.Wq.double(), layer.Wk.double(), layer.n_heads, layer.n_kv_heads)


def _randomise(model):
    """Random weights and biases (default inits leave biases at zero, hiding bias errors)."""
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.is_floating_point():
                p.copy_(torch.randn(p.shape, generator=g) * (0.3 if p.ndim > 1 else 0.5))


def _build(family: Family, tmp_path):
    torch.manual_seed(0)
    config, cls = family.make()
    model = cls(config).eval()
    _randomise(model)
    model.save_pretrained(tmp_path)
    return model


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_adapter_form_reproduces_model_logits_in_every_layer(family, tmp_path):
    model = _build(family, tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    assert ckpt.family == family.name  # the saved config's model_type picked this adapter
    ours = {(l.component, l.index): l for l in ckpt.self_attention_layers()}

    layers = named_layers(model, family.layers)
    assert layers, "no attention modules found in the model"
    recorder = LogitRecorder(model.to(family.dtype), layers, family.mode, family.key_transposed)
    batch, seq = (48, 1) if family.rotary else (8, 6)
    torch.manual_seed(1)
    inputs = {k: (v.to(family.dtype) if v.is_floating_point() else v) for k, v in family.inputs(batch, seq).items()}
    with torch.no_grad():
        model(**inputs)
    recorder.close()
    captured = recorder.results()

    assert set(ours) == set(captured), "the adapter's self-attention layers differ from the model's"
    n_calls = sum(len(c) for c in captured.values())
    assert n_calls >= LAYERS * len(family.layers)  # ALBERT: one stored layer, applied LAYERS times
    for key, calls in captured.items():
        assert calls, f"layer {key} was never called"
        M = _form64(ours[key])
        for X, Y, L in calls:
            err = compare(M, X, Y, L, family.scale)
            assert err < family.tol, f"{family.name} layer {key}: relative error {err:.2e}"


def test_a_transposed_form_is_detected(tmp_path):
    """The check is not vacuous: M^T (queries and keys swapped) fails it."""
    family = next(f for f in FAMILIES if f.name == "llama")
    model = _build(family, tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    layers = named_layers(model, family.layers)
    recorder = LogitRecorder(model.double(), layers, family.mode)
    with torch.no_grad():
        model(**family.inputs(48, 1))
    recorder.close()
    (X, Y, L), = recorder.results()[("decoder", 0)]
    M = _form64(ckpt.self_attention_layers()[0])
    assert compare(M, X, Y, L) < TOL
    assert compare(M.T, X, Y, L) > 1e-2


NOT_BUILDABLE = {
    "mobilellm": "MobileLLM is published as remote code (model_type 'mobilellm'), not part of "
                 "transformers, so no tiny model can be built offline; its tensors follow the "
                 "LLaMA layout and are read by the same conversion",
}


def test_every_registered_model_type_is_checked_against_its_model():
    tested = {f.name for f in FAMILIES}
    assert set(REGISTRY) - tested == set(NOT_BUILDABLE)


@pytest.mark.parametrize("model_type", sorted(NOT_BUILDABLE))
def test_a_model_type_that_cannot_be_built_offline_is_read_by_a_tested_conversion(model_type):
    """What the reason says is checked: transformers has no such model type (so no tiny model
    can be built here), and the type is read by a conversion that a built family tests."""
    with pytest.raises(ValueError):
        T.AutoConfig.for_model(model_type)
    tested = {REGISTRY[f.name] for f in FAMILIES}
    assert REGISTRY[model_type] in tested, (model_type, REGISTRY[model_type])
