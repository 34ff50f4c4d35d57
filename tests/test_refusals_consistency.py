"""Consistency before arithmetic: a configuration that does not agree with the tensors it
describes is refused with one line, never scored.  Each case below printed a score before
the shared checks (``families.positive_int``, ``LayerPlan``'s head counts, the fused-tensor
shapes, ``reader.model_width``, ``completeness.check_layer_count``); the valid variants are
read and shown equal to a reference.  A count or ``model_type`` that is not a number or a
name is refused too, in a short message and without building what it announces."""

from __future__ import annotations

import tracemalloc

import pytest
import torch

import malformed as bad
from one_line import one_line_error
from companion.adapters import read_qk
from companion.adapters.families import LayerPlan
from companion.base.errors import CompanionError

T = pytest.importorskip("transformers")


def _one_line_error(argv, capsys, *words):
    return one_line_error(argv, capsys, *words)


def _tiny(folder, config, model_cls):
    torch.manual_seed(0)
    model = model_cls(config)
    model.save_pretrained(folder)
    return model


# ----------------------------------------------------------------------------- fused tensors


def test_gpt2_with_a_width_that_disagrees_with_c_attn_is_refused(tmp_path, capsys):
    _tiny(tmp_path, T.GPT2Config(n_embd=32, n_head=4, n_layer=2, vocab_size=50), T.GPT2Model)
    assert len(read_qk(tmp_path, progress=False).layers) == 2          # as saved: read
    bad.edit_config(tmp_path, n_embd=16)                              # 16 divides the 96 columns
    _one_line_error(["score", str(tmp_path)], capsys, "c_attn", "wrong columns")


def test_gpt_neox_with_a_width_that_disagrees_with_query_key_value_is_refused(tmp_path, capsys):
    cfg = T.GPTNeoXConfig(hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=64,
                          vocab_size=50)
    _tiny(tmp_path, cfg, T.GPTNeoXModel)
    bad.edit_config(tmp_path, hidden_size=16, num_attention_heads=2)  # reshape(2, 3, -1, d) would succeed
    _one_line_error(["score", str(tmp_path)], capsys, "fused", "rows")


def test_gpt_neox_with_a_wrong_head_count_is_refused_not_mis_split(tmp_path, capsys):
    cfg = T.GPTNeoXConfig(hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=64,
                          vocab_size=50)
    _tiny(tmp_path, cfg, T.GPTNeoXModel)
    bad.edit_config(tmp_path, num_attention_heads=5)                  # 32 does not split into 5 heads
    _one_line_error(["score", str(tmp_path)], capsys, "5 heads")


# ----------------------------------------------------------------------------- head counts


@pytest.mark.parametrize("value, words", [(2.7, ["2.7", "whole number"]), (True, ["True"]), (0, ["at least 1"]),
                                          (-8, ["at least 1"]), ([8], ["[8]"]), ("8", ["'8'"])])
def test_a_head_count_that_is_not_a_positive_whole_number_is_refused(tmp_path, capsys, value, words):
    bad.tiny_llama(tmp_path)
    bad.edit_config(tmp_path, num_attention_heads=value)
    _one_line_error(["score", str(tmp_path)], capsys, "num_attention_heads", *words)


def test_kv_heads_that_do_not_divide_the_heads_are_refused(tmp_path, capsys):
    bad.tiny_llama(tmp_path, heads=8, kv=2)
    bad.edit_config(tmp_path, num_key_value_heads=3)
    _one_line_error(["score", str(tmp_path)], capsys, "8 query heads", "3 key/value heads")


def test_a_head_count_written_as_a_whole_float_is_read_as_that_number(tmp_path):
    model = bad.tiny_llama(tmp_path, heads=8, kv=2)
    ref = read_qk(tmp_path, progress=False)
    bad.edit_config(tmp_path, num_attention_heads=8.0, num_key_value_heads=2.0)
    got = read_qk(tmp_path, progress=False)
    assert [(l.n_heads, l.n_kv_heads) for l in got.layers] == [(8, 2)] * 3
    q, k = bad.qk_of(model, 1)                                        # the model's own weights
    assert torch.equal(got.layers[1].Wq, q) and torch.equal(got.layers[1].Wk, k)
    assert torch.equal(got.layers[1].Wq, ref.layers[1].Wq)


def test_a_users_own_family_gets_the_same_head_checks():
    with pytest.raises(CompanionError, match="not a whole number"):
        LayerPlan(0, "encoder", "encoder", ("q", "k"), n_heads=2.5, n_kv_heads=1)


# ----------------------------------------------------------------------------- widths and layers


def test_a_width_that_disagrees_with_separate_q_k_tensors_is_refused(tmp_path, capsys):
    bad.tiny_llama(tmp_path, hidden=64, heads=8, kv=2)
    bad.edit_config(tmp_path, hidden_size=128)
    _one_line_error(["score", str(tmp_path)], capsys, "width 64", "width is 128")


@pytest.mark.parametrize("value", ["3", 2.5, True])
def test_a_layer_count_that_is_not_a_whole_number_is_refused(tmp_path, capsys, value):
    bad.tiny_llama(tmp_path)
    bad.edit_config(tmp_path, num_hidden_layers=value)
    _one_line_error(["score", str(tmp_path)], capsys, "num_hidden_layers")


def test_without_a_layer_count_a_gap_in_the_layers_is_still_refused(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=3)
    bad.drop_a_layer(tmp_path, layer=1)
    bad.edit_config(tmp_path, num_hidden_layers=None)
    _one_line_error(["score", str(tmp_path)], capsys, "[1]", "highest layer index")


def test_a_gguf_without_block_count_is_refused(tmp_path):
    path = bad.tiny_gguf(tmp_path / "m.gguf", layers=2, block_count=False)
    with pytest.raises(CompanionError, match="no llama.block_count"):
        read_qk(path, progress=False)


def test_a_gguf_head_count_stored_as_a_fraction_is_refused(tmp_path):
    path = bad.tiny_gguf(tmp_path / "m.gguf", layers=2, head_count_as_float=2.7)
    with pytest.raises(CompanionError, match="head_count is 2.7"):
        read_qk(path, progress=False)


# ---------------------------------------------------------------- counts that are not names or numbers


def test_a_billion_announced_layers_are_counted_without_a_billion_element_set():
    from companion.adapters.completeness import check_layer_count
    from companion.adapters.families import LayerPlan

    plans = [LayerPlan(i, "causal", "decoder", ("q", "k"), 2, 2) for i in range(3)]
    tracemalloc.start()
    try:
        with pytest.raises(CompanionError, match=r"announces 1000000 decoder layers.*layers \[3, 4, 5"):
            check_layer_count({"num_hidden_layers": 1_000_000}, "llama", plans, "m")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000


def test_a_count_built_from_nested_aliases_is_not_expanded_in_the_message():
    from companion.adapters.families import positive_int

    v = [1] * 10
    for _ in range(6):          # 10^7 leaves, as YAML aliases nested in aliases build them
        v = [v] * 10
    with pytest.raises(CompanionError) as exc:
        positive_int(v, "num_attention_heads")
    assert len(str(exc.value)) < 400


@pytest.mark.parametrize("model_type", [["llama"], {"llama": 1}])
def test_a_model_type_that_is_not_a_name_is_one_line(tmp_path, capsys, model_type):
    bad.tiny_llama(tmp_path, layers=1)
    bad.edit_config(tmp_path, model_type=model_type)
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, "model_type", "not a name")
