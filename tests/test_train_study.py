"""The compute study's measures: the encoder-decoder gap, its null band, tokens seen."""

import math

import numpy as np
import pandas as pd
import pytest

from companion.train.studies.compute_study import gap_exit, gap_null_band, layer_mean_curve, run_summary, tokens_per_step


def _history(steps, layer_values, quantity="symmetry"):
    rows = []
    for step, values in zip(steps, layer_values):
        for layer, v in enumerate(values):
            rows.append(dict(step=step, quantity=quantity, layer=layer, head=-1, value=v))
            rows.append(dict(step=step, quantity=quantity, layer=layer, head=0, value=-0.99))  # a head row (a score)
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
    from companion.core.scores import symmetry_score

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
    # a measured process CPU time takes precedence over wall time x threads
    assert run_summary(h, dict(meta, cpu_seconds=32.0))["tokens_per_cpu_s"] == pytest.approx(102400 / 32)


def _study_run(root, variant, mode, sym, dirn, width=64, layers=2, steps=(0, 50, 100)):
    from companion.train.runner.provenance import write_run

    h = pd.concat([_history(steps, [[v] * layers for v in sym]),
                   _history(steps, [[v] * layers for v in dirn], "directionality"),
                   pd.DataFrame([dict(step=steps[-1], quantity="eval_loss", layer=-1, head=-1, value=5.0)])])
    meta = {"config": {"mode": mode, "batch_size": 4, "seq_len": 10, "lr": 1e-3, "top_k": 512},
            "model_size": {"num_hidden_layers": layers, "hidden_size": width, "num_attention_heads": 2,
                           "seq_len": 10},
            "duration_s": 20.0, "hardware": {"torch_threads": 1}}
    write_run(root / f"study-{variant}-{mode}", h, meta)


def test_study_table_times_each_contrast_and_the_regime_is_the_cheapest_with_both(tmp_path):
    from companion.train.studies.compute_study import choose_regime, load_study, study_table

    # base: both contrasts appear at step 50; heads2: only symmetry; lr3e-3: both, at step 100
    # (width 64: the directionality band of two 2-layer random models is about 1.1)
    _study_run(tmp_path, "base", "encoder", [0.0, 0.9, 0.9], [0.0, 0.6, 0.6])
    _study_run(tmp_path, "base", "decoder", [0.0, 0.0, 0.0], [0.0, -0.95, -0.95])
    _study_run(tmp_path, "heads2", "encoder", [0.0, 0.9, 0.9], [0.0, 0.0, 0.0])
    _study_run(tmp_path, "heads2", "decoder", [0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    _study_run(tmp_path, "lr3e-3", "encoder", [0.0, 0.0, 0.9], [0.0, 0.0, 0.6])
    _study_run(tmp_path, "lr3e-3", "decoder", [0.0, 0.0, 0.0], [0.0, 0.0, -0.95])
    _study_run(tmp_path, "depth2", "encoder", [0.0, 0.9, 0.9], [0.0, 0.0, 0.0])  # no decoder: left out
    t = study_table(load_study(tmp_path), n_samples=500)
    assert set(t.index) == {"base", "heads2", "lr3e-3"}
    # 40 tokens a step; each run 100 steps x 40 tokens in 20 s: 200 tokens per CPU-second
    assert t.loc["base", "sym_exit_tokens"] == 50 * 40
    assert t.loc["base", "sym_exit_cpu_s"] == pytest.approx(2000 * (2 / 200))
    assert t.loc["lr3e-3", "dir_exit_tokens"] == 100 * 40
    assert math.isnan(t.loc["heads2", "dir_exit_tokens"])
    # lr3e-3's encoder peaks at its last step (0.9, 100 steps x 40 tokens) and keeps all of it
    assert t.loc["lr3e-3", "enc_sym_peak"] == pytest.approx(0.9)
    assert t.loc["lr3e-3", "enc_sym_peak_tokens"] == 4000 and t.loc["lr3e-3", "enc_sym_kept"] == pytest.approx(1.0)
    assert t.loc["base", "dir_exit_tokens"] == 50 * 40  # gap 0.6 + 0.95 clears the ~1.1 band
    assert choose_regime(t) == "base"
    assert choose_regime(t.drop(index="base")) == "lr3e-3"
    # heads2's symmetry gap left the band, but its decoder is not the more column-dominant
    assert choose_regime(t.drop(index=["base", "lr3e-3"])) is None
    # each pair costs 2 x 4000 tokens / 200 tokens per CPU-second = 40 CPU-seconds
    assert t.loc["base", "pair_cpu_s"] == pytest.approx(40)
    assert choose_regime(t, max_pair_cpu_s=39) is None
    # a decoder that is less row-dominant than its encoder is not column-dominant
    row_dominant = t.assign(dec_directionality=0.1, enc_directionality=0.5)
    assert choose_regime(row_dominant) is None


def test_projection_recovers_a_power_law_in_width():
    from companion.train.studies.compute_study import project_exit_tokens

    t = pd.DataFrame({"width": [64, 128, 256], "sym_exit_tokens": [3.0 * w ** 1.5 for w in (64, 128, 256)]},
                     index=["width64", "base", "width256"])
    p = project_exit_tokens(t, widths=(768,))
    assert p["exponent"].iloc[0] == pytest.approx(1.5)
    assert p["projected_tokens"].iloc[0] == pytest.approx(3.0 * 768 ** 1.5)
    t.loc["width64", "sym_exit_tokens"] = math.nan
    t.loc["base", "sym_exit_tokens"] = math.nan
    assert math.isnan(project_exit_tokens(t)["projected_tokens"].iloc[0])


def test_directionality_band_is_the_spread_of_the_directionality_difference():
    band_s = gap_null_band(32, 2, n_samples=1000)
    band_d = gap_null_band(32, 2, n_samples=1000, quantity="directionality")
    assert band_d > 0 and band_s > 0 and band_d != band_s
    with pytest.raises(ValueError, match="quantity"):
        gap_null_band(32, 2, quantity="loss")


def test_curves_by_tokens_scale_the_step_axis():
    from companion.train.studies.compute_study import curve_by_tokens

    h = _history([0, 10], [[0.1, 0.3], [0.2, 0.6]])
    meta = {"config": {"batch_size": 8, "seq_len": 16}, "model_size": {}}
    c = curve_by_tokens(h, meta)
    assert c.index.tolist() == [0, 10 * 8 * 16] and c.tolist() == pytest.approx([0.2, 0.4])
