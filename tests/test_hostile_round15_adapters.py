"""Hostile cases for the way from a checkpoint to its scores: checkpoint -> reader -> family
conversion -> ``W_qk = W_q W_k^T`` -> scores, for tiny models built with ``transformers`` and
for hub-style folders, the ``score`` command on them, and what reaches the network.

The right answers are taken from outside the readers: the per-head queries and keys a model
computes in its own forward pass (recorded through transformers' attention interface), the
modules' own flags (``is_causal``), ``model.num_parameters()``, what ``from_pretrained`` loads,
and NumPy by hand.  Tests never reach the network: sockets are switched off where a case is
about the network, so that any attempt fails the test.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.adapters import read_qk
from companion.base.errors import CompanionError
from one_line import one_line as _one_line

T = pytest.importorskip("transformers")

RNG = np.random.default_rng(15)
D, VOCAB = 32, 100


# ============================================================ helpers


def _w(rows: int, cols: int) -> np.ndarray:
    return RNG.standard_normal((rows, cols)).astype(np.float32)


def _save(folder: Path, config: dict, tensors: dict, name: str = "model.safetensors") -> Path:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(folder / name))
    return folder


def _bert_tensors(prefix: str = "", layers: int = 1, d: int = 8) -> dict:
    t = {}
    for i in range(layers):
        t[f"{prefix}encoder.layer.{i}.attention.self.query.weight"] = _w(d, d)
        t[f"{prefix}encoder.layer.{i}.attention.self.key.weight"] = _w(d, d)
    return t


BERT_CFG = {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1}


def _randomise(model):
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.3 if p.ndim > 1 else 0.5))
    return model


@pytest.fixture
def no_network(monkeypatch):
    """Every way out of this machine raises, and is recorded: a case passes only if none was tried."""
    tries = []

    def refuse(*args, **kwargs):
        tries.append(args[:2])
        raise OSError("the network is switched off in this test")

    real_connect = socket.socket.connect

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            return refuse(address)
        return real_connect(self, address)

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", connect)
    # the hub allowed, as on a user's machine (the test session switches it off)
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return tries


# ============================================================ 1. per-head forms against the model's own queries and keys
#
# The family sweep (tests/test_adapters_families.py) checks each layer's form, the sum over
# heads: rows dealt to the wrong heads leave that sum unchanged.  Here each head's form
# M_h = Wq_h^T Wk_g(h) must give that head's logits q_h . k_g(h) as the model computes them.

_CAPTURED: dict[int, list] = {}


def _capture_interface():
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def capture(module, query, key, value, attention_mask, **kwargs):
        _CAPTURED.setdefault(id(module), []).append((query.detach().clone(), key.detach().clone()))
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)

    AttentionInterface.register("round15_capture", capture)
    return "round15_capture"


def _centre(L):
    L = L - L.mean(dim=0, keepdim=True)
    return L - L.mean(dim=1, keepdim=True)


SPECIAL = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
PER_HEAD = {
    # head_dim 16 with width 32 and 4 query heads: 64 query rows, 2 key heads of 16
    "llama-head-dim-16-gqa": (lambda: T.LlamaConfig(hidden_size=D, num_attention_heads=4, num_key_value_heads=2,
                                                     head_dim=16, num_hidden_layers=2, intermediate_size=37,
                                                     vocab_size=VOCAB), "LlamaModel", "layers.{i}.self_attn.q_proj"),
    "phi3-fused-qkv-gqa": (lambda: T.Phi3Config(hidden_size=D, num_attention_heads=4, num_key_value_heads=2,
                                                num_hidden_layers=2, intermediate_size=37, vocab_size=VOCAB,
                                                **SPECIAL), "Phi3Model", "layers.{i}.self_attn.qkv_proj"),
    "gpt-neox-interleaved-qkv": (lambda: T.GPTNeoXConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=2,
                                                         intermediate_size=37, vocab_size=VOCAB),
                                 "GPTNeoXModel", "layers.{i}.attention.query_key_value"),
    "modernbert-fused-wqkv": (lambda: T.ModernBertConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=2,
                                                         intermediate_size=37, vocab_size=VOCAB, cls_token_id=1,
                                                         sep_token_id=2, **SPECIAL),
                              "ModernBertModel", "layers.{i}.attn.Wqkv"),
    "gpt2-conv1d-c-attn": (lambda: T.GPT2Config(n_embd=D, n_head=4, n_layer=2, vocab_size=VOCAB, **SPECIAL),
                           "GPT2Model", "h.{i}.attn.c_attn"),
}


@pytest.mark.parametrize("case", sorted(PER_HEAD))
def test_each_heads_form_gives_that_heads_logits_as_the_model_computes_them(case, tmp_path):
    from transformers.models.llama.modeling_llama import repeat_kv

    from companion.core.bilinear import per_head_bilinear_forms

    make, cls_name, q_module = PER_HEAD[case]
    torch.manual_seed(0)
    model = _randomise(getattr(T, cls_name)(make()).eval())
    model.save_pretrained(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    model = model.double()
    model.set_attn_implementation(_capture_interface())
    modules = dict(model.named_modules())
    inputs, handles = {}, []
    for i in range(2):
        name = q_module.format(i=i)
        handles.append(modules[name].register_forward_pre_hook(
            lambda mod, args, name=name: inputs.__setitem__(name, args[0].detach().clone())))
    _CAPTURED.clear()
    # sequences of one token: the rotary rotation at position 0 is the identity
    with torch.no_grad():
        model(input_ids=torch.randint(3, VOCAB, (40, 1)))
    for h in handles:
        h.remove()
    layers = ckpt.self_attention_layers()
    assert [layer.index for layer in layers] == [0, 1]
    for layer in layers:
        name = q_module.format(i=layer.index)
        (q, k), = _CAPTURED[id(modules[name.rsplit(".", 1)[0]])]
        k = repeat_kv(k, q.shape[1] // k.shape[1])   # the model's own pairing of query and key heads
        X = inputs[name].reshape(-1, inputs[name].shape[-1])
        forms = per_head_bilinear_forms(layer.Wq.double(), layer.Wk.double(), layer.n_heads, layer.n_kv_heads)
        assert forms.shape[0] == q.shape[1]
        for h in range(q.shape[1]):
            L = q[:, h].reshape(-1, q.shape[-1]) @ k[:, h].reshape(-1, k.shape[-1]).T
            err = (_centre(X @ forms[h] @ X.T) - _centre(L)).norm() / _centre(L).norm()
            assert err < 1e-6, (case, layer.index, h, float(err))


# ============================================================ 2. configuration fields that change what the model computes


def test_a_bert_configured_as_a_decoder_is_read_as_causal_self_attention(tmp_path):
    model = T.BertModel(T.BertConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=2,
                                     intermediate_size=37, vocab_size=VOCAB, is_decoder=True))
    model.save_pretrained(tmp_path)
    causal = {layer.attention.self.is_causal for layer in model.encoder.layer}
    assert causal == {True}   # the model masks its self-attention
    ckpt = read_qk(tmp_path, progress=False)
    assert {(layer.role, layer.component) for layer in ckpt.layers} == {("causal", "decoder")}
    # without the flag the same model is a bidirectional encoder, read as one
    model = T.BertModel(T.BertConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=2,
                                     intermediate_size=37, vocab_size=VOCAB))
    model.save_pretrained(tmp_path / "encoder")
    assert {layer.attention.self.is_causal for layer in model.encoder.layer} == {False}
    ckpt = read_qk(tmp_path / "encoder", progress=False)
    assert {(layer.role, layer.component) for layer in ckpt.layers} == {("encoder", "encoder")}


def test_an_is_decoder_flag_that_is_not_a_boolean_is_refused_naming_it(tmp_path):
    folder = _save(tmp_path / "m", {**BERT_CFG, "is_decoder": "yes"}, _bert_tensors())
    with pytest.raises(CompanionError) as e:
        read_qk(folder, progress=False)
    msg = _one_line(e)
    assert "is_decoder" in msg and "'yes'" in msg


def test_phi_with_query_key_layernorm_is_refused_not_scored_as_a_plain_form(tmp_path):
    model = _randomise(T.PhiModel(T.PhiConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=2,
                                              intermediate_size=37, vocab_size=VOCAB, qk_layernorm=True)))
    # the model normalises each head's query and key: its logits are not x^T Wq^T Wk y
    assert model.layers[0].self_attn.qk_layernorm
    model.save_pretrained(tmp_path)
    with pytest.raises(CompanionError) as e:
        read_qk(tmp_path, progress=False)
    assert "qk_layernorm" in _one_line(e)


BART = dict(d_model=D, encoder_attention_heads=4, decoder_attention_heads=4, encoder_layers=2, decoder_layers=2,
            encoder_ffn_dim=37, decoder_ffn_dim=37, vocab_size=VOCAB)


def test_a_bart_decoder_saved_alone_reads_its_causal_and_cross_attention(tmp_path):
    model = _randomise(T.BartForCausalLM(T.BartConfig(**BART)))
    model.save_pretrained(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    assert sorted((layer.role, layer.index) for layer in ckpt.layers) == [
        ("causal", 0), ("causal", 1), ("cross", 0), ("cross", 1)]
    for layer in ckpt.self_attention_layers():
        own = model.model.decoder.layers[layer.index].self_attn
        assert torch.equal(layer.Wq, own.q_proj.weight.detach()) and torch.equal(layer.Wk, own.k_proj.weight.detach())


def test_an_encoder_decoder_whose_encoder_tensors_are_all_gone_is_still_refused(tmp_path):
    from safetensors.torch import load_file, save_file

    T.BartModel(T.BartConfig(**BART)).save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    save_file({k: v.contiguous() for k, v in state.items() if not k.startswith("encoder.")},
              tmp_path / "model.safetensors")
    with pytest.raises(CompanionError) as e:
        read_qk(tmp_path, progress=False)
    assert "encoder.layers" in _one_line(e)


# ============================================================ 3. which weights: two copies, two files, shards


def test_two_copies_of_the_model_under_prefixes_of_equal_length_are_refused_not_one_picked(tmp_path):
    tensors = {**_bert_tensors("student."), **_bert_tensors("teacher.")}
    folder = _save(tmp_path / "m", BERT_CFG, tensors)
    with pytest.raises(CompanionError) as e:
        read_qk(folder, progress=False)
    msg = _one_line(e)
    assert "student." in msg and "teacher." in msg


def _pickle_shards(folder: Path, shards: dict, weight_map: dict | None):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(BERT_CFG))
    for fname, state in shards.items():
        torch.save(state, folder / fname)
    if weight_map is not None:
        (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))


Q = "encoder.layer.0.attention.self.query.weight"
K = "encoder.layer.0.attention.self.key.weight"
S1, S2 = "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"


def test_a_sharded_pickle_reads_each_tensor_from_the_shard_its_index_names(tmp_path):
    q_indexed, k, q_stale = torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8)
    _pickle_shards(tmp_path / "m", {S1: {Q: q_indexed}, S2: {K: k, Q: q_stale}}, {Q: S1, K: S2})
    ckpt = read_qk(tmp_path / "m", allow_pickle=True, progress=False)
    assert torch.equal(ckpt.layers[0].Wq, q_indexed)
    assert torch.equal(ckpt.layers[0].Wk, k)


def test_a_tensor_in_two_pickle_shards_that_the_index_does_not_place_is_refused(tmp_path):
    _pickle_shards(tmp_path / "m", {S1: {Q: torch.randn(8, 8), K: torch.randn(8, 8)},
                                    S2: {K: torch.randn(8, 8), "pooler.dense.weight": torch.randn(8, 8)}},
                   {Q: S1, "pooler.dense.weight": S2})
    with pytest.raises(CompanionError) as e:
        read_qk(tmp_path / "m", allow_pickle=True, progress=False)
    msg = _one_line(e)
    assert K in msg and S1 in msg and S2 in msg


def test_a_pickle_index_placing_a_tensor_in_a_shard_without_it_is_refused(tmp_path):
    _pickle_shards(tmp_path / "m", {S1: {Q: torch.randn(8, 8)}, S2: {K: torch.randn(8, 8)}}, {Q: S1, K: S1})
    with pytest.raises(CompanionError) as e:
        read_qk(tmp_path / "m", allow_pickle=True, progress=False)
    assert K in _one_line(e) and S1 in _one_line(e)


def test_tied_weights_in_a_pickle_are_counted_once_as_num_parameters_counts_them(tmp_path):
    model = T.GPT2LMHeadModel(T.GPT2Config(n_embd=D, n_head=4, n_layer=2, vocab_size=VOCAB, **SPECIAL))
    state = model.state_dict()
    assert state["lm_head.weight"].data_ptr() == state["transformer.wte.weight"].data_ptr()   # tied
    folder = tmp_path / "m"
    folder.mkdir()
    model.config.to_json_file(folder / "config.json")
    torch.save(state, folder / "pytorch_model.bin")
    ckpt = read_qk(folder, allow_pickle=True, progress=False)
    assert ckpt.n_parameters == model.num_parameters()
    # a copy equal in value, stored apart, under a config that ties the embeddings: from_pretrained ties
    # it again, so it is still one parameter
    state["lm_head.weight"] = state["lm_head.weight"].clone()
    torch.save(state, folder / "pytorch_model.bin")
    assert read_qk(folder, allow_pickle=True, progress=False).n_parameters == model.num_parameters()


def test_the_int8_weights_of_a_pickled_bitsandbytes_checkpoint_count_as_parameters(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**BERT_CFG, "quantization_config": {
        "quant_method": "bitsandbytes", "load_in_8bit": True}}))
    q, k = torch.randint(-127, 128, (8, 8), dtype=torch.int8), torch.randint(-127, 128, (8, 8), dtype=torch.int8)
    q_scb, k_scb = torch.rand(8) + 0.5, torch.rand(8) + 0.5
    torch.save({Q: q, Q.replace("weight", "SCB"): q_scb, K: k, K.replace("weight", "SCB"): k_scb,
                "embeddings.word_embeddings.weight": torch.randn(10, 8)}, folder / "pytorch_model.bin")
    ckpt = read_qk(folder, allow_pickle=True, progress=False)
    assert ckpt.n_parameters == 64 + 64 + 80   # both int8 matrices and the embedding; the row scales not
    assert torch.allclose(ckpt.layers[0].Wq, q.float() * q_scb[:, None] / 127)


def test_model_safetensors_beside_a_disagreeing_pytorch_model_bin_reads_what_from_pretrained_loads(tmp_path):
    cfg = T.BertConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=1, intermediate_size=37,
                       vocab_size=VOCAB)
    model = _randomise(T.BertModel(cfg))
    model.save_pretrained(tmp_path)
    stale = {k: torch.zeros_like(v) + 1 for k, v in model.state_dict().items()}
    torch.save(stale, tmp_path / "pytorch_model.bin")
    loaded = T.BertModel.from_pretrained(tmp_path)
    ckpt = read_qk(tmp_path, allow_pickle=True, progress=False)
    assert torch.equal(ckpt.layers[0].Wq, loaded.encoder.layer[0].attention.self.query.weight.detach())
    assert not torch.equal(ckpt.layers[0].Wq, torch.ones_like(ckpt.layers[0].Wq))


def test_a_hub_cache_snapshot_of_links_into_blobs_reads_its_weights_and_names_the_repository(tmp_path):
    from safetensors.numpy import save_file

    repo = tmp_path / "models--org--tiny-bert"
    blobs, snap = repo / "blobs", repo / "snapshots" / ("a" * 40)
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    tensors = _bert_tensors()
    (blobs / "c0nf1g").write_text(json.dumps(BERT_CFG))
    save_file(tensors, str(blobs / "w3ights"))
    (snap / "config.json").symlink_to(Path("../../blobs/c0nf1g"))
    (snap / "model.safetensors").symlink_to(Path("../../blobs/w3ights"))
    ckpt = read_qk(snap, progress=False)
    assert ckpt.meta["name"] == "org/tiny-bert"
    assert np.array_equal(ckpt.layers[0].Wk.numpy(), tensors[K])


# ============================================================ 4. headers that lie or formats not decoded


def _raw_safetensors(path: Path, header: dict, data: bytes):
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    path.write_bytes(len(h).to_bytes(8, "little") + h + data)


def test_a_query_weight_in_fp4_is_named_as_a_float_format_not_decoded_not_as_integers(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(BERT_CFG))
    _raw_safetensors(folder / "model.safetensors",
                     {Q: {"dtype": "F4", "shape": [8, 8], "data_offsets": [0, 32]},
                      K: {"dtype": "F4", "shape": [8, 8], "data_offsets": [32, 64]}}, bytes(64))
    with pytest.raises(CompanionError) as e:
        read_qk(folder, progress=False)
    msg = _one_line(e)
    assert "F4" in msg and "integer" not in msg
    # int8 weights without a quantization_config are still named as the integers they are
    _raw_safetensors(folder / "model.safetensors",
                     {Q: {"dtype": "I8", "shape": [8, 8], "data_offsets": [0, 64]},
                      K: {"dtype": "I8", "shape": [8, 8], "data_offsets": [64, 128]}}, bytes(128))
    with pytest.raises(CompanionError) as e:
        read_qk(folder, progress=False)
    assert "I8" in _one_line(e) and "integers" in _one_line(e)


LFS = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 498637824\n"


@pytest.mark.parametrize("name", ["model.safetensors", "pytorch_model.bin", "tiny.gguf"])
def test_a_weights_file_that_is_a_git_lfs_pointer_is_named_as_one_with_git_lfs_pull(name, tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(BERT_CFG))
    (folder / name).write_bytes(LFS)
    with pytest.raises(CompanionError) as e:
        read_qk(folder / name if name.endswith(".gguf") else folder, allow_pickle=True, progress=False)
    msg = _one_line(e)
    assert name in msg and "LFS pointer" in msg and "git lfs pull" in msg


def test_a_safetensors_index_naming_a_missing_shard_is_refused_naming_it(tmp_path):
    from safetensors.numpy import save_file

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(BERT_CFG))
    a, b = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    save_file({Q: _w(8, 8)}, str(folder / a))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {Q: a, K: b}}))
    with pytest.raises(CompanionError) as e:
        read_qk(folder, progress=False)
    assert b in _one_line(e) and "missing" in _one_line(e)


@pytest.mark.parametrize("column, value", [("d_model", "abc"), ("n_params", "abc"), ("d_model", "2.5")])
def test_a_catalog_number_that_is_no_count_is_refused_naming_its_line(column, value, tmp_path):
    import pandas as pd

    from companion.zoo.catalog import DATA_DIR, load_catalog

    cat = pd.read_csv(DATA_DIR / "catalog.csv", dtype=str, keep_default_na=False)
    cat.loc[0, column] = value
    cat.to_csv(tmp_path / "catalog.csv", index=False)
    with pytest.raises(ValueError) as e:
        load_catalog(tmp_path / "catalog.csv")
    assert f"line 2 ({cat.loc[0, 'key']!r})" in str(e.value) and column in str(e.value)


# ============================================================ 5. the network


@pytest.mark.parametrize("owner_is", ["folder", "file"])
def test_a_local_path_mistyped_under_an_existing_folder_or_file_is_refused_without_the_hub(
        owner_is, tmp_path, monkeypatch, no_network):
    if owner_is == "folder":
        (tmp_path / "models").mkdir()
    else:
        (tmp_path / "models").write_text("notes")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CompanionError) as e:
        read_qk("models/bert-tiny", progress=False)
    msg = _one_line(e)
    assert no_network == []
    assert "models/bert-tiny" in msg and "hub" in msg and ("file" in msg) == (owner_is == "file")


def test_a_hub_id_whose_owner_is_no_folder_here_still_goes_to_the_hub(tmp_path, monkeypatch, no_network):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CompanionError) as e:
        read_qk("some-owner/some-model", progress=False)
    assert no_network, "the hub was not asked"
    assert "cannot reach the hub" in _one_line(e)


@pytest.mark.parametrize("target", ["another host", "the same host"])
def test_the_hub_token_follows_a_redirect_only_to_the_same_host(target, monkeypatch):
    import http.server
    import threading

    from companion.adapters import hub

    seen = {}

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.setdefault("answer", []).append(self.headers.get("Authorization"))
            body = json.dumps({"sha": "a" * 40, "siblings": []}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    other = http.server.HTTPServer(("127.0.0.1", 0), Answer)

    class Redirect(Answer):
        def do_GET(self):
            if self.path.startswith("/moved"):
                return super().do_GET()
            seen["asked"] = self.headers.get("Authorization")
            where = (f"http://localhost:{other.server_port}" if target == "another host"
                     else f"http://127.0.0.1:{self.server.server_port}/moved")
            self.send_response(302)
            self.send_header("Location", where + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

    first = http.server.HTTPServer(("127.0.0.1", 0), Redirect)
    for server in (first, other):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{first.server_port}")
        monkeypatch.setenv("HF_TOKEN", "hf_not_for_other_hosts")
        monkeypatch.setattr(hub, "_hub_headers", lambda: {"Authorization": "Bearer hf_not_for_other_hosts"})
        assert hub.probe_hub("owner/name")["sha"] == "a" * 40
    finally:
        for server in (first, other):
            server.shutdown()
            server.server_close()
    assert seen["asked"] == "Bearer hf_not_for_other_hosts"
    assert seen["answer"] == [None if target == "another host" else "Bearer hf_not_for_other_hosts"]


def test_reading_and_scoring_a_local_folder_opens_no_connection(tmp_path, no_network, capsys):
    from companion.cli import main

    folder = _save(tmp_path / "m", BERT_CFG, _bert_tensors())
    assert main(["score", str(folder), "--quiet", "--out", str(tmp_path / "s.csv")]) == 0
    assert no_network == []
    assert (tmp_path / "s.csv").exists()


def test_the_catalog_and_the_published_tables_load_without_the_network(no_network):
    from companion.zoo.catalog import load_catalog, published_scores

    assert len(load_catalog()) > 0 and len(published_scores()) > 0
    assert no_network == []


def test_the_path_of_an_installed_zoo_model_is_found_without_the_network(no_network):
    from companion.zoo import packages
    from companion.zoo.registry import ZOO, zoo_path

    model = ZOO["bergamot-en-pt"]
    if packages.missing_pins(model):
        pytest.skip("the package of bergamot-en-pt is not installed here")
    path = zoo_path("bergamot-en-pt")
    assert path.is_file() and path.stat().st_size == model.size
    assert no_network == []


# ============================================================ 6. the score command on a grouped-query model


def test_score_per_head_prints_each_heads_symmetry_as_its_form_gives_by_hand(tmp_path, capsys):
    import pandas as pd

    from companion.cli import main

    heads, kv, dh, d = 4, 2, 4, 8
    tensors, forms = {}, []
    for i in range(2):
        q, k = _w(heads * dh, d), _w(kv * dh, d)
        tensors[f"model.layers.{i}.self_attn.q_proj.weight"] = q
        tensors[f"model.layers.{i}.self_attn.k_proj.weight"] = k
        for h in range(heads):
            g = h // (heads // kv)
            forms.append((i, h, q[h * dh:(h + 1) * dh].T.astype(np.float64) @ k[g * dh:(g + 1) * dh]))
    folder = _save(tmp_path / "m", {"model_type": "llama", "hidden_size": d, "num_attention_heads": heads,
                                    "num_key_value_heads": kv, "num_hidden_layers": 2}, tensors)
    out = tmp_path / "s.csv"
    assert main(["score", str(folder), "--per-head", "--quiet", "--out", str(out)]) == 0
    df = pd.read_csv(out)
    for i, h, M in forms:
        want = np.trace(M @ M) / np.sum(M * M)   # Def. 3.1
        got = df[(df["layer"] == i) & (df["head"] == h)]["symmetry"].item()
        assert got == pytest.approx(want, abs=1e-6), (i, h)


def test_a_catalog_key_is_read_as_written_and_must_be_a_plain_name_to_its_end(tmp_path):
    """'NA' is a model's key, not a missing value (it read as NaN, and str(nan) passed the check);
    a key ending in a newline is not a plain name ('$' let the newline through)."""
    import pandas as pd

    from companion.zoo.catalog import DATA_DIR, load_catalog, validate_catalog

    df = pd.read_csv(DATA_DIR / "catalog.csv", dtype=str, keep_default_na=False)
    df.loc[0, "key"] = "NA"
    df.to_csv(tmp_path / "c.csv", index=False)
    assert load_catalog(tmp_path / "c.csv")["key"].iloc[0] == "NA"
    cat = load_catalog()
    cat.loc[0, "key"] = "x\n"
    with pytest.raises(ValueError, match=r"key 'x\\n' is not a plain name"):
        validate_catalog(cat)
