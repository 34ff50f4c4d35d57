"""Initialisations have the claimed structure and scale (Appendix S2.1), and the penalty
of Eqs. S146-S148 as defined here has its minima where it should."""

import math

import pytest
import torch

# one thread: the suite runs two workers on two cores, and oversubscribed threads are
# tens of times slower than one
torch.set_num_threads(1)

from companion.core.bilinear import bilinear_form, per_head_bilinear_forms
from companion.core.scores import symmetry_score
from companion.train.models.init import initialize, symmetry_penalty
from companion.train.models.bert import build_model, qk_weights


def _model(init, seed=0, size="micro"):
    torch.manual_seed(seed)
    m = build_model(size, 50, "encoder")
    return initialize(m, init, generator=torch.Generator().manual_seed(seed))


def _scores(model):
    H = model.config.num_attention_heads
    layer, head = [], []
    for wq, wk in qk_weights(model):
        layer.append(symmetry_score(bilinear_form(wq.double(), wk.double(), H)))
        head.extend(symmetry_score(per_head_bilinear_forms(wq.double(), wk.double(), H)).tolist())
    return layer, head


def test_symmetric_init_scores_plus_one_per_layer_and_per_head():
    layer, head = _scores(_model("symmetric"))
    assert all(abs(s - 1.0) < 1e-12 for s in layer + head)


def test_skew_init_scores_minus_one_per_layer_and_per_head():
    layer, head = _scores(_model("skew"))
    assert all(abs(s + 1.0) < 1e-12 for s in layer + head)


def test_standard_init_is_unstructured():
    layer, _ = _scores(_model("standard", size="tiny"))
    # independent N(0, s^2) factors: symmetry concentrates near 0 (random-matrix level)
    assert all(abs(s) < 0.2 for s in layer)


@pytest.mark.parametrize("init", ["symmetric", "skew"])
def test_structured_inits_keep_the_baseline_scale(init):
    std = {}
    for name in ("standard", init):
        ws = [w for pair in qk_weights(_model(name, size="tiny")) for w in pair]
        std[name] = torch.cat([w.flatten() for w in ws]).std().item()
    assert abs(std["standard"] - 0.02) < 0.001
    assert abs(std[init] - std["standard"]) / std["standard"] < 0.05


def test_torch_default_symmetric_init_changes_the_scale_and_biases():
    m = _model("symmetric-torch-default", size="tiny")
    d = m.config.hidden_size
    att = m.bert.encoder.layer[0].attention.self
    assert torch.equal(att.query.weight, att.key.weight)
    assert torch.equal(att.query.bias, att.key.bias) and att.query.bias.abs().sum() > 0
    # U(-1/sqrt(d), 1/sqrt(d)) has std 1/sqrt(3 d), not 0.02
    assert abs(att.query.weight.std().item() - 1 / math.sqrt(3 * d)) < 0.1 / math.sqrt(3 * d)
    assert att.query.weight.std().item() > 1.5 * 0.02


def test_symmetry_penalty_matches_scores_and_has_minimum_at_plus_and_minus_one():
    for init in ("standard", "symmetric", "skew"):
        m = _model(init)
        _, head = _scores(m)
        expected_sym = sum((1 - s) / 2 for s in head) / len(head)
        assert abs(symmetry_penalty(m, "symmetric").item() - expected_sym) < 1e-5
        assert abs(symmetry_penalty(m, "skew").item() - (1 - expected_sym)) < 1e-5
    assert symmetry_penalty(_model("symmetric"), "symmetric").item() < 1e-6
    assert symmetry_penalty(_model("skew"), "skew").item() < 1e-6


def test_symmetry_penalty_gradient_moves_towards_symmetry():
    m = _model("standard")
    before = symmetry_penalty(m, "symmetric")
    params = [p for a in m.bert.encoder.layer for p in (a.attention.self.query.weight, a.attention.self.key.weight)]
    opt = torch.optim.SGD(params, lr=0.05)
    for _ in range(20):
        opt.zero_grad()
        symmetry_penalty(m, "symmetric").backward()
        opt.step()
    assert symmetry_penalty(m, "symmetric").item() < before.item() - 0.05


def test_unknown_init_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown initialisation"):
        _model("orthogonal")
