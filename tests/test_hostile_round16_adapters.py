"""From checkpoint files to ``W_qk = W_q W_k^T`` and its scores, under real-looking input that is
slightly off: a survey cache whose catalog entry moved to another model or commit, a checkpoint
saved after its heads were pruned, llama.cpp's per-layer head counts and rotary factors, one part
of a split GGUF file, a GPT-2 style causal mask cut from a constant triangle in an ONNX graph, a
conversion that gives one layer twice, the buffers of encoder-decoder checkpoints counted as
parameters.

Right answers come from outside the code under test: NumPy on the matrices written into the
files, the attention a transformers model computes itself (its ``output_attentions``), its own
``num_parameters()``, and loops over queries and keys written out by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from companion.adapters import read_qk
from one_line import refused
from test_hostile_round10_adapters import _save  # a config.json and model.safetensors in a folder

RNG = np.random.default_rng(16)


def _w(rows: int, cols: int) -> np.ndarray:
    return RNG.standard_normal((rows, cols)).astype(np.float32)


def _sym(M) -> float:
    """Def. 3.1 from the split into symmetric and skew parts (not the trace the package uses)."""
    M = np.asarray(M, dtype=np.float64)
    S, N = (M + M.T) / 2, (M - M.T) / 2
    return float(((S ** 2).sum() - (N ** 2).sum()) / (M ** 2).sum())


def _dir(M, gamma: float = 2.0) -> float:
    """Def. 3.2, the 'excess' variant, written out: outlier norms' excess over mean + gamma * std."""
    M = np.asarray(M, dtype=np.float64)

    def mass(n):
        t = n.mean() + gamma * n.std(ddof=1)
        return float(np.sum(n[n > t] - t))

    R, C = mass(np.linalg.norm(M, axis=1)), mass(np.linalg.norm(M, axis=0))
    return 0.0 if R + C == 0 else (R - C) / (R + C)


def _head_form(Wq, Wk, h: int, g: int, dh: int) -> np.ndarray:
    return Wq[h * dh:(h + 1) * dh].astype(np.float64).T @ Wk[g * dh:(g + 1) * dh].astype(np.float64)


BERT_CFG = {"model_type": "bert", "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2}


# ============================================================ 1. the survey's cache serves the model the catalog names


def _bert_folder(folder: Path, seed: int) -> Path:
    r = np.random.default_rng(seed)
    t = {}
    for i in range(2):
        t[f"encoder.layer.{i}.attention.self.query.weight"] = r.standard_normal((32, 32)).astype(np.float32)
        t[f"encoder.layer.{i}.attention.self.key.weight"] = r.standard_normal((32, 32)).astype(np.float32)
    return _save(folder, BERT_CFG, t)


def _survey(tmp_path, hub_id: str, revision: str = ""):
    from companion.survey.scoring import run_survey_entries

    cat = pd.DataFrame([{"key": "m", "hub_id": hub_id, "revision": revision, "local": ""}])
    status = run_survey_entries(cat, out_dir=tmp_path / "out", local_dir=tmp_path / "local", online=False,
                                per_head=False, progress=False)
    from companion.survey.table_cache import read_table

    return status.iloc[0], read_table(tmp_path / "out" / "scores.csv")


def _layer0_symmetry(folder: Path) -> float:
    from safetensors.numpy import load_file

    t = load_file(str(folder / "model.safetensors"))
    return _sym(t["encoder.layer.0.attention.self.query.weight"].T.astype(np.float64)
                @ t["encoder.layer.0.attention.self.key.weight"])


def test_a_cached_table_is_scored_again_when_the_catalog_entry_names_another_model(tmp_path):
    _bert_folder(tmp_path / "local" / "org--one", 1)
    two = _bert_folder(tmp_path / "local" / "org--two", 2)
    _survey(tmp_path, "org/one")
    row, scores = _survey(tmp_path, "org/two")   # the entry corrected to point at another checkpoint
    assert row["status"] == "scored" and "org/one" in row["reason"]
    layer0 = scores[(scores["layer"] == 0) & (scores["head"] == -1)]
    assert list(layer0["hub_id"]) == ["org/two"]
    assert float(layer0["symmetry"].iloc[0]) == pytest.approx(_layer0_symmetry(two), abs=1e-9)


def test_a_cached_table_is_scored_again_when_the_catalog_pins_another_commit(tmp_path):
    _bert_folder(tmp_path / "local" / "m", 3)
    first, second = "a" * 40, "b" * 40
    _survey(tmp_path, "org/m", first)
    row, scores = _survey(tmp_path, "org/m", second)
    assert row["status"] == "scored" and first in row["reason"]
    assert set(scores["revision"]) == {second}


def test_an_unchanged_entry_is_served_from_its_cache_with_its_numbers(tmp_path):
    folder = _bert_folder(tmp_path / "local" / "m", 4)
    _survey(tmp_path, "org/m", "c" * 40)
    row, scores = _survey(tmp_path, "org/m", "c" * 40)
    assert row["status"] == "cached"
    layer0 = scores[(scores["layer"] == 0) & (scores["head"] == -1)]
    assert float(layer0["symmetry"].iloc[0]) == pytest.approx(_layer0_symmetry(folder), abs=1e-9)


# ============================================================ 2. each layer once, each head as the model has it


def test_a_conversion_that_gives_one_layer_twice_is_refused_naming_the_layer(tmp_path):
    from companion.adapters.families import LayerPlan

    t = {f"{s}.{i}.{w}.weight": _w(8, 8) for s in ("a", "b") for i in range(2) for w in ("q", "k")}
    folder = _save(tmp_path / "m", {"model_type": "mine", "hidden_size": 8, "num_hidden_layers": 2}, t)

    def mine(cfg, keys):   # two tensor patterns that both match layer 1
        return [LayerPlan(0, "encoder", "encoder", ("a.0.q.weight", "a.0.k.weight"), 2, 2),
                LayerPlan(1, "encoder", "encoder", ("a.1.q.weight", "a.1.k.weight"), 2, 2),
                LayerPlan(1, "encoder", "encoder", ("b.1.q.weight", "b.1.k.weight"), 2, 2)]

    refused(lambda: read_qk(folder, families={"mine": mine}, progress=False), "layer 1", "more than once")


def test_a_bert_saved_after_pruning_heads_splits_each_layer_into_the_heads_it_kept(tmp_path):
    from companion.survey.tables import layer_scores

    # 4 heads of 8: layer 0 kept 3 (24 rows, read as 4 heads of 6 before), layer 1 kept 2
    q0, k0, q1, k1 = _w(24, 32), _w(24, 32), _w(16, 32), _w(16, 32)
    folder = _save(tmp_path / "m", {**BERT_CFG, "pruned_heads": {"0": [1], "1": [0, 2]}}, {
        "encoder.layer.0.attention.self.query.weight": q0, "encoder.layer.0.attention.self.key.weight": k0,
        "encoder.layer.1.attention.self.query.weight": q1, "encoder.layer.1.attention.self.key.weight": k1})
    ckpt = read_qk(folder, progress=False)
    assert [(layer.n_heads, layer.d_head) for layer in ckpt.layers] == [(3, 8), (2, 8)]
    df = layer_scores(ckpt, per_head=True)
    for layer, (q, k, kept) in enumerate(((q0, k0, 3), (q1, k1, 2))):
        got = df[(df["layer"] == layer) & (df["head"] >= 0)].sort_values("head")
        assert got["symmetry"].to_numpy() == pytest.approx([_sym(_head_form(q, k, h, h, 8)) for h in range(kept)],
                                                            abs=1e-9)


def test_pruned_heads_of_an_albert_whose_layers_are_shared_are_refused_not_split_wrongly(tmp_path):
    cfg = {"model_type": "albert", "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
           "pruned_heads": {"1": [3]}}
    prefix = "encoder.albert_layer_groups.0.albert_layers.0.attention"
    folder = _save(tmp_path / "m", cfg, {f"{prefix}.query.weight": _w(24, 32), f"{prefix}.key.weight": _w(24, 32)})
    refused(lambda: read_qk(folder, progress=False), "pruned_heads", "albert")


# ============================================================ 3. GGUF: llama.cpp's metadata and parts


def _gguf(path: Path, arch: str = "llama", layers: int = 2, heads: int = 4, kv=2, d: int = 16, extra=None,
          metadata=None, tensors=None) -> tuple[Path, dict]:
    """A GGUF file with F32 q/k tensors; ``kv`` an int or a per-layer list; returns the file and
    the q/k matrices in Hugging Face row order (as written, or before llama's permutation)."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(layers)
    w.add_head_count(heads)
    if isinstance(kv, list):
        w.add_array(f"{arch}.attention.head_count_kv", kv)
    else:
        w.add_head_count_kv(kv)
    w.add_embedding_length(d)
    for key, (kind, value) in (metadata or {}).items():
        getattr(w, f"add_{kind}")(key, value)
    n_kv = kv[0] if isinstance(kv, list) else kv
    dh = d // heads
    raw = {}
    for i in tensors if tensors is not None else range(layers):
        q, k = _w(heads * dh, d), _w(n_kv * dh, d)
        k[:, 3] *= 6   # a heavy input column, so that directionality is not 0
        raw[i] = (q, k)
        if arch == "llama":   # convert_hf_to_gguf.py's LlamaModel.permute
            q, k = (m.reshape(n, 2, m.shape[0] // n // 2, d).swapaxes(1, 2).reshape(m.shape)
                    for m, n in ((q, heads), (k, n_kv)))
        w.add_tensor(f"blk.{i}.attn_q.weight", q)
        w.add_tensor(f"blk.{i}.attn_k.weight", k)
    for name, value in (extra or {}).items():   # an array, or (blocks, their quantization type)
        if isinstance(value, tuple):
            w.add_tensor(name, value[0], raw_dtype=value[1])
        else:
            w.add_tensor(name, value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, raw


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_gguf_rows_give_each_heads_form_and_both_pairings_as_numpy_does(tmp_path, arch):
    from companion.survey.tables import layer_scores

    path, raw = _gguf(tmp_path / "m.gguf", arch, heads=4, kv=2)
    ckpt = read_qk(path, progress=False)
    for pairing, g_of in (("grouped", lambda h: h // 2), ("modulo", lambda h: h % 2)):
        df = layer_scores(ckpt, per_head=True, pairing=pairing)
        for i, (q, k) in raw.items():
            rows = df[df["layer"] == i].set_index("head")
            M = sum(_head_form(q, k, h, g_of(h), 4) for h in range(4))
            assert rows.at[-1, "symmetry"] == pytest.approx(_sym(M), abs=1e-9)
            assert rows.at[-1, "directionality"] == pytest.approx(_dir(M), abs=1e-9)
            for h in range(4):
                assert rows.at[h, "symmetry"] == pytest.approx(_sym(_head_form(q, k, h, g_of(h), 4)), abs=1e-9)


def test_gguf_key_head_counts_given_per_layer_with_one_value_read_as_that_count(tmp_path):
    path, raw = _gguf(tmp_path / "m.gguf", kv=[2, 2])
    ckpt = read_qk(path, progress=False)
    assert [(layer.n_heads, layer.n_kv_heads) for layer in ckpt.layers] == [(4, 2), (4, 2)]
    q, k = raw[1]
    M = sum(_head_form(q, k, h, h // 2, 4) for h in range(4))
    assert np.allclose(ckpt.layers[1].form().numpy(), M, atol=1e-5)


def test_gguf_head_counts_that_differ_between_layers_are_refused_naming_the_field(tmp_path):
    path, _ = _gguf(tmp_path / "m.gguf", kv=[2, 4])
    refused(lambda: read_qk(path, progress=False), "head_count_kv", "different counts")


def test_the_rotary_frequency_factors_of_a_llama_gguf_are_no_parameter(tmp_path):
    # Llama 3.1/3.2 files carry rope_freqs.weight (d_head / 2 factors): no weight of the model
    path, _ = _gguf(tmp_path / "m.gguf", extra={"rope_freqs.weight": np.ones(2, np.float32),
                                                "token_embd.weight": _w(10, 16)})
    assert read_qk(path, progress=False).n_parameters == 2 * (16 * 16 + 8 * 16) + 10 * 16


@pytest.mark.parametrize("tied", [True, False])
def test_an_output_matrix_stored_again_beside_tied_embeddings_counts_once_and_a_trained_one_twice(tmp_path, tied):
    import gguf
    from gguf import GGMLQuantizationType as Q

    embeddings = _w(64, 32)
    output = embeddings if tied else _w(64, 32)   # a tied model's converter wrote the same matrix again
    blocks = gguf.quants.quantize(output, Q.Q8_0)   # in another block type, as Qwen2.5-Coder's files do
    path, _ = _gguf(tmp_path / "m.gguf", d=32, extra={"token_embd.weight": embeddings, "output.weight": (blocks, Q.Q8_0)})
    qk = 2 * (32 * 32 + 16 * 32)
    assert read_qk(path, progress=False).n_parameters == qk + 64 * 32 * (1 if tied else 2)


def test_qwen25_coder_gguf_counts_the_parameters_of_the_model_it_was_converted_from():
    from adapters_data import zoo_checkpoint

    # Qwen/Qwen2.5-Coder-0.5B-Instruct (tied embeddings): 494,032,768 parameters (num_parameters); the
    # file stores its output matrix again, in another block type
    assert read_qk(zoo_checkpoint("qwen2.5-coder-0.5b"), progress=False).n_parameters == 494_032_768


def test_one_part_of_a_split_gguf_holding_every_query_and_key_is_refused_not_read_as_the_model(tmp_path):
    split = {"split.no": ("uint16", 0), "split.count": ("uint16", 2), "split.tensors.count": ("int32", 9)}
    path, _ = _gguf(tmp_path / "m-00001-of-00002.gguf", metadata=split)   # the feed-forward weights in part 2
    refused(lambda: read_qk(path, progress=False), "part 1 of 2", "split", "merge")


def test_one_part_of_a_split_gguf_without_the_last_layer_is_named_a_split_part_not_a_bad_download(tmp_path):
    split = {"split.no": ("uint16", 0), "split.count": ("uint16", 3), "split.tensors.count": ("int32", 4)}
    path, _ = _gguf(tmp_path / "m-00001-of-00003.gguf", metadata=split, tensors=[0])
    text = refused(lambda: read_qk(path, progress=False), "part 1 of 3", "llama-gguf-split --merge")
    assert "Download it again" not in text


def test_a_gguf_whose_split_count_is_one_reads_as_a_whole_file(tmp_path):
    path, raw = _gguf(tmp_path / "m.gguf", metadata={"split.no": ("uint16", 0), "split.count": ("uint16", 1)})
    ckpt = read_qk(path, progress=False)
    q, k = raw[0]
    assert np.allclose(ckpt.layers[0].form().numpy(), sum(_head_form(q, k, h, h // 2, 4) for h in range(4)),
                       atol=1e-5)


# ============================================================ 4. ONNX: the causal mask of a decoder


def _onnx_attention(mask: str, d: int = 16, heads: int = 4, n: int = 8):
    """One attention layer; ``mask``: GPT-2's ``bias`` buffer sliced and used in a ``Where``, or a
    square position-bias table gathered and added (an encoder's), or none."""
    from onnx import TensorProto, helper, numpy_helper

    wq, wk = _w(d, d), _w(d, d)   # [in, out], as MatMul(x, W) reads them
    dh = d // heads
    inits = [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(wk, "wk"),
             numpy_helper.from_array(np.array([0, 0, heads, dh], np.int64), "split"),
             numpy_helper.from_array(np.array(np.sqrt(dh), np.float32), "sqrt_dh")]
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"]), helper.make_node("MatMul", ["x", "wk"], ["k"]),
             helper.make_node("Reshape", ["q", "split"], ["q4"]),
             helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["k", "split"], ["k4"]),
             helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["qt", "kt"], ["s"]), helper.make_node("Div", ["s", "sqrt_dh"], ["logits"])]
    if mask == "gpt2":
        inits += [numpy_helper.from_array(np.tril(np.ones((16, 16), bool))[None, None], "attn_bias"),
                  numpy_helper.from_array(np.array([0, 0], np.int64), "starts"),
                  numpy_helper.from_array(np.array([n, n], np.int64), "ends"),
                  numpy_helper.from_array(np.array([2, 3], np.int64), "axes"),
                  numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), "lowest")]
        nodes += [helper.make_node("Slice", ["attn_bias", "starts", "ends", "axes"], ["causal"]),
                  helper.make_node("Where", ["causal", "logits", "lowest"], ["masked"])]
    elif mask in ("arange", "bucket"):
        # arange: transformers' _make_causal_mask, arange(n) < (arange(n) + 1).view(n, 1) chooses 0 or the
        # lowest float; bucket: a relative position (key - query) compared with a constant, as T5's encoder
        # buckets its position bias: no mask
        inits += [numpy_helper.from_array(np.array(0, np.int64), "zero"),
                  numpy_helper.from_array(np.array(1, np.int64), "one"),
                  numpy_helper.from_array(np.array([-1, 1], np.int64), "column"),
                  numpy_helper.from_array(np.array(0.0, np.float32), "free"),
                  numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), "lowest"),
                  numpy_helper.from_array(np.array(1, np.int64), "axis1"),
                  numpy_helper.from_array(np.array(3, np.int64), "small")]
        nodes += [helper.make_node("Shape", ["x"], ["x_shape"]),
                  helper.make_node("Gather", ["x_shape", "axis1"], ["n_tokens"], axis=0),
                  helper.make_node("Range", ["zero", "n_tokens", "one"], ["pos"]),
                  helper.make_node("Add", ["pos", "one"], ["pos1"]),
                  helper.make_node("Reshape", ["pos1", "column"], ["pos1_col"])]
        if mask == "arange":
            nodes.append(helper.make_node("Less", ["pos", "pos1_col"], ["cond"]))
        else:
            nodes += [helper.make_node("Reshape", ["pos", "column"], ["pos_col"]),
                      helper.make_node("Sub", ["pos", "pos_col"], ["relative"]),
                      helper.make_node("Less", ["relative", "small"], ["cond"])]
        nodes += [helper.make_node("Where", ["cond", "free", "lowest"], ["additive"]),
                  helper.make_node("Add", ["logits", "additive"], ["masked"])]
    else:   # a learned bias per (query, key) position, gathered from a square table: no mask at all
        inits += [numpy_helper.from_array(_w(n, n), "position_table"),
                  numpy_helper.from_array(np.arange(n, dtype=np.int64), "positions")]
        nodes += [helper.make_node("Gather", ["position_table", "positions"], ["bias"]),
                  helper.make_node("Add", ["logits", "bias"], ["masked"])]
    nodes.append(helper.make_node("Softmax", ["masked"], ["p"], axis=-1))
    graph = helper.make_graph(nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n, d])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model, wq, wk


def test_an_onnx_decoder_masked_by_gpt2s_sliced_causal_buffer_is_read_as_causal(tmp_path):
    import onnx

    model, wq, wk = _onnx_attention("gpt2")
    onnx.save(model, str(tmp_path / "decoder_model.onnx"))
    (layer,) = read_qk(tmp_path / "decoder_model.onnx", progress=False).layers
    assert (layer.role, layer.component) == ("causal", "decoder")
    assert np.array_equal(layer.Wq.numpy(), wq.T) and np.array_equal(layer.Wk.numpy(), wk.T)


def test_an_onnx_decoder_masked_by_comparing_two_position_ranges_is_read_as_causal(tmp_path):
    import onnx
    import onnxruntime as ort

    model, _, _ = _onnx_attention("arange")
    onnx.save(model, str(tmp_path / "decoder_model.onnx"))
    (layer,) = read_qk(tmp_path / "decoder_model.onnx", progress=False).layers
    assert (layer.role, layer.component) == ("causal", "decoder")
    # onnxruntime: the graph indeed gives no weight to a later position
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (probs,) = session.run(None, {"x": _w(8, 16)[None]})
    assert np.all(np.triu(probs[0, 0], 1) == 0) and np.all(probs[0, 0][np.tril_indices(8)] > 0)


@pytest.mark.parametrize("mask", ["position table", "bucket"])
def test_an_onnx_encoder_with_a_position_bias_stays_an_encoder(tmp_path, mask):
    import onnx

    model, _, _ = _onnx_attention(mask)
    onnx.save(model, str(tmp_path / "encoder.onnx"))
    (layer,) = read_qk(tmp_path / "encoder.onnx", progress=False).layers
    assert (layer.role, layer.component) == ("encoder", "encoder")


@pytest.mark.parametrize("name, count", [("whisper-tiny.en", 37_760_256), ("whisper-base", 72_593_920)])
def test_a_ctranslate2_whisper_counts_no_key_bias_that_whisper_does_not_have(name, count):
    from adapters_data import zoo_checkpoint

    # WhisperForConditionalGeneration's num_parameters() for openai/whisper-tiny.en and -base; the converter
    # writes zeros for the key part of each fused [q | k | v] and [k | v] bias
    assert read_qk(zoo_checkpoint(name), progress=False).n_parameters == count


def test_the_int8_weights_of_an_onnx_graph_count_as_parameters_and_their_scales_do_not(tmp_path):
    import onnx
    from onnx import numpy_helper

    model, _, _ = _onnx_attention("position table")
    model.graph.initializer.extend([   # a quantized feed-forward weight beside the attention, and a buffer
        numpy_helper.from_array(RNG.integers(-127, 128, (16, 32)).astype(np.int8), "ffn.weight_quantized"),
        numpy_helper.from_array(np.full(32, 0.01, np.float32), "ffn.weight_scale"),
        numpy_helper.from_array(np.zeros(32, np.int8), "ffn.weight_zero_point"),
        numpy_helper.from_array(np.arange(8, dtype=np.int64)[None], "position_ids")])
    onnx.save(model, str(tmp_path / "model.onnx"))
    # wq, wk (16 x 16 each), the 8 x 8 position table, the 1/sqrt(d_head) scalar, the 16 x 32 int8 weight
    assert read_qk(tmp_path / "model.onnx", progress=False).n_parameters == 2 * 256 + 64 + 1 + 16 * 32


def test_an_int8_onnx_copy_of_minilm_counts_the_float_models_parameters_but_its_unused_pooler():
    from adapters_data import zoo_checkpoint

    float_count = read_qk(zoo_checkpoint("all-minilm-l6-v2"), progress=False).n_parameters
    int8_count = read_qk(zoo_checkpoint("all-minilm-l6-v2-int8"), progress=False).n_parameters
    pooler = 384 * 384 + 384   # the sentence-embedding graph drops BertModel's pooler
    assert abs(int8_count - (float_count - pooler)) <= 8   # (a few scalar constants of the graph)


def test_a_t5_exported_as_two_int8_onnx_graphs_counts_its_shared_embedding_once():
    from adapters_data import zoo_checkpoint

    # google/flan-t5-small, which t5-small-titler fine-tunes: 76,961,152 parameters (model card, num_parameters)
    assert read_qk(zoo_checkpoint("t5-small-titler"), progress=False).n_parameters == 76_961_152


# ============================================================ 5. what the models compute themselves

T = pytest.importorskip("transformers")


def _randomised(model):
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            if name.endswith("bias") or "relative_attention_bias" in name:
                p.zero_()   # biases and relative-position terms are beside the form, not in it
    return model.eval()


def _inputs_of(model, names):
    seen, modules = {}, dict(model.named_modules())
    handles = [modules[n].register_forward_pre_hook(lambda m, a, n=n: seen.__setitem__(n, a[0][0].detach().clone()))
               for n in names]
    return seen, handles


def _rows_centred(L):
    return L - L.mean(dim=-1, keepdim=True)


def _heads_match(layer, X, Y, probs, scale, causal=False) -> float:
    """Largest relative error between each head's ``X M_h Y^T`` (scaled) and the log attention the
    model computed, both centred per query over the keys it sees."""
    from companion.core.bilinear import per_head_bilinear_forms

    forms = per_head_bilinear_forms(layer.Wq.double(), layer.Wk.double(), layer.n_heads, layer.n_kv_heads)
    worst = 0.0
    for h in range(forms.shape[0]):
        mine, theirs = (X @ forms[h] @ Y.T) * scale, torch.log(probs[h].double())
        for i in range(mine.shape[0]):
            j = i + 1 if causal else mine.shape[1]
            a, b = _rows_centred(mine[i, :j]), _rows_centred(theirs[i, :j])
            if j > 1:
                worst = max(worst, float((a - b).norm() / b.norm()))
    return worst


def test_deberta_v1_in_proj_heads_give_the_attention_the_model_computes(tmp_path):
    cfg = T.DebertaConfig(hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=37,
                          vocab_size=100, relative_attention=False, pos_att_type=[])
    cfg._attn_implementation = "eager"
    model = _randomised(T.DebertaModel(cfg))
    model.save_pretrained(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    names = [f"encoder.layer.{i}.attention.self.in_proj" for i in range(2)]
    model = model.double()
    seen, handles = _inputs_of(model, names)
    with torch.no_grad():
        out = model(input_ids=torch.randint(3, 100, (1, 7)), output_attentions=True)
    for h in handles:
        h.remove()
    assert [(layer.role, layer.index) for layer in ckpt.layers] == [("encoder", 0), ("encoder", 1)]
    for layer in ckpt.layers:
        X = seen[names[layer.index]]
        assert _heads_match(layer, X, X, out.attentions[layer.index][0], 8 ** -0.5) < 1e-6


def test_t5_encoder_causal_decoder_and_cross_attention_give_the_attention_the_model_computes(tmp_path):
    cfg = T.T5Config(d_model=32, d_kv=8, d_ff=37, num_layers=2, num_decoder_layers=3, num_heads=4, vocab_size=100,
                     decoder_start_token_id=0)
    cfg._attn_implementation = "eager"
    model = _randomised(T.T5Model(cfg))
    model.save_pretrained(tmp_path)
    ckpt = read_qk(tmp_path, progress=False)
    where = {"encoder": "encoder.block.{}.layer.0.SelfAttention.q", "causal": "decoder.block.{}.layer.0.SelfAttention.q",
             "cross": "decoder.block.{}.layer.1.EncDecAttention.q"}
    names = [where[layer.role].format(layer.index) for layer in ckpt.layers]
    model = model.double()
    seen, handles = _inputs_of(model, names)
    with torch.no_grad():
        out = model(input_ids=torch.randint(3, 100, (1, 6)), decoder_input_ids=torch.randint(3, 100, (1, 5)),
                    output_attentions=True)
    for h in handles:
        h.remove()
    assert sorted((layer.role, layer.index) for layer in ckpt.layers) == sorted(
        [("encoder", i) for i in range(2)] + [(r, i) for r in ("causal", "cross") for i in range(3)])
    memory = out.encoder_last_hidden_state[0]
    for layer, name in zip(ckpt.layers, names):
        probs = {"encoder": out.encoder_attentions, "causal": out.decoder_attentions,
                 "cross": out.cross_attentions}[layer.role][layer.index][0]
        X = seen[name]
        Y = memory if layer.role == "cross" else X
        assert _heads_match(layer, X, Y, probs, 1.0, causal=layer.role == "causal") < 1e-9, (layer.role, layer.index)


SPECIAL = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
SEQ2SEQ = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
               encoder_ffn_dim=37, decoder_ffn_dim=37, vocab_size=100, max_position_embeddings=16)
COUNTED = {
    "bart": lambda: T.BartForConditionalGeneration(T.BartConfig(**SEQ2SEQ)),
    "mbart": lambda: T.MBartForConditionalGeneration(T.MBartConfig(**SEQ2SEQ)),
    "pegasus": lambda: T.PegasusForConditionalGeneration(T.PegasusConfig(**SEQ2SEQ, pad_token_id=0)),
    "t5": lambda: T.T5ForConditionalGeneration(T.T5Config(d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                                                          vocab_size=100, decoder_start_token_id=0)),
    "gpt2": lambda: T.GPT2LMHeadModel(T.GPT2Config(n_embd=32, n_head=4, n_layer=2, vocab_size=100, **SPECIAL)),
    "llama-tied": lambda: T.LlamaForCausalLM(T.LlamaConfig(hidden_size=32, num_attention_heads=4,
                                                           num_key_value_heads=2, num_hidden_layers=2,
                                                           intermediate_size=37, vocab_size=100,
                                                           tie_word_embeddings=True)),
}


@pytest.mark.parametrize("name", sorted(COUNTED))
def test_the_parameter_count_of_a_saved_checkpoint_is_what_the_model_counts(tmp_path, name):
    # BART, mBART and Pegasus save their final_logits_bias buffer beside the weights
    model = COUNTED[name]()
    model.save_pretrained(tmp_path)
    assert read_qk(tmp_path, progress=False).n_parameters == model.num_parameters()


# ============================================================ 6. the key-bias study's variances, by loops


def test_logit_variances_of_a_grouped_causal_layer_equal_loops_over_queries_and_keys():
    from companion.survey.bias_term import logit_variances

    H, KV, dh, d, n = 4, 2, 3, 8, 6
    Wq, Wk, X = _w(H * dh, d).astype(np.float64), _w(KV * dh, d).astype(np.float64), _w(n, d).astype(np.float64)
    bq, bk = _w(1, H * dh)[0].astype(np.float64), _w(1, KV * dh)[0].astype(np.float64)
    content, bias = logit_variances(Wq, Wk, bq, bk, H, X, n_kv_heads=KV, causal=True)
    for h in range(H):
        g = h // (H // KV)
        qh, kh = slice(h * dh, (h + 1) * dh), slice(g * dh, (g + 1) * dh)
        var_c, var_b = [], []
        for i in range(1, n):   # the first query sees one key: no variance
            c = [float(X[i] @ Wq[qh].T @ Wk[kh] @ X[j]) for j in range(i + 1)]
            full = [float((Wq[qh] @ X[i] + bq[qh]) @ (Wk[kh] @ X[j] + bk[kh])) for j in range(i + 1)]
            var_c.append(np.var(c))
            var_b.append(np.var(np.subtract(full, c)))
        assert content[h] == pytest.approx(np.mean(var_c), rel=1e-9)
        assert bias[h] == pytest.approx(np.mean(var_b), rel=1e-9)
