"""The less common checkpoint formats under real-looking input that is slightly off: a pickled
checkpoint whose tied output matrix was saved as a copy, an ONNX decoder whose causal mask compares
positions summed from the attention mask, a NomicBERT GGUF whose converter cut the padding rows of
its embedding, half-precision and bfloat16 weights, grouped-query attention, query/key biases, files
cut short, a shard missing, tensors written in another order.

Right answers come from outside the readers: transformers' own models (their weights and
``num_parameters()``), onnxruntime running the graph, the ``gguf`` package's own dequantization,
and NumPy on the arrays written into the files.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.adapters import read_qk
from one_line import refused

T = pytest.importorskip("transformers")
T.GPT2LMHeadModel, T.LlamaForCausalLM   # transformers imports its model modules on first use: here, not in a case

RNG = np.random.default_rng(17)
D, VOCAB = 32, 100
SPECIAL = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _w(rows: int, cols: int) -> np.ndarray:
    return RNG.standard_normal((rows, cols)).astype(np.float32)


def _forms(q: np.ndarray, k: np.ndarray, heads: int, kv: int) -> np.ndarray:
    """``[heads, d, d]``: ``Wq_h^T Wk_g`` with ``g = h // (heads / kv)``, by hand in float64."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    dh = q.shape[0] // heads
    return np.stack([q[h * dh:(h + 1) * dh].T @ k[(h // (heads // kv)) * dh:(h // (heads // kv) + 1) * dh]
                     for h in range(heads)])


def _read_forms(layer) -> np.ndarray:
    Q, K = layer.head_factors()
    return np.einsum("hdi,hdj->hij", Q.double().numpy(), K.double().numpy())


def _randomise(model, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return model.to(dtype)


def _pickle_folder(folder: Path, config, state: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config.to_json_file(folder / "config.json")
    torch.save(state, folder / "pytorch_model.bin")
    return folder


def _gpt2(**kw):
    return _randomise(T.GPT2LMHeadModel(T.GPT2Config(n_embd=D, n_head=4, n_layer=2, vocab_size=VOCAB, **SPECIAL, **kw)))


# ============================================================ 1. pickles: a tied output matrix saved as a copy


def test_a_pickled_gpt2_whose_tied_output_matrix_was_saved_as_a_copy_counts_it_once(tmp_path):
    model = _gpt2()
    state = model.state_dict()
    state["lm_head.weight"] = state["lm_head.weight"].clone()   # equal in value, stored apart
    folder = _pickle_folder(tmp_path / "m", model.config, state)
    # from_pretrained ties the output matrix to the embedding again: one parameter, counted once
    assert read_qk(folder, allow_pickle=True, progress=False).n_parameters == model.num_parameters()


def test_a_pickled_gpt2_with_an_untied_output_matrix_counts_both_matrices(tmp_path):
    model = _gpt2(tie_word_embeddings=False)
    state = model.state_dict()
    assert state["lm_head.weight"].data_ptr() != state["transformer.wte.weight"].data_ptr()
    folder = _pickle_folder(tmp_path / "m", model.config, state)
    n = model.num_parameters()
    assert n == sum(p.numel() for p in model.parameters())
    assert read_qk(folder, allow_pickle=True, progress=False).n_parameters == n


def test_a_pickle_whose_output_matrix_comes_first_and_shares_storage_counts_the_matrix_once(tmp_path):
    model = _gpt2()
    state = model.state_dict()
    state = {"lm_head.weight": state["lm_head.weight"], **{k: v for k, v in state.items() if k != "lm_head.weight"}}
    folder = _pickle_folder(tmp_path / "m", model.config, state)
    assert read_qk(folder, allow_pickle=True, progress=False).n_parameters == model.num_parameters()


def test_a_pickle_without_a_tie_flag_counts_a_copy_equal_in_value_once_and_a_trained_head_twice(tmp_path):
    model = _gpt2()
    state = model.state_dict()
    cfg = model.config.to_dict()
    cfg.pop("tie_word_embeddings", None)
    n = model.num_parameters()
    for copy, expected in ((state["lm_head.weight"].clone(), n), (torch.randn(VOCAB, D), n + VOCAB * D)):
        folder = tmp_path / f"m{expected}"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
        torch.save({**state, "lm_head.weight": copy}, folder / "pytorch_model.bin")
        assert read_qk(folder, allow_pickle=True, progress=False).n_parameters == expected


def test_a_pickled_bf16_llama_with_grouped_keys_and_a_tied_copy_gives_its_forms_and_count(tmp_path):
    cfg = T.LlamaConfig(hidden_size=D, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
                        intermediate_size=37, vocab_size=VOCAB, tie_word_embeddings=True, **SPECIAL)
    model = _randomise(T.LlamaForCausalLM(cfg), torch.bfloat16)
    state = model.state_dict()
    state["lm_head.weight"] = state["lm_head.weight"].clone()
    ckpt = read_qk(_pickle_folder(tmp_path / "m", cfg, state), allow_pickle=True, progress=False)
    assert ckpt.n_parameters == model.num_parameters()
    attn = model.model.layers[1].self_attn
    want = _forms(attn.q_proj.weight.detach().float().numpy(), attn.k_proj.weight.detach().float().numpy(), 4, 2)
    assert np.allclose(_read_forms(ckpt.layers[1]), want, atol=1e-9)


def test_a_pickle_cut_short_is_refused_in_one_line_naming_it(tmp_path):
    model = _gpt2()
    folder = _pickle_folder(tmp_path / "m", model.config, model.state_dict())
    path = folder / "pytorch_model.bin"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    refused(lambda: read_qk(folder, allow_pickle=True, progress=False), str(path))


def test_a_sharded_pickle_whose_second_shard_is_missing_is_refused_naming_it(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    model = _gpt2()
    model.config.to_json_file(folder / "config.json")
    state = model.state_dict()
    names = list(state)
    first = "pytorch_model-00001-of-00002.bin"
    torch.save({k: state[k] for k in names[:5]}, folder / first)
    index = {"weight_map": {k: first if i < 5 else "pytorch_model-00002-of-00002.bin" for i, k in enumerate(names)}}
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    refused(lambda: read_qk(folder, allow_pickle=True, progress=False), "pytorch_model-00002-of-00002.bin", "missing")


# ============================================================ 2. ONNX: a causal mask from summed positions


def _onnx_layer(mask: str, d: int = 16, heads: int = 4, n: int = 6, bias: bool = False, dtype=np.float32):
    """One attention over ``x [1, n, d]``; ``mask``: ``cumsum`` (positions summed from the attention mask,
    key positions compared with query positions, as decoders that allow left padding build it),
    ``window`` (summed positions compared with a constant: no causal mask) or ``none``."""
    from onnx import TensorProto, helper, numpy_helper

    wq, wk = _w(d, d).astype(dtype), _w(d, d).astype(dtype)   # [in, out], as MatMul(x, W) reads them
    bq, bk = _w(1, d)[0].astype(dtype), _w(1, d)[0].astype(dtype)
    dh = d // heads
    elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    inits = [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(wk, "wk"),
             numpy_helper.from_array(np.array([0, 0, heads, dh], np.int64), "split"),
             numpy_helper.from_array(np.array(np.sqrt(dh), dtype), "sqrt_dh")]
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q0"]), helper.make_node("MatMul", ["x", "wk"], ["k0"])]
    if bias:
        inits += [numpy_helper.from_array(bq, "bq"), numpy_helper.from_array(bk, "bk")]
        nodes += [helper.make_node("Add", ["q0", "bq"], ["q"]), helper.make_node("Add", ["k0", "bk"], ["k"])]
    else:
        nodes += [helper.make_node("Identity", ["q0"], ["q"]), helper.make_node("Identity", ["k0"], ["k"])]
    nodes += [helper.make_node("Reshape", ["q", "split"], ["q4"]),
              helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["k", "split"], ["k4"]),
              helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
              helper.make_node("MatMul", ["qt", "kt"], ["s"]), helper.make_node("Div", ["s", "sqrt_dh"], ["logits"])]
    inputs = [helper.make_tensor_value_info("x", elem, [1, n, d])]
    if mask in ("cumsum", "window"):
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, n]))
        inits += [numpy_helper.from_array(np.array(1, np.int64), "one"),
                  numpy_helper.from_array(np.array(1, np.int64), "axis1"),
                  numpy_helper.from_array(np.array([1, 1, 1, n], np.int64), "as_keys"),
                  numpy_helper.from_array(np.array([1, 1, n, 1], np.int64), "as_queries"),
                  numpy_helper.from_array(np.array(0, dtype), "free"),
                  numpy_helper.from_array(np.array(np.finfo(dtype).min, dtype), "lowest"),
                  numpy_helper.from_array(np.array(3, np.int64), "window")]
        nodes += [helper.make_node("CumSum", ["attention_mask", "axis1"], ["summed"]),
                  helper.make_node("Sub", ["summed", "one"], ["positions"]),
                  helper.make_node("Reshape", ["positions", "as_keys"], ["key_pos"])]
        if mask == "cumsum":
            nodes += [helper.make_node("Reshape", ["positions", "as_queries"], ["query_pos"]),
                      helper.make_node("LessOrEqual", ["key_pos", "query_pos"], ["seen"])]
        else:
            nodes.append(helper.make_node("Less", ["key_pos", "window"], ["seen"]))
        nodes += [helper.make_node("Where", ["seen", "free", "lowest"], ["additive"]),
                  helper.make_node("Add", ["logits", "additive"], ["masked"])]
    else:
        nodes.append(helper.make_node("Identity", ["logits"], ["masked"]))
    nodes.append(helper.make_node("Softmax", ["masked"], ["p"], axis=-1))
    graph = helper.make_graph(nodes, "attention", inputs, [helper.make_tensor_value_info("p", elem, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model, (wq, wk, bq, bk)


def _run(model, **feeds):
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def test_an_onnx_decoder_whose_mask_compares_positions_summed_from_the_attention_mask_is_causal(tmp_path):
    import onnx

    model, (wq, wk, _, _) = _onnx_layer("cumsum")
    # onnxruntime: no query gives weight to a later key
    probs = _run(model, x=_w(6, 16)[None], attention_mask=np.ones((1, 6), np.int64))
    assert np.all(np.triu(probs[0, 0], 1) == 0) and np.all(probs[0, 0][np.tril_indices(6)] > 0)
    onnx.save(model, str(tmp_path / "decoder_model.onnx"))
    (layer,) = read_qk(tmp_path / "decoder_model.onnx", progress=False).layers
    assert (layer.role, layer.component) == ("causal", "decoder")
    assert np.array_equal(layer.Wq.numpy(), wq.T) and np.array_equal(layer.Wk.numpy(), wk.T)


def test_an_onnx_encoder_whose_mask_compares_summed_positions_with_a_constant_stays_an_encoder(tmp_path):
    import onnx

    model, _ = _onnx_layer("window")
    probs = _run(model, x=_w(6, 16)[None], attention_mask=np.ones((1, 6), np.int64))
    assert np.all(probs[0, 0][:, :3] > 0) and np.all(probs[0, 0][:2, 3:] == 0)   # every query sees key 2
    onnx.save(model, str(tmp_path / "encoder.onnx"))
    (layer,) = read_qk(tmp_path / "encoder.onnx", progress=False).layers
    assert layer.role == "encoder"


def test_onnx_query_key_biases_count_as_parameters_and_leave_the_forms_unchanged(tmp_path):
    import onnx

    model, (wq, wk, _, _) = _onnx_layer("none", bias=True)
    onnx.save(model, str(tmp_path / "model.onnx"))
    ckpt = read_qk(tmp_path / "model.onnx", progress=False)
    # wq, wk (16 x 16), their biases (16 each), the scale scalar; the reshape target is integers
    assert ckpt.n_parameters == 2 * 256 + 2 * 16 + 1
    assert np.allclose(_read_forms(ckpt.layers[0]), _forms(wq.T, wk.T, 4, 4), atol=1e-9)


def test_onnx_half_precision_weights_give_the_forms_of_their_values(tmp_path):
    import onnx

    model, (wq, wk, _, _) = _onnx_layer("none", dtype=np.float16)
    onnx.save(model, str(tmp_path / "model.onnx"))
    (layer,) = read_qk(tmp_path / "model.onnx", progress=False).layers
    want = _forms(wq.T.astype(np.float32), wk.T.astype(np.float32), 4, 4)
    assert np.allclose(_read_forms(layer), want, atol=1e-9)


# ============================================================ 3. GGUF: NomicBERT's padded embedding, quantized rows


def _gguf(path: Path, arch: str, *, vocab: int, d: int = 16, heads: int = 4, kv: int = 4, layers: int = 1,
          qtype=None, fused: bool = False) -> tuple[Path, dict, dict]:
    import gguf

    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(layers)
    w.add_embedding_length(d)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_context_length(64)
    w.add_feed_forward_length(2 * d)
    if arch.startswith("nomic"):
        w.add_causal_attention(False)
    dh = d // heads
    raw, stored = {}, {}
    stored["token_embd.weight"] = _w(vocab, d)
    for i in range(layers):
        q, k = _w(heads * dh, d), _w(kv * dh, d)
        raw[i] = (q, k)
        if fused:
            stored[f"blk.{i}.attn_qkv.weight"] = np.concatenate([q, k, _w(kv * dh, d)])
            continue
        if arch == "llama":   # convert_hf_to_gguf.py's LlamaModel.permute
            q, k = (m.reshape(n, 2, m.shape[0] // n // 2, d).swapaxes(1, 2).reshape(m.shape)
                    for m, n in ((q, heads), (k, kv)))
        stored[f"blk.{i}.attn_q.weight"], stored[f"blk.{i}.attn_k.weight"] = q, k
    blocks = {}
    for name, value in stored.items():
        if qtype is not None and "attn" in name:
            blocks[name] = gguf.quants.quantize(value, qtype)
            w.add_tensor(name, blocks[name], raw_dtype=qtype)
        else:
            w.add_tensor(name, value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, raw, blocks


def test_a_nomic_bert_gguf_counts_the_padding_rows_its_converter_cut_from_the_embedding(tmp_path):
    # the model pads its vocabulary to a multiple of 64 (100 -> 128 rows); llama.cpp keeps the tokenizer's 100
    path, _, _ = _gguf(tmp_path / "m.gguf", "nomic-bert", vocab=100, fused=True)
    assert read_qk(path, progress=False).n_parameters == 128 * 16 + 3 * 16 * 16


def test_nomic_embed_text_gguf_counts_the_parameters_of_the_model_it_was_converted_from():
    from adapters_data import zoo_checkpoint

    # nomic-ai/nomic-embed-text-v1.5 (NomicBertModel, no biases, no pooler): 30,528 x 768 embedding, 2 x 768
    # token types, the embedding norm, and per layer Wqkv, out_proj, fc11, fc12, fc2 and two norms
    d, ff = 768, 3072
    per_layer = 3 * d * d + d * d + 3 * d * ff + 4 * d
    assert read_qk(zoo_checkpoint("nomic-embed-text-v1.5"), progress=False).n_parameters == (
        30_528 * d + 2 * d + 2 * d + 12 * per_layer)


def test_a_llama_gguf_embedding_of_an_odd_vocabulary_is_counted_as_stored(tmp_path):
    path, _, _ = _gguf(tmp_path / "m.gguf", "llama", vocab=100, heads=4, kv=2)
    assert read_qk(path, progress=False).n_parameters == 100 * 16 + 16 * 16 + 8 * 16


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q5_0", "BF16"])
def test_quantized_gguf_rows_of_a_grouped_llama_give_the_forms_of_the_gguf_packages_dequantized_rows(tmp_path, qtype):
    import gguf

    qtype = gguf.GGMLQuantizationType[qtype]
    path, _, blocks = _gguf(tmp_path / "m.gguf", "llama", vocab=64, d=32, heads=4, kv=2, qtype=qtype)
    q, k = (gguf.quants.dequantize(blocks[f"blk.0.attn_{x}.weight"], qtype) for x in "qk")
    # undo llama.cpp's rotary permutation by hand: rows (n, dh/2, 2) back to (n, 2, dh/2)
    q, k = (m.reshape(n, m.shape[0] // n // 2, 2, 32).swapaxes(1, 2).reshape(m.shape) for m, n in ((q, 4), (k, 2)))
    (layer,) = read_qk(path, progress=False).layers
    assert np.allclose(_read_forms(layer), _forms(q, k, 4, 2), atol=1e-9)


def test_a_gguf_cut_short_is_refused_naming_the_tensor_that_lies_outside(tmp_path):
    path, _, _ = _gguf(tmp_path / "m.gguf", "llama", vocab=64)
    path.write_bytes(path.read_bytes()[:-100])
    refused(lambda: read_qk(path, progress=False), str(path), "truncated")


# ============================================================ 4. safetensors from transformers models


def _save_safetensors(folder: Path, model, state: dict | None = None) -> Path:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(folder / "config.json")
    state = state if state is not None else {k: v.clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"))
    return folder


def test_an_fp16_llama_with_grouped_keys_gives_each_heads_form_and_its_parameter_count(tmp_path):
    cfg = T.LlamaConfig(hidden_size=D, num_attention_heads=8, num_key_value_heads=2, num_hidden_layers=2,
                        intermediate_size=37, vocab_size=VOCAB, tie_word_embeddings=False, **SPECIAL)
    model = _randomise(T.LlamaForCausalLM(cfg), torch.float16)
    model.save_pretrained(tmp_path / "m")
    ckpt = read_qk(tmp_path / "m", progress=False)
    assert ckpt.n_parameters == model.num_parameters()
    for i, layer in enumerate(ckpt.layers):
        attn = model.model.layers[i].self_attn
        want = _forms(attn.q_proj.weight.detach().float().numpy(), attn.k_proj.weight.detach().float().numpy(), 8, 2)
        assert np.allclose(_read_forms(layer), want, atol=1e-9)


def test_a_qwen2_counts_its_query_and_key_biases_and_its_forms_leave_them_out(tmp_path):
    cfg = T.Qwen2Config(hidden_size=D, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=1,
                        intermediate_size=37, vocab_size=VOCAB, tie_word_embeddings=True, **SPECIAL)
    model = _randomise(T.Qwen2ForCausalLM(cfg))
    attn = model.model.layers[0].self_attn
    assert attn.q_proj.bias is not None and attn.k_proj.bias is not None
    ckpt = read_qk(_save_safetensors(tmp_path / "m", model), progress=False)   # the tied output saved again
    assert ckpt.n_parameters == model.num_parameters()
    want = _forms(attn.q_proj.weight.detach().numpy(), attn.k_proj.weight.detach().numpy(), 4, 2)
    assert np.allclose(_read_forms(ckpt.layers[0]), want, atol=1e-9)


def test_a_bf16_bert_gives_the_forms_of_its_bf16_values(tmp_path):
    cfg = T.BertConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=1, intermediate_size=37,
                       vocab_size=VOCAB)
    model = _randomise(T.BertModel(cfg), torch.bfloat16)
    model.save_pretrained(tmp_path / "m")
    ckpt = read_qk(tmp_path / "m", progress=False)
    assert ckpt.n_parameters == model.num_parameters()
    att = model.encoder.layer[0].attention.self
    want = _forms(att.query.weight.detach().float().numpy(), att.key.weight.detach().float().numpy(), 4, 4)
    assert np.allclose(_read_forms(ckpt.layers[0]), want, atol=1e-9)


def test_tensors_written_in_another_order_give_the_same_forms_and_count(tmp_path):
    model = _randomise(T.BertModel(T.BertConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=2,
                                                intermediate_size=37, vocab_size=VOCAB)))
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items()}
    a = read_qk(_save_safetensors(tmp_path / "a", model, state), progress=False)
    b = read_qk(_save_safetensors(tmp_path / "b", model, dict(reversed(list(state.items())))), progress=False)
    assert a.n_parameters == b.n_parameters == model.num_parameters()
    for la, lb, layer in zip(a.layers, b.layers, model.encoder.layer):
        att = layer.attention.self
        want = _forms(att.query.weight.detach().numpy(), att.key.weight.detach().numpy(), 4, 4)
        assert np.allclose(_read_forms(la), want, atol=1e-9) and np.allclose(_read_forms(lb), want, atol=1e-9)


def test_a_safetensors_file_cut_short_is_refused_naming_it_as_truncated(tmp_path):
    model = _randomise(T.BertModel(T.BertConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=1,
                                                intermediate_size=37, vocab_size=VOCAB)))
    folder = _save_safetensors(tmp_path / "m", model)
    path = folder / "model.safetensors"
    (n,) = struct.unpack("<Q", path.read_bytes()[:8])
    path.write_bytes(path.read_bytes()[:-64])
    assert path.stat().st_size > 8 + n   # the header is whole; the last tensor is not
    refused(lambda: read_qk(folder, progress=False), str(path), "truncated")


@pytest.mark.parametrize("tied", [True, False])
def test_an_onnx_output_matrix_stored_again_as_the_embeddings_transpose_counts_once(tmp_path, tied):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    # a tied GPT-2 exported with constant folding: the embedding W for the Gather, W^T for the lm_head MatMul
    model, _ = _onnx_layer("none")
    wte = _w(100, 16)
    head = wte.T.copy() if tied else _w(16, 100)
    model.graph.initializer.extend([numpy_helper.from_array(wte, "transformer.wte.weight"),
                                    numpy_helper.from_array(head, "onnx::MatMul_1234")])
    model.graph.node.append(helper.make_node("MatMul", ["x", "onnx::MatMul_1234"], ["vocab_logits"]))
    model.graph.output.append(helper.make_tensor_value_info("vocab_logits", TensorProto.FLOAT, None))
    onnx.save(model, str(tmp_path / "model.onnx"))
    attention = 2 * 16 * 16 + 1   # wq, wk and the scale scalar
    assert read_qk(tmp_path / "model.onnx", progress=False).n_parameters == attention + 1600 * (1 if tied else 2)


# ============================================================ 5. Marian: intgemm's activation multipliers


def test_a_marian_models_activation_multipliers_are_no_parameters(tmp_path):
    from test_hostile_round14_binary_readers import _marian

    f32 = 0x404
    items = {"Wemb": (f32, (10, 8), _w(10, 8).tobytes()),
             "encoder_l1_self_Wq": (f32, (8, 8), _w(8, 8).tobytes()),
             "encoder_l1_self_Wk": (f32, (8, 8), _w(8, 8).tobytes()),
             "encoder_l1_self_bq": (f32, (1, 8), _w(1, 8).tobytes())}
    # what Bergamot's 8-bit models carry beside each matrix: one float, the activations' multiplier
    items.update({f"{n}_QuantMultA": (f32, (1, 1), np.float32([12.5]).tobytes())
                  for n in ("Wemb", "encoder_l1_self_Wq", "encoder_l1_self_Wk", "none")})
    ckpt = read_qk(_marian(tmp_path / "model.enpt.intgemm.alphas.bin", items), progress=False)
    assert ckpt.n_parameters == 10 * 8 + 2 * 8 * 8 + 8


def test_pickle_shards_without_their_index_are_named_as_such_not_as_no_weights(tmp_path):
    model = _gpt2()
    folder = tmp_path / "m"
    folder.mkdir()
    model.config.to_json_file(folder / "config.json")
    state = model.state_dict()
    names = list(state)
    for i, part in enumerate((names[:5], names[5:])):
        torch.save({k: state[k] for k in part}, folder / f"pytorch_model-0000{i + 1}-of-00002.bin")
    text = refused(lambda: read_qk(folder, allow_pickle=True, progress=False),
                   "pytorch_model-00001-of-00002.bin", "pytorch_model.bin.index.json")
    assert "no model.safetensors" not in text


def test_score_prints_the_count_of_a_pickled_tied_copy_under_a_config_saved_with_a_bom_and_crlf(tmp_path, capsys):
    from companion.cli import main

    model = _gpt2()
    state = model.state_dict()
    state["lm_head.weight"] = state["lm_head.weight"].clone()
    folder = _pickle_folder(tmp_path / "m", model.config, state)
    text = (folder / "config.json").read_text()
    (folder / "config.json").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())   # Notepad's
    assert main(["score", str(folder), "--allow-pickle", "--quiet"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f"{model.num_parameters():,} parameters" in first, first


@pytest.mark.parametrize("key", ["state_dict", "model"])
def test_a_training_checkpoint_holding_the_weights_under_a_key_is_named_as_such(tmp_path, key):
    model = _gpt2()
    folder = tmp_path / "m"
    folder.mkdir()
    model.config.to_json_file(folder / "config.json")
    torch.save({key: model.state_dict(), "epoch": 3}, folder / "pytorch_model.bin")   # as Lightning and loops save it
    refused(lambda: read_qk(folder, allow_pickle=True, progress=False), "pytorch_model.bin", repr(key), "torch.save")


@pytest.mark.parametrize("how", ["missing", "cut short"])
def test_an_onnx_graph_whose_external_data_file_is_missing_or_cut_short_is_refused_naming_it(tmp_path, how):
    import onnx

    model, _ = _onnx_layer("none", d=64)
    onnx.save(model, str(tmp_path / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="model.onnx_data", size_threshold=0)
    data = tmp_path / "model.onnx_data"
    if how == "missing":
        data.unlink()
        refused(lambda: read_qk(tmp_path / "model.onnx", progress=False), "'model.onnx_data'", "not beside it")
    else:
        data.write_bytes(data.read_bytes()[:100])
        refused(lambda: read_qk(tmp_path / "model.onnx", progress=False), "model.onnx", "'wq'", "exceeds")


def test_a_pickle_of_meta_tensors_saved_before_the_weights_were_loaded_is_refused_in_one_line(tmp_path):
    with torch.device("meta"):   # as accelerate's init_empty_weights builds a model
        model = T.GPT2LMHeadModel(T.GPT2Config(n_embd=D, n_head=4, n_layer=2, vocab_size=VOCAB, **SPECIAL))
    folder = _pickle_folder(tmp_path / "m", model.config, model.state_dict())
    refused(lambda: read_qk(folder, allow_pickle=True, progress=False), "pytorch_model.bin", "meta")


def test_the_first_of_two_safetensors_shards_without_an_index_is_refused_naming_the_second(tmp_path):
    from safetensors.torch import save_file

    model = _randomise(T.BertModel(T.BertConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=2,
                                                intermediate_size=37, vocab_size=VOCAB)))
    folder = tmp_path / "m"
    folder.mkdir()
    model.config.to_json_file(folder / "config.json")
    # every attention layer is in the first shard, the pooler in the second: the download stopped after one
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items() if not k.startswith("pooler.")}
    save_file(state, str(folder / "model-00001-of-00002.safetensors"))
    refused(lambda: read_qk(folder, progress=False), "model-00002-of-00002.safetensors", "missing")


def test_onnx_int4_query_weights_under_dequantize_linear_are_refused_naming_int4(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model, _ = _onnx_layer("none")
    graph = model.graph
    # the query weight as int4 values with one scale per output column, as int4 weight-only exporters write it
    wq4 = helper.make_tensor("wq_int4", TensorProto.INT4, [16, 16], RNG.integers(-8, 8, 256).tolist())
    graph.initializer.extend([wq4, numpy_helper.from_array(np.full(16, 0.05, np.float32), "wq_scale")])
    graph.node.insert(0, helper.make_node("DequantizeLinear", ["wq_int4", "wq_scale"], ["wq_float"], axis=1))
    for node in graph.node:
        if node.op_type == "MatMul" and list(node.input) == ["x", "wq"]:
            node.input[1] = "wq_float"
    kept = [i for i in graph.initializer if i.name != "wq"]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    model.opset_import[0].version = 21
    model.ir_version = 10
    onnx.save(model, str(tmp_path / "model.onnx"))
    refused(lambda: read_qk(tmp_path / "model.onnx", progress=False), "wq_int4", "int4")


@pytest.mark.parametrize("order", ["as saved", "reversed"])
def test_a_pickled_t5_whose_four_embedding_names_share_one_storage_counts_it_once(tmp_path, order):
    cfg = T.T5Config(d_model=D, d_kv=8, d_ff=37, num_layers=1, num_heads=4, vocab_size=VOCAB, **SPECIAL,
                     decoder_start_token_id=0, tie_word_embeddings=True)
    model = _randomise(T.T5ForConditionalGeneration(cfg))
    state = model.state_dict()
    if order == "reversed":
        state = dict(reversed(list(state.items())))
    assert sum(n.endswith(("shared.weight", "embed_tokens.weight", "lm_head.weight")) for n in state) == 4
    folder = _pickle_folder(tmp_path / "m", cfg, state)
    assert read_qk(folder, allow_pickle=True, progress=False).n_parameters == model.num_parameters()


@pytest.mark.parametrize("source", [None, 3, ["model"]])
def test_a_checkpoint_given_as_no_text_is_refused_in_one_line_naming_it(source):
    refused(lambda: read_qk(source, progress=False), type(source).__name__, "path or hub id")


@pytest.mark.parametrize("fmt", ["safetensors", "pickle"])
def test_a_whisper_whose_tied_output_matrix_was_saved_as_a_copy_counts_it_once(tmp_path, fmt):
    cfg = T.WhisperConfig(vocab_size=VOCAB, d_model=D, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                          decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37, num_mel_bins=8,
                          max_source_positions=16, max_target_positions=16, decoder_start_token_id=1, **SPECIAL)
    model = _randomise(T.WhisperForConditionalGeneration(cfg))
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items()}   # proj_out stored apart
    assert "proj_out.weight" in state and cfg.tie_word_embeddings
    if fmt == "pickle":
        folder = _pickle_folder(tmp_path / "m", cfg, state)
    else:
        folder = _save_safetensors(tmp_path / "m", model, state)
    assert read_qk(folder, allow_pickle=True, progress=False).n_parameters == model.num_parameters()


MLM = {   # masked-LM heads tied to the word embedding under names other than lm_head.weight
    "roberta": lambda: T.RobertaForMaskedLM(T.RobertaConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=1,
                                                            intermediate_size=37, vocab_size=VOCAB,
                                                            max_position_embeddings=40, **SPECIAL)),
    "albert": lambda: T.AlbertForMaskedLM(T.AlbertConfig(hidden_size=D, embedding_size=16, num_attention_heads=4,
                                                         num_hidden_layers=1, intermediate_size=37, vocab_size=VOCAB,
                                                         **SPECIAL)),
    "distilbert": lambda: T.DistilBertForMaskedLM(T.DistilBertConfig(dim=D, n_heads=4, n_layers=1, hidden_dim=37,
                                                                     vocab_size=VOCAB, pad_token_id=0)),
    "modernbert": lambda: T.ModernBertForMaskedLM(T.ModernBertConfig(hidden_size=D, num_attention_heads=4,
                                                                     num_hidden_layers=1, intermediate_size=37,
                                                                     vocab_size=VOCAB, cls_token_id=1, sep_token_id=2,
                                                                     **SPECIAL)),
    "mpnet": lambda: T.MPNetForMaskedLM(T.MPNetConfig(hidden_size=D, num_attention_heads=4, num_hidden_layers=1,
                                                      intermediate_size=37, vocab_size=VOCAB, **SPECIAL)),
}


@pytest.mark.parametrize("name", sorted(MLM))
def test_a_masked_lm_head_saved_as_a_copy_of_its_tied_embedding_counts_once(tmp_path, name):
    model = _randomise(MLM[name]())
    # safetensors refuses tensors that share memory and tells the user to clone them: each tied copy stored apart
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items()}
    folder = _save_safetensors(tmp_path / "m", model, state)
    assert read_qk(folder, progress=False).n_parameters == model.num_parameters()
