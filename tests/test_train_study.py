"""The compute study's measures: the encoder-decoder gap, its null band, tokens seen."""

import math

import numpy as np
import pandas as pd
import pytest

from companion.train.study import gap_exit, gap_null_band, layer_mean_curve, run_summary, tokens_per_step


def _history(steps, layer_values, quantity="symmetry"):
    rows = []
    for step, values in zip(steps, layer_values):
        for layer, v in enumerate(values):
            rows.append(dict(step=step, quantity=quantity, layer=layer, head=-1, value=v))
            rows.append(dict(step=step, quantity=quantity, layer=layer, head=0, value=99.0))  # a head row
    return pd.DataFrame(rows)


def test_layer_mean_uses_the_layers_summed_forms_only():
    h = _history([0, 10], [[0.1, 0.3], [0.2, 0.6]])
    assert layer_mean_curve(h).tolist() == pytest.approx([0.2, 0.4])


def test_gap_leaves_the_band_at_the_first_step_after_which_it_stays_above():
    steps = [0, 10, 20, 30, 40]
    enc = _history(steps, [[0.0], [0.5], [0.0], [0.5], [0.6]])
    dec = _history(steps, [[0.0]] * 5)
    res = gap_exit(enc, dec, band=0.1)
    assert res["step"] == 30  # above at 10, back inside at 20: the exit is 30
    assert res["final_gap"] == pytest.approx(0.6)
    never = gap_exit(dec, enc, band=0.1)
    assert math.isnan(never["step"])


def test_null_band_matches_the_spread_of_two_untrained_models():
    # an independent Monte Carlo: build the two models' layers directly and score them
    from companion.scores import symmetry_score

    width, layers = 24, 3
    rng = np.random.default_rng(7)

    def model_mean():
        s = []
        for _ in range(layers):
            q, k = rng.standard_normal((width, width)), rng.standard_normal((width, width))
            s.append(symmetry_score(q.T @ k))
        return np.mean(s)

    diffs = np.array([model_mean() - model_mean() for _ in range(600)])
    band = gap_null_band(width, layers, n_samples=4000)
    assert band == pytest.approx(np.quantile(diffs, 0.975), rel=0.2)
    assert np.mean(diffs > band) == pytest.approx(0.025, abs=0.015)


def test_tokens_and_throughput_of_a_run():
    h = _history([0, 100], [[0.1, 0.1], [0.3, 0.5]])
    h = pd.concat([h, _history([0, 100], [[0.0, 0.0], [-0.1, -0.3]], "directionality"),
                   pd.DataFrame([dict(step=100, quantity="eval_loss", layer=-1, head=-1, value=5.0)])])
    meta = {"config": {"mode": "encoder", "batch_size": 16, "grad_accum": 2, "seq_len": None,
                       "lr": 1e-3, "top_k": 4096},
            "model_size": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2,
                           "seq_len": 32},
            "duration_s": 64.0, "hardware": {"torch_threads": 2}}
    s = run_summary(h, meta)
    assert tokens_per_step(meta["config"], meta["model_size"]) == 16 * 2 * 32
    assert s["tokens"] == 100 * 1024 and s["tokens_per_cpu_s"] == pytest.approx(102400 / 128)
    assert s["final_symmetry"] == pytest.approx(0.4) and s["final_directionality"] == pytest.approx(-0.2)
