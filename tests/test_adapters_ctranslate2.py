"""Whisper in CTranslate2 format: the model.bin parser against CTranslate2's own forward pass.

The reference is CTranslate2 itself.  A Hugging Face ``WhisperForConditionalGeneration``
is assembled from every variable the parser found; CTranslate2's encoder output and its
decoder logits for the same audio must equal that model's, which proves the parsed
weights (fused ``q|k|v`` split included).  Then the query-key logits the assembled model
computes in every encoder, decoder and cross-attention layer must equal ``x^T M y`` for
``M`` built from :func:`read_qk`'s ``Wq, Wk`` (bias terms removed by double centring).
"""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest
import torch

from adapters_data import whisper_base_parts, whisper_tiny_en_bin
from companion.adapters import read_qk
from companion.adapters.ctranslate2_whisper import CTranslate2Source
from companion.core.bilinear import bilinear_form
from companion.base.errors import CompanionError
from qk_logits import LogitRecorder, compare, named_layers

T = pytest.importorskip("transformers")


# ----------------------------------------------------------------------------- helpers


def whisper_base_folder(tmp_path_factory) -> "Path":  # noqa: F821
    """Whisper base's folder with its two chunks joined in order into one model.bin."""
    part1, part2 = whisper_base_parts()
    folder = tmp_path_factory.mktemp("whisper-base")
    with open(folder / "model.bin", "wb") as out:
        for part in (part1, part2):
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 22)
    for name in ("config.json", "vocabulary.txt"):
        shutil.copy(part1.parent / name, folder / name)
    return folder


def hf_whisper_from_ct2(path, n_frames: int = 3000):
    """A transformers Whisper holding every weight of a CTranslate2 model.bin.

    ``n_frames``: the mel frames it will be given; transformers insists on exactly
    ``2 * max_source_positions``, so the encoder's position table is cut to ``n_frames / 2``
    rows (CTranslate2 adds the first rows of the same table to a shorter input).
    """
    src = CTranslate2Source(path)
    W, sh = src.get, src.shapes
    d = sh["encoder/conv1/weight"][0]
    n_layers = {part: sum(1 for k in sh if k.startswith(f"{part}/layer_")
                          and k.endswith("/self_attention/linear_0/weight"))
                for part in ("encoder", "decoder")}
    cfg = T.WhisperConfig(
        vocab_size=sh["decoder/embeddings/weight"][0], num_mel_bins=sh["encoder/conv1/weight"][1],
        d_model=d, encoder_layers=n_layers["encoder"], decoder_layers=n_layers["decoder"],
        encoder_attention_heads=src.config["encoder_attention_heads"],
        decoder_attention_heads=src.config["decoder_attention_heads"],
        encoder_ffn_dim=sh["encoder/layer_0/ffn/linear_0/weight"][0],
        decoder_ffn_dim=sh["decoder/layer_0/ffn/linear_0/weight"][0],
        max_source_positions=n_frames // 2,
        max_target_positions=sh["decoder/position_encodings/encodings"][0])
    with torch.device("meta"):
        model = T.WhisperForConditionalGeneration(cfg).eval()
    sd = {}

    def linear(hf, ct):
        sd[hf + ".weight"], sd[hf + ".bias"] = W(ct + "/weight"), W(ct + "/bias")

    def norm(hf, ct):
        sd[hf + ".weight"], sd[hf + ".bias"] = W(ct + "/gamma"), W(ct + "/beta")

    def fused(hf, ct, names):
        w, b = W(ct + "/weight"), W(ct + "/bias")
        for j, name in enumerate(names):
            sd[f"{hf}.{name}.weight"] = w[j * d:(j + 1) * d]
            if name == "k_proj":  # Whisper's key projection has no bias: CTranslate2 stores zeros
                assert torch.count_nonzero(b[j * d:(j + 1) * d]) == 0
            else:
                sd[f"{hf}.{name}.bias"] = b[j * d:(j + 1) * d]

    linear("model.encoder.conv1", "encoder/conv1")
    linear("model.encoder.conv2", "encoder/conv2")
    sd["model.encoder.embed_positions.weight"] = W("encoder/position_encodings/encodings")[:n_frames // 2]
    sd["model.decoder.embed_positions.weight"] = W("decoder/position_encodings/encodings")
    for part in ("encoder", "decoder"):
        norm(f"model.{part}.layer_norm", f"{part}/layer_norm")
        for i in range(n_layers[part]):
            hp, cp = f"model.{part}.layers.{i}", f"{part}/layer_{i}"
            fused(hp + ".self_attn", cp + "/self_attention/linear_0", ["q_proj", "k_proj", "v_proj"])
            linear(hp + ".self_attn.out_proj", cp + "/self_attention/linear_1")
            norm(hp + ".self_attn_layer_norm", cp + "/self_attention/layer_norm")
            linear(hp + ".fc1", cp + "/ffn/linear_0")
            linear(hp + ".fc2", cp + "/ffn/linear_1")
            norm(hp + ".final_layer_norm", cp + "/ffn/layer_norm")
            if part == "decoder":
                linear(hp + ".encoder_attn.q_proj", cp + "/attention/linear_0")
                fused(hp + ".encoder_attn", cp + "/attention/linear_1", ["k_proj", "v_proj"])
                linear(hp + ".encoder_attn.out_proj", cp + "/attention/linear_2")
                norm(hp + ".encoder_attn_layer_norm", cp + "/attention/layer_norm")
    sd["model.decoder.embed_tokens.weight"] = W("decoder/embeddings/weight")
    sd["proj_out.weight"] = sd["model.decoder.embed_tokens.weight"]  # the alias in model.bin
    assert src.aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    model.load_state_dict(sd, strict=True, assign=True)  # strict: every weight accounted for
    return model


def log_mel(n_mels: int, n_frames: int) -> np.ndarray:
    """Log-mel features of 3 s of a rising tone in noise (Whisper's own feature extractor),
    the first ``n_frames`` frames (10 ms each)."""
    sr = 16000
    t = np.arange(3 * sr) / sr
    audio = 0.3 * np.sin(2 * np.pi * (200 + 300 * t) * t)
    audio += 0.05 * np.random.default_rng(0).standard_normal(t.size)
    fe = T.WhisperFeatureExtractor(feature_size=n_mels)
    feats = fe(audio.astype(np.float32), sampling_rate=sr, return_tensors="np").input_features
    return np.ascontiguousarray(feats[:, :, :n_frames])


# start of transcript, (language, task), no timestamps
_PROMPTS = {"tiny.en": [50257, 50362], "base": [50258, 50259, 50359, 50363]}


def _reference_run(folder, prompt):
    """CTranslate2's encoder output and greedy decoder logits, and the same from the HF model."""
    ct2 = pytest.importorskip("ctranslate2")
    n_frames = 600  # 6 s instead of Whisper's 30 s window: same weights, a tenth of the time
    model = hf_whisper_from_ct2(folder / "model.bin", n_frames)
    feats = log_mel(model.config.num_mel_bins, n_frames)
    engine = ct2.models.Whisper(str(folder), device="cpu", compute_type="float32", intra_threads=2)
    storage = ct2.StorageView.from_array(feats)
    enc_ct2 = np.array(engine.encode(storage))
    res = engine.generate(storage, [prompt], beam_size=1, max_length=8, return_logits_vocab=True,
                          suppress_blank=False, suppress_tokens=[])[0]
    tokens = prompt + res.sequences_ids[0]
    logits_ct2 = np.array(res.logits[0]).reshape(-1, model.config.vocab_size)
    layers = named_layers(model, [
        ("encoder", "model.encoder.layers.{i}.self_attn.q_proj", "model.encoder.layers.{i}.self_attn.k_proj"),
        ("decoder", "model.decoder.layers.{i}.self_attn.q_proj", "model.decoder.layers.{i}.self_attn.k_proj"),
        ("cross", "model.decoder.layers.{i}.encoder_attn.q_proj",
         "model.decoder.layers.{i}.encoder_attn.k_proj"),
    ])
    rec = LogitRecorder(model, layers, "interface")
    with torch.no_grad():
        out = model(input_features=torch.from_numpy(feats), decoder_input_ids=torch.tensor([tokens]),
                    use_cache=False)
    rec.close()
    enc_hf = out.encoder_last_hidden_state.numpy()
    logits_hf = out.logits[0].numpy()[len(prompt) - 1:len(prompt) - 1 + len(logits_ct2)]
    return dict(enc_ct2=enc_ct2, enc_hf=enc_hf, logits_ct2=logits_ct2, logits_hf=logits_hf,
                captured=rec.results(), d_head=model.config.d_model // model.config.encoder_attention_heads)


@pytest.fixture(scope="module")
def tiny_en():
    path = whisper_tiny_en_bin()
    return read_qk(path, progress=False), _reference_run(path.parent, _PROMPTS["tiny.en"])


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    folder = whisper_base_folder(tmp_path_factory)
    return read_qk(folder / "model.bin", progress=False), _reference_run(folder, _PROMPTS["base"])


# ----------------------------------------------------------------------------- structure


@pytest.mark.parametrize("which, layers, heads, width", [("tiny_en", 4, 6, 384), ("base", 6, 8, 512)])
def test_whisper_has_encoder_decoder_and_cross_attention_components(which, layers, heads, width, request):
    ckpt, _ = request.getfixturevalue(which)
    assert ckpt.family == "whisper-ctranslate2" and ckpt.meta["format"] == "ctranslate2"
    by_role = {r: [l for l in ckpt.layers if l.role == r] for r in ("encoder", "causal", "cross")}
    assert [l.index for l in by_role["encoder"]] == list(range(layers))
    assert [l.index for l in by_role["causal"]] == list(range(layers))
    assert [l.index for l in by_role["cross"]] == list(range(layers))
    assert {l.component for l in by_role["encoder"]} == {"encoder"}
    assert {l.component for l in by_role["causal"] + by_role["cross"]} == {"decoder"}
    for l in ckpt.layers:
        assert (l.n_heads, l.n_kv_heads, l.d_model, l.d_head) == (heads, heads, width, width // heads)
    # the cross-attention form is never counted as a self-attention form
    assert len(ckpt.self_attention_layers()) == 2 * layers


def test_joined_base_model_bin_is_parsed_to_its_last_byte(tmp_path_factory):
    """The two chunks joined in order give a table that ends exactly at the end of the file;
    a chunk appended twice leaves bytes after it, which is refused."""
    folder = whisper_base_folder(tmp_path_factory)
    src = CTranslate2Source(folder / "model.bin")  # raises on trailing bytes
    assert src.config["spec"] == "WhisperSpec" and src.config["binary_version"] == 6
    assert src.aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    _, part2 = whisper_base_parts()
    with open(folder / "model.bin", "ab") as out, open(part2, "rb") as f:
        out.write(f.read(1 << 20))
    with pytest.raises(CompanionError, match=r"bytes after its variable table.*once, in order"):
        read_qk(folder / "model.bin", progress=False)


# ----------------------------------------------------------------------------- reference forward


@pytest.mark.parametrize("which", ["tiny_en", "base"])
def test_parsed_weights_reproduce_ctranslate2_encoder_and_decoder(which, request):
    _, ref = request.getfixturevalue(which)
    enc_err = np.abs(ref["enc_hf"] - ref["enc_ct2"]).max() / np.abs(ref["enc_ct2"]).max()
    assert enc_err < 1e-4
    assert ref["logits_ct2"].shape[0] >= 2  # at least one generated token and the next step
    dec_err = np.abs(ref["logits_hf"] - ref["logits_ct2"]).max() / np.abs(ref["logits_ct2"]).max()
    assert dec_err < 1e-4


@pytest.mark.parametrize("which", ["tiny_en", "base"])
def test_every_whisper_form_reproduces_the_query_key_logits(which, request):
    ckpt, ref = request.getfixturevalue(which)
    component = {"encoder": "encoder", "causal": "decoder", "cross": "cross"}
    scale = ref["d_head"] ** -0.5  # transformers' Whisper scales the query before q.k
    assert len(ref["captured"]) == len(ckpt.layers)
    for layer in ckpt.layers:
        (X, Y, L), = ref["captured"][(component[layer.role], layer.index)]
        M = bilinear_form(layer.Wq.double(), layer.Wk.double(), layer.n_heads)
        assert compare(M, X, Y, L, scale=scale) < 1e-5, (layer.role, layer.index)
        # swapping query and key breaks it (the check can fail)
        if layer.role == "encoder" and layer.index == 0:
            assert compare(M.T, X, Y, L, scale=scale) > 1e-2


# ----------------------------------------------------------------------------- converter round trip


def _converted_tiny_whisper(tmp_path, quantization):
    ct2 = pytest.importorskip("ctranslate2")
    torch.manual_seed(0)
    cfg = T.WhisperConfig(vocab_size=120, num_mel_bins=16, d_model=32, encoder_layers=2,
                          decoder_layers=3, encoder_attention_heads=4, decoder_attention_heads=2,
                          encoder_ffn_dim=40, decoder_ffn_dim=40, max_source_positions=30,
                          max_target_positions=20, decoder_start_token_id=1, pad_token_id=0,
                          bos_token_id=1, eos_token_id=2, suppress_tokens=[], begin_suppress_tokens=[])
    model = T.WhisperForConditionalGeneration(cfg).eval()
    model.save_pretrained(tmp_path / "hf")
    out = ct2.converters.TransformersConverter(str(tmp_path / "hf")).convert(
        str(tmp_path / f"ct2-{quantization}"), quantization=quantization, force=True)
    return model, read_qk(f"{out}/model.bin", progress=False)


@pytest.mark.parametrize("quantization, tol", [("float32", 0.0), ("float16", 1e-3), ("int8", 2e-2)])
def test_ctranslate2_converter_output_gives_back_the_original_q_and_k(tmp_path, quantization, tol):
    """CTranslate2's own converter fuses q|k|v (and k|v for cross-attention); the reader splits them."""
    model, ckpt = _converted_tiny_whisper(tmp_path, quantization)
    stacks = {"encoder": model.model.encoder.layers, "causal": model.model.decoder.layers}
    assert len(ckpt.layers) == 2 + 3 + 3
    for layer in ckpt.layers:
        block = (stacks.get(layer.role) or model.model.decoder.layers)[layer.index]
        attn = block.encoder_attn if layer.role == "cross" else block.self_attn
        wq, wk = attn.q_proj.weight.detach(), attn.k_proj.weight.detach()
        for ours, theirs in ((layer.Wq, wq), (layer.Wk, wk)):
            rel = float((ours - theirs).abs().max() / theirs.abs().max())
            assert rel <= tol, (quantization, layer.role, layer.index, rel)
        assert layer.n_heads == (4 if layer.role == "encoder" else 2)


# ----------------------------------------------------------------------------- bad input


def _ct2_header(version: int, spec: str, revision: int = 1) -> bytes:
    name = spec.encode() + b"\0"
    return struct.pack("<I", version) + struct.pack("<H", len(name)) + name + struct.pack("<I", revision)


def test_unknown_ctranslate2_spec_is_refused_by_name(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(_ct2_header(6, "TransformerSpec") + struct.pack("<I", 0) * 2)
    with pytest.raises(CompanionError, match=r"model\.bin.*spec 'TransformerSpec'.*only 'WhisperSpec'"):
        read_qk(path, progress=False)


def test_newer_ctranslate2_binary_version_is_refused(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(_ct2_header(7, "WhisperSpec", 3) + struct.pack("<I", 0) * 2)
    with pytest.raises(CompanionError, match=r"binary version 7.*Convert the model again"):
        read_qk(path, progress=False)


def test_truncated_model_bin_names_the_file_and_the_fix(tmp_path):
    src = whisper_tiny_en_bin()
    path = tmp_path / "model.bin"
    with open(src, "rb") as f:
        path.write_bytes(f.read(5_000_000))
    with pytest.raises(CompanionError, match=r"model\.bin.*truncated.*Rebuild"):
        read_qk(path, progress=False)


def test_second_chunk_alone_is_not_taken_for_a_model(tmp_path):
    _, part2 = whisper_base_parts()
    path = tmp_path / "model.bin"
    with open(part2, "rb") as f:
        path.write_bytes(f.read(1 << 16))
    with pytest.raises(CompanionError, match=r"does not start like a CTranslate2 model\.bin"):
        read_qk(path, progress=False)
