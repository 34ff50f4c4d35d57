"""The training figures draw what their tidy tables say."""

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd
import pytest

from companion.book.figures.training import loss_curves, loss_difference, scores_over_training


def _history(label, seed, sym_by_layer, steps=(0, 10, 20)):
    rows = [{"step": s, "quantity": "symmetry", "layer": layer, "head": -1, "value": v * s,
             "label": label, "seed": seed}
            for s in steps for layer, v in enumerate(sym_by_layer)]
    rows += [{"step": s, "quantity": "eval_loss", "layer": -1, "head": -1, "value": 5.0 - 0.1 * s,
              "label": label, "seed": seed} for s in steps]
    return pd.DataFrame(rows)


def test_scores_over_training_draws_the_median_over_layers_per_label():
    df = pd.concat([_history("encoder", 0, [0.01, 0.02, 0.03]), _history("decoder", 0, [0.0, 0.0, 0.0])])
    ax = scores_over_training(df, "symmetry").axes[0]
    enc, dec = ax.lines[0], ax.lines[1]
    np.testing.assert_allclose(enc.get_ydata(), [0.0, 0.2, 0.4])  # median layer (0.02) x step
    np.testing.assert_allclose(dec.get_ydata(), 0.0)


def test_loss_curves_draw_a_mean_line_and_one_thin_line_per_seed():
    df = pd.concat([_history("encoder", s, [0.0]) for s in range(3)])
    ax = loss_curves(df).axes[0]
    assert len(ax.lines) == 1 + 3


def test_loss_difference_draws_one_line_per_seed_and_the_zero_line():
    table = pd.DataFrame({"seed": [0, 0, 1, 1], "step": [0, 10, 0, 10], "difference": [0.0, -0.2, 0.0, 0.1]})
    ax = loss_difference(table).axes[0]
    seeds = [l for l in ax.lines if l.get_label().startswith("seed")]
    assert len(seeds) == 2
    np.testing.assert_allclose(seeds[0].get_ydata(), [0.0, -0.2])


def test_figures_refuse_tables_without_the_rows_they_draw():
    with pytest.raises(ValueError, match="no per-layer rows of 'directionality'"):
        scores_over_training(_history("encoder", 0, [0.1]), "directionality")
    with pytest.raises(ValueError, match="paired_loss_difference"):
        loss_difference(pd.DataFrame({"step": [0], "value": [1.0]}))


def _swap_history(role, run, seed, other=False):
    rows = []
    for s in (0, 10):
        for q, v in (("symmetry", 0.4 + 0.01 * s), ("directionality", -0.1)):
            rows += [{"step": s, "quantity": q, "layer": layer, "head": -1, "value": v + layer * 0.1}
                     for layer in range(2)]
        rows.append({"step": s, "quantity": "eval_loss", "layer": -1, "head": -1, "value": 3.0 - 0.05 * s})
        if other:
            rows.append({"step": s, "quantity": "eval_loss_other", "layer": -1, "head": -1, "value": 8.0 + s})
    return pd.DataFrame(rows).assign(role=role, run=run, seed=seed)


@pytest.mark.parametrize("other", [False, True])
def test_objective_swap_curves_add_the_other_objectives_loss_when_the_runs_logged_it(other):
    from companion.book.figures.training import objective_swap_curves

    df = pd.concat([_swap_history("control", "a", 1, other), _swap_history("swap", "b", 1, other)])
    fig = objective_swap_curves(df)
    assert len(fig.axes) == (4 if other else 3)
    sym = fig.axes[0]
    means = [line for line in sym.lines if line.get_linewidth() == 2]
    np.testing.assert_allclose(means[0].get_ydata(), [0.45, 0.55])     # mean over the two layers
    if other:
        assert "other objective" in fig.axes[3].get_ylabel()
        np.testing.assert_allclose(fig.axes[3].lines[-1].get_ydata(), [8.0, 18.0])


def test_objective_swap_layers_draws_each_layers_change_from_the_checkpoint():
    from companion.book.figures.training import objective_swap_layers
    from companion.train.studies.swap import layer_changes

    df = pd.concat([_swap_history("control", "a", 1), _swap_history("swap", "b", 1)])
    ch = layer_changes(df, "symmetry").set_index(["role", "layer"])["change"]
    np.testing.assert_allclose(ch.to_numpy(), 0.1)      # 0.4 + 0.01 * 10 - 0.4, every layer
    fig = objective_swap_layers(df)
    line = [ln for ln in fig.axes[0].lines if ln.get_linewidth() == 2][0]
    np.testing.assert_allclose(line.get_xdata(), [0, 1])
    np.testing.assert_allclose(line.get_ydata(), [0.1, 0.1])
