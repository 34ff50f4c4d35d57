"""Readers of the zoo's formats, each against a reference forward pass where one can run.

* Gemma-3 GGUF: transformers loads the same GGUF file (its own dequantizer and name map);
  the per-head logits its attention computes equal the folded form divided by the two
  RMS normalisers.
* MPNet safetensors: transformers' ``MPNetModel``; the q/k projection outputs give the
  content logits (the relative-position bias is added later and is not part of the form).
* NomicBERT GGUF: no installed library runs nomic-bert (transformers has no such model and
  no GGUF mapping for it), so the test checks the head split against the raw f16 tensor
  as the ``gguf`` package reads it, and the shapes.
* sre-embedding: a BERT folder, read by the existing BERT family, checked against
  transformers' ``BertModel``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adapters_data import gguf_reader, zoo_checkpoint
from companion.adapters import read_qk
from companion.adapters.families import gguf_gemma3
from qk_logits import LogitRecorder, _CAPTURED, encoder_logit_errors, named_layers


@pytest.fixture(scope="module")
def gemma():
    return read_qk(zoo_checkpoint("gemma-3-270m"), progress=False)


@pytest.fixture(scope="module")
def nomic():
    return read_qk(zoo_checkpoint("nomic-embed-text-v1.5"), progress=False)


def test_gemma3_has_18_layers_with_4_query_heads_sharing_1_key_head(gemma):
    assert gemma.family == "gemma3" and len(gemma.layers) == 18
    for l in gemma.layers:
        assert (l.n_heads, l.n_kv_heads, l.d_head, l.d_model, l.role) == (4, 1, 256, 640, "causal")
        assert l.Wq.shape == (1024, 640) and l.Wk.shape == (256, 640)


def test_gemma3_folds_the_norm_gains_as_row_scalings(gemma):
    raw = read_qk(zoo_checkpoint("gemma-3-270m"), progress=False,
                  families={"gemma3": lambda c, k: gguf_gemma3(c, k, fold_norm_gains=False)})
    for folded, plain in zip(gemma.layers, raw.layers):
        ratio_q = (folded.Wq / plain.Wq).reshape(4, 256, 640)
        # one gain per head dimension: constant along each row, the same for all heads
        finite = torch.isfinite(ratio_q)
        g = torch.nanmedian(torch.where(finite, ratio_q, torch.nan), dim=-1).values
        assert torch.allclose(g, g[0:1].expand_as(g), rtol=1e-5, atol=1e-6)
        assert not torch.allclose(folded.Wq, plain.Wq)


@pytest.mark.slow
def test_gemma3_form_reproduces_transformers_logits_per_head(gemma):
    """logit_h(x, y) = x^T M_h y / (rms(W_q,h x) rms(W_k,h y)) at rotary offset 0."""
    pytest.importorskip("accelerate")
    from transformers import AutoModelForCausalLM

    from companion.adapters.gguf_file import transformers_parse_once

    path = zoo_checkpoint("gemma-3-270m")
    with transformers_parse_once():   # the header (262k vocabulary strings) once, not twice
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name).eval()
    raw = read_qk(path, progress=False,
                  families={"gemma3": lambda c, k: gguf_gemma3(c, k, fold_norm_gains=False)})
    layers = named_layers(model, [("decoder", "model.layers.{i}.self_attn.q_proj",
                                   "model.layers.{i}.self_attn.k_proj")])
    rec = LogitRecorder(model, layers, "interface")
    torch.manual_seed(0)
    ids = torch.randint(1000, 200000, (16, 1))  # one token each: rotation at position 0 is I
    with torch.no_grad():
        model(input_ids=ids)
    caps = {idx: _CAPTURED[id(attn)][0] for (_, idx, _, _, attn) in rec.layers}
    xs = {idx: rec._inputs[id(qmod)][0] for (_, idx, qmod, _, _) in rec.layers}
    rec.close()
    eps = model.config.rms_norm_eps
    for layer, plain in zip(gemma.layers[:6], raw.layers[:6]):
        q, k = caps[layer.index]  # [b, 4, 1, 256], [b, 1, 1, 256] after norm (and rope at 0)
        X = xs[layer.index].reshape(-1, 640).double()
        Q, K = layer.head_factors()  # folded, [4, 256, 640]
        Qr, Kr = plain.head_factors()
        for h in range(4):
            L = q[:, h, 0].double() @ k[:, 0, 0].double().T
            rq = ((X @ Qr[h].double().T) ** 2).mean(-1).add(eps).sqrt()
            rk = ((X @ Kr[h].double().T) ** 2).mean(-1).add(eps).sqrt()
            pred = (X @ Q[h].double().T @ K[h].double() @ X.T) / rq[:, None] / rk[None, :]
            err = float((pred - L).norm() / L.norm())
            assert err < 1e-4, (layer.index, h, err)  # float32 forward vs float64 form


def test_nomic_bert_has_12_bidirectional_layers_with_fused_qkv(nomic):
    assert nomic.family == "nomic-bert" and len(nomic.layers) == 12
    for l in nomic.layers:
        assert (l.n_heads, l.n_kv_heads, l.d_head, l.d_model, l.role) == (12, 12, 64, 768, "encoder")


def test_nomic_bert_splits_the_fused_rows_as_q_then_k(nomic):
    """No library here runs nomic-bert, so: the rows against the raw f16 tensor."""
    reader = gguf_reader(zoo_checkpoint("nomic-embed-text-v1.5"))
    t = {t.name: t for t in reader.tensors}["blk.3.attn_qkv.weight"]
    raw = np.asarray(t.data, dtype=np.float32).reshape(2304, 768)
    layer = nomic.layers[3]
    np.testing.assert_array_equal(layer.Wq.numpy(), raw[:768])
    np.testing.assert_array_equal(layer.Wk.numpy(), raw[768:1536])


def test_mpnet_form_reproduces_transformers_content_logits():
    from transformers import MPNetModel

    folder = zoo_checkpoint("all-mpnet-base-v2")
    ckpt = read_qk(folder, progress=False)
    assert ckpt.family == "mpnet" and len(ckpt.layers) == 12
    model = MPNetModel.from_pretrained(folder).eval().double()
    torch.manual_seed(0)
    errors = encoder_logit_errors(model, ckpt, "encoder.layer.{i}.attention.attn.q",
                                  "encoder.layer.{i}.attention.attn.k", "proj_outputs",
                                  torch.randint(1000, 30000, (4, 32)))
    assert len(errors) == 12 and max(errors.values()) < 1e-9


def test_sre_embedding_bert_form_reproduces_transformers_logits():
    from transformers import BertModel

    folder = zoo_checkpoint("sre-embedding")
    ckpt = read_qk(folder, progress=False)
    assert ckpt.family == "bert" and len(ckpt.layers) == 6
    model = BertModel.from_pretrained(folder).eval().double()
    torch.manual_seed(0)
    errors = encoder_logit_errors(model, ckpt, "encoder.layer.{i}.attention.self.query",
                                  "encoder.layer.{i}.attention.self.key", "interface",
                                  torch.randint(1000, 30000, (4, 32)))
    assert len(errors) == 6 and max(errors.values()) < 1e-9
