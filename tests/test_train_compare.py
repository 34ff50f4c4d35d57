"""Comparisons across seeds: final layer-mean scores, ordered pairs, runs paired by seed."""

import itertools

import numpy as np
import pandas as pd
import pytest

from companion.train.studies.compare import final_scores, ordered_pairs, seed_mean_curve, seed_pairs, top_layers


def _run(name, mode, init, seed, steps, values):
    """A run's history: per step and layer a symmetry value, plus one per-head row."""
    rows = []
    for step, per_layer in zip(steps, values):
        for layer, v in enumerate(per_layer):
            rows.append((step, "symmetry", layer, -1, v))
            rows.append((step, "symmetry", layer, 0, 99.0))  # per-head rows are not layer scores
        rows.append((step, "eval_loss", -1, -1, 5.0))
    t = pd.DataFrame(rows, columns=["step", "quantity", "layer", "head", "value"])
    return t.assign(run=name, mode=mode, init=init, seed=seed)


def test_final_scores_take_each_runs_own_last_step_and_average_its_layers():
    runs = pd.concat([
        _run("a", "encoder", "standard", 0, [0, 10, 20], [[0, 0], [1, 1], [0.2, 0.4]]),
        _run("b", "decoder", "standard", 0, [0, 10], [[0, 0], [0.5, 0.7]]),  # stopped earlier
    ])
    f = final_scores(runs)
    assert f[("encoder", "standard", 0)] == pytest.approx(0.3)
    assert f[("decoder", "standard", 0)] == pytest.approx(0.6)


def test_final_scores_refuse_two_runs_with_one_identity():
    runs = pd.concat([_run("a", "encoder", "standard", 0, [0], [[0.1]]),
                      _run("a-other-corpus", "encoder", "standard", 0, [0], [[0.2]])])
    with pytest.raises(ValueError, match="share one"):
        final_scores(runs)
    # a column that tells them apart makes them two runs again
    by_corpus = final_scores(runs.assign(corpus=runs["run"]), keys=("corpus", "mode"))
    assert by_corpus[("a", "encoder")] == pytest.approx(0.1)
    assert by_corpus[("a-other-corpus", "encoder")] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="quantity"):
        final_scores(runs, "eval_loss")


def test_ordered_pairs_count_like_a_double_loop():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.normal(size=rng.integers(1, 5)), rng.normal(size=rng.integers(1, 5))
        brute = sum(x > y for x, y in itertools.product(a, b))
        assert ordered_pairs(a, b) == (brute, len(a) * len(b))
    assert ordered_pairs([1.0, 1.0], [1.0]) == (0, 2)  # ties are not ordered


def test_seed_pairs_keep_only_seeds_with_both_initialisations():
    runs = pd.concat([
        _run("e-std-0", "encoder", "standard", 0, [0], [[0.1]]),
        _run("e-sym-0", "encoder", "symmetric", 0, [0], [[0.5]]),
        _run("e-std-1", "encoder", "standard", 1, [0], [[0.1]]),  # its symmetric run is missing
        _run("d-sym-0", "decoder", "symmetric", 0, [0], [[0.3]]),
    ])
    pairs = seed_pairs(runs, "encoder")
    assert list(pairs) == [0]
    b, c = pairs[0]
    assert set(b["run"]) == {"e-std-0"} and set(c["run"]) == {"e-sym-0"}
    assert seed_pairs(runs, "decoder") == {}


def test_top_layers_name_each_runs_most_symmetric_layer_at_its_own_last_step():
    rng = np.random.default_rng(5)
    runs, expected = [], {}
    for i, steps in enumerate(([0, 10, 20], [0, 10], [0])):  # runs that stopped at different steps
        values = rng.normal(size=(len(steps), 4))
        runs.append(_run(f"r{i}", "encoder", "standard", i, steps, values))
        expected[f"r{i}"] = int(np.argmax(values[-1]))  # independent: argmax of the last row
    top = top_layers(pd.concat(runs))
    assert top.to_dict() == expected
    # an earlier step's maximum does not count: the top layer moves from 0 to 1
    moving = _run("m", "encoder", "standard", 0, [0, 10], [[9.0, 0.0], [0.0, 1.0]])
    assert top_layers(moving)["m"] == 1
    with pytest.raises(ValueError, match="quantity"):
        top_layers(moving, "loss")


def test_seed_mean_curve_averages_layers_then_seeds_at_each_step():
    rng = np.random.default_rng(7)
    values = rng.normal(size=(3, 2, 4))  # seed, step, layer
    runs = pd.concat([_run(f"s{i}", "encoder", "standard", i, [0, 10], values[i]) for i in range(3)])
    curve = seed_mean_curve(runs)
    assert list(curve.index) == [0, 10]
    np.testing.assert_allclose(curve.to_numpy(), values.mean(axis=2).mean(axis=0))  # per-head rows ignored
    with pytest.raises(ValueError, match="quantity"):
        seed_mean_curve(runs, "loss")
