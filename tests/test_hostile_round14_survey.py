"""The survey of pretrained models under hostile and edge-case input, beyond the statistics and
scoring cases of tests/test_hostile_round13_survey_core.py.

(a) The quantisation study: a score difference attributed to the layer that changed, a copy
quantised to all zeros (block scales that underflow float16), block sizes that do not divide
the width, weights beyond float32, the block bytes read by hand.  (b) The key-bias term against
a computation by hand on tiny models (the biases add a rank-one term per key, and a constant per
query the softmax ignores), and the table's walk over models.  (c) The design: one checkpoint
counted twice (a copy of a copy, two copies of one absent model, two names for one file, a stack
listed twice), mislabelled stacks, a family of one, the Monte Carlo seed, the published share
of 0 or 1.  (d) Summaries: medians of an even count, one and two layers, NaN, ties, a catalog or
a key that holds two rows.  (e) The null draws' widths, the sources of weights (paths outside a
package, NaN cells, markup and javascript: ids) and the zoo walk (an empty list of names).  (f) Further
readers of the survey's tables: columns missing, a repeated index label, one name given as text,
stale scores of the original, more Monte Carlo draws than memory holds, the commands' refusals.

Each case states the right behaviour: a value computed apart from the code under test, or a
one-line refusal naming the input.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats  # noqa: F401  (loaded at collection, not inside the first exact-test case)
import torch

from companion.adapters.types import QKCheckpoint, QKLayer
from companion.core.scores import structure_scores
from one_line import one_line as _one_line
from one_line import refused as _refused



# ============================================================ (a) quantisation

def _ckpt(n_layers=2, d=32, seed=0, scale=1.0, indices=None, name="m"):
    g = np.random.default_rng(seed)
    layers = [QKLayer(index=i, role="encoder", component="encoder", n_heads=2, n_kv_heads=2,
                      Wq=torch.tensor(g.standard_normal((4, d)) * scale, dtype=torch.float32),
                      Wk=torch.tensor(g.standard_normal((4, d)) * scale, dtype=torch.float32))
              for i in (indices if indices is not None else range(n_layers))]
    return QKCheckpoint(source=name, family="test", layers=layers, meta={"name": name})


def _form_scores(layer):
    """Scores of M = Wq^T Wk of a layer of 2 heads of one key head each (sum over heads = the full product)."""
    return structure_scores(layer.Wq.double().T @ layer.Wk.double())


def test_a_score_change_is_attributed_to_the_one_layer_that_changed():
    from companion.survey.quantisation import compare_layers

    a = _ckpt(3)
    changed = [a.layers[0], dataclasses.replace(a.layers[1], Wq=a.layers[1].Wq * torch.linspace(0.5, 1.5, 32)),
               a.layers[2]]
    b = dataclasses.replace(a, layers=changed)
    t = compare_layers(a, b, "m", "hand")
    assert list(t["d_symmetry"].iloc[[0, 2]]) == [0.0, 0.0] and list(t["wq_error"].iloc[[0, 2]]) == [0.0, 0.0]
    want = float(_form_scores(changed[1])["symmetry"]) - float(_form_scores(a.layers[1])["symmetry"])
    assert t["d_symmetry"].iloc[1] == pytest.approx(want, abs=1e-9) and want != 0
    want_err = float(np.linalg.norm(changed[1].Wq.numpy() - a.layers[1].Wq.numpy()) / np.linalg.norm(a.layers[1].Wq))
    assert t["wq_error"].iloc[1] == pytest.approx(want_err, rel=1e-6)


def test_two_layers_numbered_alike_each_keep_their_own_weight_change():
    """A dictionary by (component, index) gave both rows the last layer's relative change."""
    from companion.survey.quantisation import compare_layers, quantised_copy

    a = _ckpt(indices=[0, 0], seed=1)
    b = quantised_copy(a, "Q8_0")
    t = compare_layers(a, b, "m", "Q8_0")
    want = [float(np.linalg.norm(y.Wq.numpy() - x.Wq.numpy()) / np.linalg.norm(x.Wq.numpy()))
            for x, y in zip(a.layers, b.layers)]
    assert want[0] != want[1]
    np.testing.assert_allclose(t["wq_error"], want, rtol=1e-6)


def test_copies_with_their_layers_in_another_order_are_refused_naming_the_position():
    from companion.survey.quantisation import compare_layers

    a = _ckpt(2)
    b = dataclasses.replace(a, layers=a.layers[::-1])
    text = _refused(lambda: compare_layers(a, b, "m", "x"), "position 0", "order")
    assert "(2 and 2)" not in text


def test_a_copy_with_another_layer_count_is_refused():
    from companion.survey.quantisation import compare_layers

    a = _ckpt(3)
    _refused(lambda: compare_layers(a, dataclasses.replace(a, layers=a.layers[:2]), "m", "x"), "3 and 2")


@pytest.mark.parametrize("scheme", ["Q8_0", "Q5_0", "Q4_0", "Q4_1", "Q4_K"])
def test_weights_that_quantise_to_all_zeros_are_refused_naming_the_underflow(scheme):
    """A block scale below float16's smallest subnormal is stored as 0: the copy read back all zeros
    (or Q4_1's minimum everywhere), and every score of it was NaN with no word why."""
    from companion.survey.quantisation import round_trip

    W = np.random.default_rng(2).standard_normal((2, 256)).astype(np.float32) * 1e-9
    _refused(lambda: round_trip(W, scheme), scheme, "underflow", "scale the weights up")


@pytest.mark.parametrize("scheme", ["Q8_0", "Q5_0", "Q4_0", "Q4_1", "Q4_K", "int8/channel"])
def test_an_all_zero_weight_reads_back_as_zeros_in_every_scheme(scheme):
    from companion.survey.quantisation import round_trip

    values, _ = round_trip(np.zeros((3, 256)), scheme)
    assert values.shape == (3, 256) and not values.any()


def test_a_block_that_reads_back_constant_by_rounding_is_not_taken_for_an_underflow():
    """Q4_0 puts the largest weight at code -8; 1.0 beside 1.01 rounds to the same code: a real
    rounding of the format, not a lost scale."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize, quantize

    from companion.survey.quantisation import round_trip

    W = np.full((1, 32), 1.0, np.float32)
    W[0, 0] = 1.01
    values, stored = round_trip(W, "Q4_0")
    theirs = dequantize(quantize(W, GGMLQuantizationType.Q4_0), GGMLQuantizationType.Q4_0).reshape(W.shape)
    np.testing.assert_array_equal(values, theirs)
    assert stored == "Q4_0" and np.ptp(values) == 0 and values[0, 0] != 0


@pytest.mark.parametrize("scheme,c", [("Q4_K", -0.3), ("Q4_K", 0.3), ("Q4_1", 0.3), ("Q4_1", -2.5)])
def test_a_constant_row_reads_back_as_its_constant(scheme, c):
    from companion.survey.quantisation import round_trip

    values, _ = round_trip(np.full((2, 256), c), scheme)
    np.testing.assert_allclose(values, c, rtol=2e-3)


@pytest.mark.parametrize("width,stored", [(288, "Q5_0"), (512, "Q4_K"), (32, "Q5_0")])
def test_q4_k_rows_whose_length_is_not_a_multiple_of_256_are_stored_as_q5_0(width, stored):
    from companion.survey.quantisation import round_trip

    W = np.random.default_rng(3).standard_normal((2, width)).astype(np.float32)
    values, got = round_trip(W, "Q4_K")
    assert got == stored
    if stored == "Q5_0":
        np.testing.assert_array_equal(values, round_trip(W, "Q5_0")[0])


@pytest.mark.parametrize("scheme", ["Q8_0", "Q5_0", "Q4_0", "Q4_1", "Q4_K"])
def test_a_width_the_block_does_not_divide_is_refused_naming_it(scheme):
    from companion.survey.quantisation import round_trip

    _refused(lambda: round_trip(np.ones((2, 48), np.float32), scheme), "48", "32")


def test_int8_per_channel_takes_any_width():
    from companion.survey.quantisation import round_trip

    W = np.random.default_rng(4).standard_normal((3, 48))
    values, stored = round_trip(W, "int8/channel")
    step = np.abs(W).max(axis=1, keepdims=True) / 127
    assert stored == "int8/channel" and (np.abs(values - W) <= step / 2 + 1e-7).all()


def test_a_transposed_or_integer_weight_quantises_as_its_contiguous_float_copy():
    from companion.survey.quantisation import round_trip

    g = np.random.default_rng(5)
    W = np.asfortranarray(g.standard_normal((64, 32))).T          # a non-contiguous view, float64
    np.testing.assert_array_equal(round_trip(W, "Q8_0")[0], round_trip(np.ascontiguousarray(W, np.float32), "Q8_0")[0])
    Wi = g.integers(-5, 6, size=(2, 32))
    np.testing.assert_array_equal(round_trip(Wi, "Q8_0")[0], round_trip(Wi.astype(np.float32), "Q8_0")[0])


def test_a_finite_weight_beyond_float32_is_refused_naming_the_range_not_nan():
    from companion.survey.quantisation import round_trip

    text = _refused(lambda: round_trip(np.full((1, 32), 1e39), "int8/channel"), "float32")
    assert "NaN" not in text


@pytest.mark.parametrize("W", [None, "weights", [[1, "a"]]])
def test_a_weight_that_is_no_matrix_of_numbers_is_refused(W):
    from companion.survey.quantisation import round_trip

    _refused(lambda: round_trip(W, "Q8_0"), "matrix")


def test_q8_0_bytes_written_by_hand_decode_to_their_values():
    from companion.survey.quantisation import decode_blocks

    codes = np.arange(-16, 16, dtype=np.int8)
    block = np.concatenate([np.array([0.25], np.float16).view(np.uint8), codes.view(np.uint8)])
    np.testing.assert_array_equal(decode_blocks(block[None], "Q8_0", 32), (0.25 * codes.astype(np.float32))[None])


def test_q4_0_bytes_written_by_hand_decode_to_their_values():
    from companion.survey.quantisation import decode_blocks

    q = np.arange(32) % 16                                    # the codes 0..15 twice
    packed = (q[:16] | (q[16:] << 4)).astype(np.uint8)        # value j in the low nibble, j + 16 in the high
    block = np.concatenate([np.array([0.5], np.float16).view(np.uint8), packed])
    np.testing.assert_array_equal(decode_blocks(block[None], "Q4_0", 32), (0.5 * (q - 8)).astype(np.float32)[None])


@pytest.mark.parametrize("scheme,nbytes,n_in", [("int8/channel", 34, 32), ("Q8_0", 33, 32), ("Q8_0", 34, 31),
                                                ("Q8_0", 68, 96), ("Q8_0", 34, True)])
def test_block_bytes_that_do_not_make_whole_rows_are_refused(scheme, nbytes, n_in):
    from companion.survey.quantisation import decode_blocks

    _refused(lambda: decode_blocks(np.zeros((1, nbytes), np.uint8), scheme, n_in), scheme)


def test_quantised_copy_leaves_cross_attention_alone_and_records_the_stored_type():
    from companion.survey.quantisation import quantised_copy

    a = _ckpt(1, d=384)
    cross = QKLayer(index=0, role="cross", component="decoder", n_heads=2, n_kv_heads=2,
                    Wq=torch.ones(4, 384), Wk=torch.ones(4, 384))
    a = dataclasses.replace(a, layers=[*a.layers, cross])
    b = quantised_copy(a, "Q4_K")
    assert b.layers[1] is cross and b.meta["stored_as"] == {("encoder", 0): "Q5_0"}
    assert not torch.equal(b.layers[0].Wq, a.layers[0].Wq)


def test_scheme_changes_reads_one_scheme_given_as_text_as_that_scheme():
    """'Q8_0' was walked letter by letter and refused as an unknown scheme 'Q'."""
    from companion.survey.quantisation import scheme_changes

    t = scheme_changes({"m": _ckpt(1)}, schemes="Q8_0")
    assert set(t["scheme"]) == {"Q8_0"} and len(t) == 1


@pytest.mark.parametrize("schemes,word", [((), "no quantisation scheme"), (("Q8_0", "Q3_X"), "Q3_X")])
def test_scheme_changes_refuses_no_scheme_or_an_unknown_one_first(schemes, word):
    from companion.survey.quantisation import scheme_changes

    _refused(lambda: scheme_changes({"m": _ckpt(1)}, schemes=schemes), word)


def _per_layer(values, scheme="Q8_0"):
    n = len(values)
    return pd.DataFrame({"model": "m", "component": "encoder", "scheme": scheme, "role": "encoder",
                         "stored_as": scheme, "layer": range(n), "wq_error": 0.01, "wk_error": 0.02,
                         "symmetry": values, "symmetry_quantised": [v + 0.01 * i for i, v in enumerate(values)],
                         "d_symmetry": [0.01 * i for i in range(n)], "directionality": values,
                         "directionality_quantised": values, "d_directionality": 0.0})


@pytest.mark.parametrize("values", [[0.1, 0.4, 0.2], [0.1, 0.4, 0.2, 0.3]])
def test_median_changes_of_an_odd_and_an_even_count_by_hand(values):
    from companion.survey.quantisation import median_changes

    r = median_changes(_per_layer(values)).iloc[0]
    q = [v + 0.01 * i for i, v in enumerate(values)]
    assert r["symmetry_median"] == pytest.approx(statistics.median(values))
    assert r["d_symmetry_median"] == pytest.approx(statistics.median(q) - statistics.median(values))
    assert r["max_abs_d_symmetry_layer"] == pytest.approx(0.01 * (len(values) - 1)) and r["n_layers"] == len(values)


def test_median_changes_of_no_rows_is_refused_not_an_empty_table():
    from companion.survey.quantisation import median_changes

    _refused(lambda: median_changes(_per_layer([0.1]).iloc[:0]), "no rows")


@pytest.mark.parametrize("medians,gaps,word", [
    (pd.DataFrame({"scheme": ["a"], "model": ["m"], "component": ["e"], "d_symmetry_median": [0.1]}),
     {"symmetry": None}, "None"),                         # a raw TypeError from float(None)
    (pd.DataFrame({"scheme": ["a"]}), {"symmetry": 0.1}, "d_symmetry_median"),   # a raw KeyError
    (pd.DataFrame(), {"symmetry": 0.1}, "scheme"),
])
def test_against_gap_refuses_what_it_cannot_read(medians, gaps, word):
    from companion.survey.quantisation import against_gap

    _refused(lambda: against_gap(medians, gaps), word)


def test_published_gaps_leave_out_a_row_without_a_number_and_refuse_an_empty_role():
    from companion.survey.quantisation import published_gaps

    pub = pd.DataFrame({"score": ["symmetry"] * 4 + ["directionality"] * 2,
                        "role": ["encoder", "encoder", "decoder", "decoder", "encoder", "decoder"],
                        "median": [0.5, np.nan, 0.1, 0.3, 0.0, -0.2]})
    g = published_gaps(pub)
    assert g["symmetry"] == pytest.approx(0.5 - 0.2) and g["directionality"] == pytest.approx(0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # nanmedian of nothing warned and gave a NaN gap
        _refused(lambda: published_gaps(pub[pub["role"] == "decoder"]), "0 encoder")


@pytest.mark.parametrize("change,gap,verdict", [(0.05, 0.1, "could explain part of it"),
                                                (0.1, -0.1, "could explain it:"),
                                                (0.0499999, 0.1, "could not explain it")])
def test_the_sentence_at_its_thresholds(change, gap, verdict):
    from companion.survey.quantisation import directionality_sentence

    text = directionality_sentence(change, gap)
    assert verdict in text
    if change / abs(gap) < 0.5:
        assert "50%" not in text


def test_stored_bits_by_hand():
    from companion.survey.quantisation import stored_bits

    a = _ckpt(2)   # 2 layers x (4 x 32) x 2 = 512 weights
    assert stored_bits(dataclasses.replace(a, meta={"qk_bytes": 288})) == pytest.approx(8 * 288 / 512)
    assert math.isnan(stored_bits(a))


# ============================================================ (b) the key-bias term

def test_bias_term_variances_of_one_head_by_hand():
    from companion.survey.bias_term import bias_term_variances

    Wq = np.array([[1.0, 0.0], [0.0, 2.0]])
    Wk = np.array([[0.0, 1.0], [1.0, 1.0]])
    bq = np.array([3.0, -1.0])
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    content, bias = bias_term_variances(Wq, Wk, bq, 1, X)
    q, k = X @ Wq.T, X @ Wk.T
    a = q @ k.T
    c = k @ bq                                               # b_q . (W_k y_j)
    assert content[0] == pytest.approx(np.mean([np.var(a[i]) for i in range(3)]))
    assert bias[0] == pytest.approx(np.var(c))
    assert c.tolist() == [-1.0, 2.0, 1.0]                    # worked out: k_j = (y2, y1 + y2)


def test_without_rotation_the_key_bias_adds_nothing_over_keys():
    """b_k enters each logit as x_i^T W_q^T b_k + b_q^T b_k: constant over keys, so the moments are
    those of the key-bias term b_q^T W_k y_j alone."""
    from companion.survey.bias_term import logit_moments

    g = np.random.default_rng(6)
    Wq, Wk, bq, bk, X = (g.standard_normal((4, 3)), g.standard_normal((4, 3)), g.standard_normal(4),
                         g.standard_normal(4), g.standard_normal((6, 3)))
    with_bk, without = logit_moments(Wq, Wk, bq, bk, 2, X), logit_moments(Wq, Wk, bq, None, 2, X)
    for k in ("content", "bias", "cov", "logits"):
        np.testing.assert_allclose(with_bk[k], without[k], rtol=1e-10)
    c = np.stack([(X @ Wk[2 * h:2 * h + 2].T) @ bq[2 * h:2 * h + 2] for h in range(2)])
    np.testing.assert_allclose(without["bias"], c.var(axis=1), rtol=1e-10)


def test_the_softmax_of_the_biased_logits_is_that_of_the_content_plus_the_key_bias_term():
    from companion.survey.bias_term import logit_parts

    g = np.random.default_rng(7)
    Wq, Wk, bq, bk, X = (g.standard_normal((2, 3)), g.standard_normal((2, 3)), g.standard_normal(2),
                         g.standard_normal(2), g.standard_normal((5, 3)))
    C, B, _ = logit_parts(Wq, Wk, bq, bk, 1, X)
    full = (X @ Wq.T + bq) @ (X @ Wk.T + bk).T
    kb = (X @ Wk.T) @ bq
    np.testing.assert_allclose((C + B)[0].numpy(), full, rtol=1e-10)
    np.testing.assert_allclose(torch.softmax(C + B, -1)[0].numpy(),
                               torch.softmax(C[0] + torch.from_numpy(kb)[None], -1).numpy(), rtol=1e-10)


def test_an_identity_rotation_changes_nothing():
    from companion.survey.bias_term import logit_moments

    g = np.random.default_rng(8)
    Wq, Wk, bq, bk, X = (g.standard_normal((4, 3)), g.standard_normal((4, 3)), g.standard_normal(4),
                         g.standard_normal(4), g.standard_normal((5, 3)))
    rope = (np.ones((5, 2)), np.zeros((5, 2)))
    a, b = logit_moments(Wq, Wk, bq, bk, 2, X, rope=rope), logit_moments(Wq, Wk, bq, bk, 2, X)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-10, atol=1e-12)


def test_the_positional_prior_of_a_two_dimensional_rotation_by_hand():
    """d_h = 2 rotates (q1, q2) by angle theta * position; the biases alone give
    P_ij = b_q^T R((j - i) theta) b_k."""
    from companion.survey.bias_term import logit_moments

    n, theta = 4, 0.7
    pos = np.arange(n) * theta
    rope = (np.stack([np.cos(pos)] * 2, 1), np.stack([np.sin(pos)] * 2, 1))
    bq, bk = np.array([1.0, 2.0]), np.array([-0.5, 1.5])
    X = np.random.default_rng(9).standard_normal((n, 2))
    m = logit_moments(np.eye(2), np.eye(2), bq, bk, 1, X, rope=rope)

    def rot(v, a):
        return np.array([v[0] * np.cos(a) - v[1] * np.sin(a), v[1] * np.cos(a) + v[0] * np.sin(a)])

    P = np.array([[rot(bq, pos[i]) @ rot(bk, pos[j]) for j in range(n)] for i in range(n)])
    assert m["positional"][0] == pytest.approx(np.mean([np.var(P[i]) for i in range(n)]))
    assert m["positional"][0] > 0


def test_a_missing_query_bias_is_no_bias_not_a_raw_type_error():
    from companion.survey.bias_term import bias_term_variances, logit_moments

    g = np.random.default_rng(10)
    Wq, Wk, X = g.standard_normal((4, 3)), g.standard_normal((4, 3)), g.standard_normal((5, 3))
    m = logit_moments(Wq, Wk, None, None, 2, X)
    assert not m["bias"].any()
    np.testing.assert_allclose(m["content"], logit_moments(Wq, Wk, np.zeros(4), np.zeros(4), 2, X)["content"])
    assert not bias_term_variances(Wq, Wk, None, 2, X)[1].any()


@pytest.mark.parametrize("field,value", [("bq", ["a"] * 4), ("bq", np.ones(4) * (1 + 2j)), ("X", "tokens"),
                                         ("Wq", [[1, 2, 3], [4, 5]])])
def test_bias_term_inputs_that_are_not_real_numbers_are_refused(field, value):
    """A complex bias lost its imaginary part with a warning only; text raised a raw TypeError."""
    from companion.survey.bias_term import logit_moments

    g = np.random.default_rng(11)
    args = dict(Wq=g.standard_normal((4, 3)), Wk=g.standard_normal((4, 3)), bq=g.standard_normal(4), bk=None,
                n_heads=2, X=g.standard_normal((5, 3)))
    args[field] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _refused(lambda: logit_moments(**args), "bias term")


def _fake_inputs(monkeypatch, make):
    from companion.survey import bias_term as bt

    calls = []
    monkeypatch.setattr(bt, "layer_inputs", lambda name, max_tokens=128: calls.append(name) or make(name))
    return calls


def test_the_bias_term_table_of_no_models_measures_none(monkeypatch):
    """'names or MEASURED' measured every model of the zoo when asked for none."""
    from companion.survey.bias_term import COLUMNS, bias_term_table

    calls = _fake_inputs(monkeypatch, lambda name: [])
    t = bias_term_table([])
    assert calls == [] and list(t.columns) == COLUMNS and t.empty


def test_a_model_named_twice_in_the_bias_term_table_is_refused(monkeypatch):
    from companion.survey.bias_term import bias_term_table

    calls = _fake_inputs(monkeypatch, lambda name: [])
    _refused(lambda: bias_term_table(["a", "b", "a"]), "a", "more than once")
    assert calls == []


@pytest.mark.parametrize("what", ["no sequence", "no rotary table"])
def test_a_layer_captured_without_inputs_is_refused_in_one_line(monkeypatch, what):
    from companion.survey.bias_term import LayerInputs, bias_term_table

    g = np.random.default_rng(12)
    li = LayerInputs(3, torch.tensor(g.standard_normal((4, 3))), torch.tensor(g.standard_normal((4, 3))),
                     torch.zeros(4), 2, [] if what == "no sequence" else [torch.tensor(g.standard_normal((5, 3)))],
                     ropes=None if what == "no sequence" else [])
    _fake_inputs(monkeypatch, lambda name: [li])
    _refused(lambda: bias_term_table(["a"]), "layer 3")


def test_the_bias_term_tables_layer_row_sums_the_heads_moments_by_hand(monkeypatch):
    from companion.survey.bias_term import LayerInputs, bias_term_table

    g = np.random.default_rng(13)
    Wq, Wk, bq = g.standard_normal((4, 3)), g.standard_normal((4, 3)), g.standard_normal(4)
    seqs = [g.standard_normal((5, 3)), g.standard_normal((7, 3))]
    _fake_inputs(monkeypatch, lambda name: [LayerInputs(0, torch.tensor(Wq), torch.tensor(Wk), torch.tensor(bq), 2,
                                                        [torch.tensor(s) for s in seqs])])
    t = bias_term_table(["a"]).set_index("head")
    content, bias = [], []
    for h in range(2):
        rows = slice(2 * h, 2 * h + 2)
        per_seq_c, per_seq_b = [], []
        for X in seqs:
            a = (X @ Wq[rows].T) @ (X @ Wk[rows].T).T
            per_seq_c.append(np.mean(a.var(axis=1)))
            per_seq_b.append(np.var((X @ Wk[rows].T) @ bq[rows]))
        content.append(np.mean(per_seq_c))
        bias.append(np.mean(per_seq_b))
    np.testing.assert_allclose(t.loc[[0, 1], "content_var"], content, rtol=1e-10)
    np.testing.assert_allclose(t.loc[[0, 1], "bias_var"], bias, rtol=1e-10)
    assert t.at[-1, "content_var"] == pytest.approx(sum(content))
    assert t.at[-1, "bias_var_ratio"] == pytest.approx(sum(bias) / (sum(content) + sum(bias)))
    assert t.at[-1, "explained"] == pytest.approx(1 - sum(content) / t.at[-1, "logit_var"])


# ============================================================ (c) the design

def _row(name, kind, family, objective=None, tokens="text", copy_of="", component=None):
    objective = objective or ("contrastive" if kind == "encoder" else "next-token")
    return dict(name=name, component=component or kind, member=f"{name}:{component}" if component else name,
                kind=kind, family=family, objective=objective, tokens=tokens, copy_of=copy_of)


def _members(rows, every=False):
    from companion.survey.design import EVERY_CHECKPOINT, REGISTERED, unit_members, units

    return unit_members(units(pd.DataFrame(rows), EVERY_CHECKPOINT if every else REGISTERED))


def test_a_copy_of_a_copy_is_counted_once_as_the_first_model():
    """'a-q4' (made from 'a-int8', made from 'a') was counted as a model of its own."""
    from companion.survey.design import REGISTERED, units

    rows = [_row("a", "encoder", "A"), _row("a-int8", "encoder", "A", copy_of="a"),
            _row("a-q4", "encoder", "A", copy_of="a-int8"), _row("b", "encoder", "B")]
    assert _members(rows, every=True)["encoder"] == {"a": ["a"], "b": ["b"]}
    assert _members(rows)["encoder"] == {"A": ["a"], "B": ["b"]}
    reason = units(pd.DataFrame(rows), REGISTERED).set_index("member").at["a-q4", "reason"]
    assert "copy of a," in reason


def test_two_copies_of_one_absent_model_are_one_unit_not_two():
    rows = [_row("x-int8", "encoder", "X", copy_of="x"), _row("x-q4", "encoder", "X", copy_of="x"),
            _row("y", "encoder", "Y")]
    assert _members(rows, every=True)["encoder"] == {"x-int8": ["x-int8"], "y": ["y"]}
    assert _members(rows)["encoder"] == {"X": ["x-int8"], "Y": ["y"]}


def test_a_copy_of_an_absent_model_still_counts_once():
    rows = [_row("orphan-int8", "encoder", "O", copy_of="not-here"), _row("d", "decoder", "D")]
    assert _members(rows, every=True) == {"encoder": {"orphan-int8": ["orphan-int8"]}, "decoder": {"d": ["d"]}}


def test_a_stack_listed_twice_is_refused_not_weighed_twice():
    from companion.survey.design import REGISTERED, units

    rows = [_row("a", "encoder", "A"), _row("a", "encoder", "A"), _row("b", "encoder", "A")]
    _refused(lambda: units(pd.DataFrame(rows), REGISTERED), "a", "more than once")


def test_a_loop_of_copies_is_refused():
    from companion.survey.design import REGISTERED, units

    rows = [_row("a", "encoder", "A", copy_of="b"), _row("b", "encoder", "A", copy_of="a")]
    _refused(lambda: units(pd.DataFrame(rows), REGISTERED), "loop", "copy_of")


def test_design_rows_without_their_columns_are_refused():
    from companion.survey.design import units

    _refused(lambda: units(pd.DataFrame([{"name": "a", "kind": "encoder"}])), "tokens", "catalog_rows")


@pytest.mark.parametrize("kind,objective,word", [("encoder", "next-token", "an encoder trained by next-token"),
                                                 ("decoder", "masked", "a decoder trained by masked")])
def test_a_stack_whose_objective_contradicts_its_kind_is_left_out_naming_both(kind, objective, word):
    from companion.survey.design import REGISTERED, units

    t = units(pd.DataFrame([_row("m", kind, "M", objective=objective)]), REGISTERED).iloc[0]
    assert t["side"] == "" and t["unit"] == "" and word in t["reason"]


def test_a_family_of_one_member_is_valued_at_that_member():
    from companion.survey.design import REGISTERED, unit_values, units

    t = units(pd.DataFrame([_row("solo", "encoder", "S"), _row("d1", "decoder", "D"), _row("d2", "decoder", "D")]),
              REGISTERED)
    v = unit_values(t, {"solo": 0.37, "d1": 0.1, "d2": 0.2})
    assert v == {"encoder": {"S": 0.37}, "decoder": {"D": pytest.approx(0.15)}}


@pytest.mark.parametrize("value", [None, "0.3", True])
def test_a_member_median_that_is_no_number_is_refused_naming_the_member(value):
    """None and '0.3' raised a raw TypeError from numpy; True was read as 1.0."""
    from companion.survey.design import REGISTERED, unit_values, units

    t = units(pd.DataFrame([_row("a", "encoder", "A")]), REGISTERED)
    _refused(lambda: unit_values(t, {"a": value}), "'a'")


def test_one_file_under_two_names_is_refused_by_the_design(monkeypatch):
    from companion.survey import design
    from companion.zoo import registry

    first = next(iter(registry.ZOO.values()))
    twin = dataclasses.replace(first, name="twin-of-" + first.name)
    monkeypatch.setattr(registry, "ZOO", {**registry.ZOO, twin.name: twin})
    monkeypatch.setattr(design, "MEMBERS", {**design.MEMBERS, twin.name: design.MEMBERS[first.name]})
    _refused(lambda: design.catalog_rows(held=False), first.name, twin.name, "one file")


@pytest.mark.parametrize("n_enc,n_dec", [(0, 3), (2.5, 3), (3, True)])
def test_exact_p_refuses_counts_that_are_no_whole_number_of_units(n_enc, n_dec):
    """exact_p(0, 3) gave [NaN]; exact_p(2.5, 3) a table for 2.5 encoders."""
    from companion.survey.design import exact_p

    _refused(lambda: exact_p(n_enc, n_dec), "whole number")


def test_a_design_check_too_large_for_the_exact_table_is_refused_before_allocating():
    """10,000 units a side asked numpy for 7 TiB and raised a MemoryError."""
    from companion.survey.design import design_check

    _refused(lambda: design_check(10 ** 4, 10 ** 4, 0.05, [0.0], draws=10), "pairs")


@pytest.mark.parametrize("shifts,word", [([], "at least one shift"), (["0.5"], "'0.5'"), ([True], "True"),
                                         ({"x": None}, "None")])
def test_design_check_refuses_shifts_that_are_no_numbers(shifts, word):
    """'0.5' raised "Unknown format code 'g'"; an empty list gave a table without columns."""
    from companion.survey.design import design_check

    _refused(lambda: design_check(3, 3, 0.05, shifts, draws=10), word)


@pytest.mark.parametrize("delta", [math.inf, -math.inf])
def test_an_infinite_shift_decides_every_draw_as_the_exact_table_says(delta):
    """Share 1 (or 0) of the published pairs implies an infinite shift: every encoder above (below) every
    decoder in every draw, so 'holds' ('refuted') exactly where the extreme U reaches alpha."""
    from companion.survey.design import design_check

    row = design_check(4, 4, 0.05, [delta], draws=50, seed=1).iloc[0]
    assert 1 / math.comb(8, 4) < 0.05
    assert (row["p_holds"], row["p_refuted"]) == ((1.0, 0.0) if delta > 0 else (0.0, 1.0))


def test_the_seed_fixes_the_draws_and_a_row_does_not_depend_on_the_other_shifts():
    from companion.survey.design import design_check

    one = design_check(3, 4, 0.1, {"s": 0.8}, draws=400, seed=3).iloc[0]
    many = design_check(3, 4, 0.1, {"a": -1.0, "s": 0.8, "b": 2.0}, draws=400, seed=3).set_index("shift").loc["s"]
    for col in ("p_holds", "p_refuted", "p_inconclusive"):
        assert one[col] == many[col]
    other = design_check(3, 4, 0.1, {"s": 0.8}, draws=400, seed=4).iloc[0]
    assert other["p_holds"] != one["p_holds"] and other["seed"] == 4


def _published(enc_s2, dec_s2, enc_s3=(0.0,), dec_s3=(-0.1,)):
    rows = [("S2", "encoder", v) for v in enc_s2] + [("S2", "decoder", v) for v in dec_s2]
    rows += [("S3", "encoder", v) for v in enc_s3] + [("S3", "decoder", v) for v in dec_s3]
    return pd.DataFrame(rows, columns=["table", "role", "median"])


def test_the_published_share_and_shift_by_hand_with_a_tie():
    from scipy.stats import norm

    from companion.survey.design import published_contrast

    out = published_contrast(_published([0.5, 0.2], [0.2, 0.1, 0.6]))["symmetry"]
    share = (0 + 1 + 1 + 0.5 + 1 + 0) / 6       # pairs (enc, dec): 0.5>0.2,0.1 ; 0.2=0.2, 0.2>0.1
    assert out["share"] == pytest.approx(share) and out["delta"] == pytest.approx(math.sqrt(2) * norm.ppf(share))


def test_a_published_share_of_one_implies_an_infinite_shift():
    from companion.survey.design import published_contrast

    out = published_contrast(_published([0.5, 0.4], [0.1]))
    assert out["symmetry"]["share"] == 1.0 and out["symmetry"]["delta"] == math.inf


@pytest.mark.parametrize("enc,dec,word", [([np.nan, 0.5], [0.1], "1 not a number"), ([], [0.1], "0 encoder")])
def test_the_published_contrast_refuses_a_row_without_a_number_or_an_empty_role(enc, dec, word):
    """A NaN median compared as 'below every decoder' (a share of 0 and delta -inf); no encoders gave NaN."""
    from companion.survey.design import published_contrast

    _refused(lambda: published_contrast(_published(enc, dec)), "S2", word)


@pytest.mark.parametrize("alpha,want", [(0.05, 0.025), ("0.05", 0.025), ("x", None), (2, None), (float("nan"), None),
                                        (True, None)])
def test_the_evidence_level_read_from_the_rules(alpha, want):
    """'x' raised a raw conversion error; 2 became the level 1.0, refused later as 'alpha_one_sided';
    NaN passed as NaN and True as 1 (a one-sided level of 0.5)."""
    from companion.survey.design import evidence_alpha

    rules = {"framework": {"families": {"evidence": {"alpha": alpha}}}}
    if want is not None:
        assert evidence_alpha(rules) == want
    else:
        _refused(lambda: evidence_alpha(rules), "evidence.alpha", repr(alpha))


# ============================================================ (d) summaries

def _scores(values, key="m", model=None, component="encoder", role="bidirectional", pairing="grouped"):
    return pd.DataFrame({"key": key, "model": model or key, "component": component, "role": role,
                         "layer": range(len(values)), "head": -1, "pairing": pairing, "symmetry": values,
                         "directionality": [-v for v in values], "n_params": 10, "d_model": 4})


_CAT = pd.DataFrame({"key": ["m"], "printed_names": ["Model M|M"], "modality": ["text"]})


def _linear_percentile(v, p):
    """numpy's default ('linear') percentile, written out: position p (n - 1) between order statistics."""
    v = sorted(v)
    x = p * (len(v) - 1)
    lo = math.floor(x)
    return v[lo] + (x - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])


@pytest.mark.parametrize("values", [[0.3], [0.1, 0.4], [0.1, 0.4, 0.2, 0.3], [0.5, 0.1, 0.3, 0.3, 0.9]])
def test_layer_medians_and_quartiles_by_hand(values):
    from companion.survey.summaries import summarize_survey

    t = summarize_survey(_scores(values), _CAT).set_index("score")
    assert t.at["symmetry", "median"] == pytest.approx(statistics.median(values))
    assert t.at["symmetry", "q25"] == pytest.approx(_linear_percentile(values, 0.25))
    assert t.at["symmetry", "q75"] == pytest.approx(_linear_percentile(values, 0.75))
    assert t.at["directionality", "median"] == pytest.approx(-statistics.median(values))
    assert t.at["symmetry", "label"] == "Model M" and t.at["symmetry", "n_layers"] == len(values)


def test_a_layer_without_a_number_makes_the_model_median_nan_not_a_median_of_the_rest():
    from companion.survey.summaries import summarize_survey

    t = summarize_survey(_scores([0.1, np.nan, 0.2]), _CAT)
    assert t["median"].isna().all()


@pytest.mark.parametrize("scores", [pd.DataFrame(), _scores([0.1]).drop(columns=["pairing"])])
def test_a_summary_of_no_scores_is_refused_naming_the_columns(scores):
    from companion.survey.summaries import summarize_survey

    _refused(lambda: summarize_survey(scores, _CAT), "columns")


def test_a_catalog_holding_a_key_twice_is_refused_not_written_as_a_series_in_a_cell():
    from companion.survey.summaries import summarize_survey

    cat = pd.DataFrame({"key": ["m", "m"], "printed_names": ["M", "N"], "modality": ["text", "audio"]})
    _refused(lambda: summarize_survey(_scores([0.1, 0.2]), cat), "m", "more than once")


def test_two_checkpoints_under_one_key_are_refused_naming_both():
    from companion.survey.summaries import summarize_survey

    both = pd.concat([_scores([0.1, 0.2], model="a"), _scores([0.3, 0.5], model="b")], ignore_index=True)
    _refused(lambda: summarize_survey(both, _CAT), "'m'", "a, b")


def _summary(rows):
    return pd.DataFrame([dict(key=k, pairing="grouped", modality="text", component=c, kind=kind, score=s, median=v)
                         for k, c, kind, s, v in rows])


def test_a_tie_between_an_encoder_and_a_decoder_does_not_make_every_encoder_more_symmetric():
    from companion.survey.summaries import encoder_decoder_contrast

    out = encoder_decoder_contrast(_summary([
        ("e", "encoder", "encoder", "symmetry", 0.5), ("e", "encoder", "encoder", "directionality", 0.1),
        ("d", "decoder", "decoder", "symmetry", 0.5), ("d", "decoder", "decoder", "directionality", 0.1)]))
    assert out["sym"] == "does not hold" and out["dir_order"] == "does not hold" and out["dir_neg"] == "does not hold"


def test_a_model_of_two_stacks_enters_the_contrast_as_two_sorted_entries():
    from companion.survey.summaries import encoder_decoder_contrast

    rows = [("t5", "encoder", "encoder", "symmetry", 0.6), ("t5", "encoder", "encoder", "directionality", 0.0),
            ("t5", "decoder", "decoder", "symmetry", 0.1), ("t5", "decoder", "decoder", "directionality", -0.3),
            ("b", "encoder", "encoder", "symmetry", 0.4), ("b", "encoder", "encoder", "directionality", -0.1)]
    out = encoder_decoder_contrast(_summary(rows))
    assert out["encoders"] == ["b", "t5:encoder"] and out["decoders"] == ["t5:decoder"]
    assert out["sym_enc"] == [0.4, 0.6] and out["sym_enc_min"] == 0.4 and out["sym"] == "holds"
    assert out["n_enc_dir_negative"] == 1 and out["dir_order"] == "holds"


def test_the_contrast_refuses_a_model_whose_median_is_nan_naming_it():
    from companion.survey.summaries import encoder_decoder_contrast

    rows = [("e", "encoder", "encoder", "symmetry", np.nan), ("e", "encoder", "encoder", "directionality", 0.1),
            ("d", "decoder", "decoder", "symmetry", 0.2), ("d", "decoder", "decoder", "directionality", -0.1)]
    _refused(lambda: encoder_decoder_contrast(_summary(rows)), "e has no finite median")


def test_summarize_layers_refuses_a_table_without_its_columns():
    from companion.survey.tables import summarize_layers

    _refused(lambda: summarize_layers(pd.DataFrame()), "columns")
    _refused(lambda: summarize_layers(pd.DataFrame({"component": ["e"], "symmetry": [0.1],
                                                    "directionality": [0.0]})), "model")


def test_layer_scores_are_those_of_the_summed_head_forms_by_hand():
    from companion.survey.tables import layer_scores

    g = np.random.default_rng(14)
    Wq, Wk = g.standard_normal((6, 5)), g.standard_normal((2, 5))   # 3 query heads of width 2, one key head
    layer = QKLayer(index=0, role="causal", component="decoder", n_heads=3, n_kv_heads=1,
                    Wq=torch.tensor(Wq, dtype=torch.float32), Wk=torch.tensor(Wk, dtype=torch.float32))
    t = layer_scores(QKCheckpoint(source="s", family="f", layers=[layer], meta={"name": "x"}), per_head=True)
    Wq32, Wk32 = Wq.astype(np.float32).astype(np.float64), Wk.astype(np.float32).astype(np.float64)
    heads = [Wq32[2 * h:2 * h + 2].T @ Wk32 for h in range(3)]
    whole = structure_scores(torch.tensor(sum(heads)))
    assert t.iloc[0]["head"] == -1 and t.iloc[0]["symmetry"] == pytest.approx(float(whole["symmetry"]), abs=1e-6)
    for h in range(3):
        assert t.iloc[h + 1]["symmetry"] == pytest.approx(float(structure_scores(torch.tensor(heads[h]))["symmetry"]),
                                                          abs=1e-6)


# ============================================================ (e) null widths, sources, the zoo walk

def _widths(monkeypatch, zoo_widths, catalog_widths):
    import companion.survey.zoo_walk as zw
    import companion.zoo.catalog as cat

    monkeypatch.setattr(zw, "score_zoo", lambda per_head=False: ({}, pd.DataFrame({"d_model": zoo_widths}), None))
    monkeypatch.setattr(cat, "load_catalog", lambda: pd.DataFrame({"d_model": catalog_widths}))


def test_the_null_widths_are_the_union_of_the_zoos_and_the_catalogs_within_range(monkeypatch):
    from companion.survey.null_draws import survey_null_widths

    _widths(monkeypatch, [768.0, 1, np.nan, 64], [512, 9000, 768, np.nan])
    assert survey_null_widths(8192) == [64, 512, 768]


@pytest.mark.parametrize("bad", [768.5, np.inf])
def test_a_width_that_is_not_whole_is_refused_not_truncated(monkeypatch, bad):
    """768.5 was drawn as 768; Inf raised a raw OverflowError."""
    from companion.survey.null_draws import survey_null_widths

    _widths(monkeypatch, [768.0, bad], [512])
    _refused(lambda: survey_null_widths(8192), repr(float(bad)) if math.isfinite(bad) else "inf", "d_model")


@pytest.mark.parametrize("max_d", ["8192", 1.5])
def test_a_largest_width_that_is_no_whole_number_is_refused(monkeypatch, max_d):
    from companion.survey.null_draws import survey_null_widths

    _widths(monkeypatch, [64], [64])
    _refused(lambda: survey_null_widths(max_d), "max_d")


def test_shipping_with_no_width_to_draw_ends_in_one_line(monkeypatch, capsys):
    from companion.survey import null_draws

    monkeypatch.setattr(null_draws, "survey_null_widths", lambda max_d: [])
    monkeypatch.setattr(null_draws, "ship_null", lambda *a, **k: pytest.fail("drew nothing"))
    assert null_draws.main(["ship"]) == 1
    err = capsys.readouterr().err.strip()
    assert "nothing to draw" in err and "\n" not in err


def test_ship_null_of_no_width_is_refused_in_one_line(tmp_path):
    from companion.core.null import ship_null

    _refused(lambda: ship_null([], 5, out=tmp_path / "n.npz"), "width")
    _refused(lambda: ship_null([768.5], 5, out=tmp_path / "n.npz"), "768.5", "whole number")
    _refused(lambda: ship_null([True], 5, out=tmp_path / "n.npz"), "True")
    assert not (tmp_path / "n.npz").exists()


def test_ship_null_of_no_draw_is_refused(tmp_path):
    from companion.core.null import ship_null

    _refused(lambda: ship_null([4], 0, out=tmp_path / "n.npz"), "n_samples")
    assert not list(tmp_path.iterdir())


def _source(**entry):
    from companion.survey.sources import resolve_source

    base = {"key": "k", "hub_id": "owner/name", "local": ""}
    base.update(entry)
    return lambda **kw: resolve_source(base, **{"online": False, **kw})


@pytest.mark.parametrize("local", ["pkg:companion//etc/passwd", "pkg:companion/" + "../" * 40 + "etc/passwd"])
def test_a_package_path_never_leads_outside_the_package(local):
    """'pkg:companion//etc/passwd' resolved to /etc/passwd, a 'package' source."""
    from companion.survey.sources import Unavailable, _package_path

    with pytest.raises(Unavailable, match="outside"):
        _package_path(local)
    with pytest.raises(Unavailable):
        _source(local=local)()


def test_a_package_path_inside_the_package_is_found():
    import companion
    from companion.survey.sources import _package_path

    assert _package_path("pkg:companion/survey/sources.py") == \
        __import__("pathlib").Path(companion.__file__).parent / "survey" / "sources.py"


@pytest.mark.parametrize("local", ["pkg:..", "pkg:.x", "pkg:"])
def test_a_package_name_that_is_no_module_name_is_unavailable_not_an_import_error(local):
    from companion.survey.sources import Unavailable

    with pytest.raises(Unavailable):
        _source(local=local)()


def test_an_empty_local_cell_read_as_nan_is_no_local_path():
    """An empty cell read by pandas is NaN: 'NaN.startswith' raised AttributeError."""
    from companion.survey.sources import Unavailable

    with pytest.raises(Unavailable, match="owner/name"):
        _source(local=float("nan"))()


def test_an_empty_hub_id_cell_is_unavailable_naming_the_key(tmp_path):
    from companion.survey.sources import Unavailable

    with pytest.raises(Unavailable, match="no hub id") as err:
        _source(hub_id=float("nan"))(local_dir=tmp_path)
    _one_line(err)


def test_an_empty_revision_cell_is_no_revision(monkeypatch):
    import companion.adapters.hub as hub

    monkeypatch.setattr(hub, "check_hub_id", lambda hub_id: None)
    src = _source(revision=float("nan"))(online=True)
    assert src.kind == "hub" and src.revision is None


def test_a_key_holding_a_nul_byte_is_not_looked_up_in_the_local_folder(tmp_path):
    from companion.survey.sources import Unavailable

    with pytest.raises(Unavailable):
        _source(key="k\0x")(local_dir=tmp_path)


@pytest.mark.parametrize("hub_id", ["javascript:alert(1)", "<script>x</script>/n", "owner/<b>name</b>"])
def test_a_hub_id_with_markup_or_a_scheme_is_never_a_hub_source(hub_id):
    from companion.survey.sources import Unavailable

    with pytest.raises(Unavailable, match="not a hub id") as err:
        _source(hub_id=hub_id)(online=True)
    _one_line(err)


def test_a_local_path_of_javascript_scheme_is_no_local_file():
    from companion.survey.sources import Unavailable

    with pytest.raises(Unavailable):
        _source(local="javascript:alert(1)")()


def test_the_fingerprint_skips_a_symlink_loop_and_hashes_the_real_files(tmp_path):
    import hashlib

    from companion.survey.sources import _fingerprint

    (tmp_path / "a.safetensors").write_bytes(b"weights")
    os.symlink(tmp_path / "loop.bin", tmp_path / "loop.bin")
    want = hashlib.sha256(b"a.safetensors" + b"weights").hexdigest()[:16]
    assert _fingerprint(str(tmp_path)) == "sha256:" + want
    assert _fingerprint(str(tmp_path / "loop.bin")) is None


def test_the_zoo_walk_of_no_names_scores_nothing(monkeypatch):
    """'names or ZOO' read and scored the whole zoo when asked for none."""
    import companion.adapters as adapters
    from companion.survey.zoo_walk import score_zoo

    monkeypatch.setattr(adapters, "read_qk", lambda *a, **k: pytest.fail("read a model"))
    checkpoints, scores, status = score_zoo([], catalog=pd.DataFrame({"key": [], "n_params": []}))
    assert checkpoints == {} and scores.empty and status.empty


def test_the_zoo_walk_refuses_a_name_given_twice(monkeypatch):
    import companion.adapters as adapters
    from companion.survey.zoo_walk import score_zoo
    from companion.zoo.registry import ZOO

    monkeypatch.setattr(adapters, "read_qk", lambda *a, **k: pytest.fail("read a model"))
    name = next(iter(ZOO))
    _refused(lambda: score_zoo([name, name], catalog=pd.DataFrame({"key": [], "n_params": []})), name, "once")


def test_with_zoo_entries_refuses_a_catalog_without_keys():
    from companion.survey.zoo_walk import with_zoo_entries

    _refused(lambda: with_zoo_entries(pd.DataFrame({"x": [1]})), "'key'")


def test_with_zoo_entries_adds_each_zoo_model_once():
    from companion.survey.zoo_walk import with_zoo_entries
    from companion.zoo.registry import ZOO

    once = with_zoo_entries(pd.DataFrame({"key": ["all-minilm-l6-v2"]}))
    twice = with_zoo_entries(once)
    assert len(once) == len(ZOO) and twice is once
    assert (once.loc[once["key"] != "all-minilm-l6-v2", "local"].str.startswith("zoo:")).all()


# ============================================================ (f) further readers of the survey's tables

def test_against_gap_names_the_model_of_the_largest_change_when_an_index_label_repeats():
    """Medians concatenated without a fresh index: .at[label] gave a Series in the 'model' cell."""
    from companion.survey.quantisation import against_gap

    m = pd.DataFrame({"scheme": "a", "model": ["x", "y"], "component": "e", "d_symmetry_median": [0.1, -0.3],
                      "d_directionality_median": 0.0}, index=[0, 0])
    row = against_gap(m, {"symmetry": 0.5}).iloc[0]
    assert row["model"] == "y" and row["largest_change"] == pytest.approx(0.3) and row["ratio"] == pytest.approx(0.6)


def test_unit_gaps_refuse_text_among_the_values_in_one_line():
    from companion.survey.quantisation import unit_gaps

    _refused(lambda: unit_gaps({"sym_enc": [0.1], "sym_dec": [0.2], "dir_enc": "abc", "dir_dec": [0.1]}), "dir_enc")


def test_member_medians_refuse_a_summary_without_its_columns():
    from companion.survey.design import member_medians

    _refused(lambda: member_medians(pd.DataFrame({"key": []}), rows=pd.DataFrame()), "pairing", "summarize_survey")


def test_compare_with_published_refuses_tables_without_their_columns():
    from companion.survey.summaries import compare_with_published

    _refused(lambda: compare_with_published(pd.DataFrame({"key": ["m"]}),
                                            pd.DataFrame({"key": [], "score": [], "pairing": []})), "published", "label")


def test_the_design_command_ends_a_refusal_in_one_line(monkeypatch, capsys):
    from companion.survey import design

    monkeypatch.setattr(design, "catalog_rows", lambda held=True: pd.DataFrame([_row("a", "encoder", "A")]))
    monkeypatch.setattr(design, "design_table",
                        lambda draws, seed: design.design_check(3, 3, 0.05, [0.0], draws=draws, seed=seed))
    assert design.main(["--draws", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "draws" in err and "\n" not in err and "Traceback" not in err


def test_the_null_command_ends_a_refusal_in_one_line(monkeypatch, capsys):
    from companion.survey import null_draws

    _widths(monkeypatch, [768.5], [512])
    monkeypatch.setattr(null_draws, "ship_null", lambda *a, **k: pytest.fail("drew with a width refused"))
    assert null_draws.main(["ship"]) == 2
    err = capsys.readouterr().err.strip()
    assert "768.5" in err and "\n" not in err


def test_the_zoo_walk_reads_one_name_given_as_text_as_that_name():
    """'x-model' was walked letter by letter and refused as the unknown model 'x'."""
    from companion.survey.zoo_walk import score_zoo

    text = _refused(lambda: score_zoo("x-model", catalog=pd.DataFrame({"key": [], "n_params": []})), "'x-model'")
    assert "'x' is not" not in text


def test_the_bias_term_table_reads_one_name_given_as_text_as_that_name(monkeypatch):
    from companion.survey.bias_term import bias_term_table

    calls = _fake_inputs(monkeypatch, lambda name: [])
    bias_term_table("all-minilm-l6-v2")
    assert calls == ["all-minilm-l6-v2"]


def test_stale_original_scores_are_refused_naming_them_not_the_copies():
    """Scores of another checkpoint passed as original_scores were refused as 'the two copies have
    different self-attention layers', which they do not."""
    from companion.survey.quantisation import compare_layers
    from companion.survey.tables import layer_scores

    a = _ckpt(2)
    _refused(lambda: compare_layers(a, a, "m", "x", original_scores=layer_scores(_ckpt(1))), "original_scores")


def test_a_design_check_of_more_draws_than_can_be_held_is_refused_before_drawing():
    from companion.survey.design import design_check

    _refused(lambda: design_check(3, 3, 0.05, [0.0], draws=10 ** 12), "draws", "fewer")


@pytest.mark.parametrize("bad", [True, float("nan"), 10 ** 400, "0.2", None])
def test_a_unit_value_from_a_median_that_is_no_number_is_refused_naming_the_member(bad):
    """10**400 raised a raw TypeError from np.isfinite; the others were refused already."""
    from companion.base.errors import CompanionError
    from companion.survey.design import unit_values

    t = pd.DataFrame({"side": ["encoder", "encoder", "decoder"], "unit": ["A", "A", "B"], "member": ["a", "b", "c"]})
    with pytest.raises(CompanionError, match=r"members \['a'\] have a median that is not a number"):
        unit_values(t, {"a": bad, "b": 0.3, "c": 1.0})


def test_a_unit_value_reads_numpy_medians_as_their_values():
    import numpy as np

    from companion.survey.design import unit_values

    t = pd.DataFrame({"side": ["encoder", "encoder", "decoder"], "unit": ["A", "A", "B"], "member": ["a", "b", "c"]})
    got = unit_values(t, {"a": np.float32(0.25), "b": 0.75, "c": np.int64(2)})
    assert got == {"encoder": {"A": 0.5}, "decoder": {"B": 2.0}}
