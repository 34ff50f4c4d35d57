"""The theory figures draw what their data say."""

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd

from companion.book.figures.theory import first_order_error_scaling, logits_versus_weights


def test_error_scaling_plots_each_step_size_and_a_slope_two_reference():
    upd = pd.DataFrame({"eta": [1e-1, 1e-2, 1e-3], "error": [1e-2, 1e-4, 1e-6]})
    ax = first_order_error_scaling(upd).axes[0]
    measured, reference = ax.lines
    np.testing.assert_allclose(measured.get_xdata(), upd["eta"])
    np.testing.assert_allclose(reference.get_ydata(), upd["error"])  # exact eta^2 data lie on it


def test_logits_versus_weights_draws_one_monotone_curve_per_query_row():
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(2, 3, 5))               # heads x queries x keys
    probs = np.exp(raw) / np.exp(raw).sum(-1, keepdims=True)
    ax = logits_versus_weights(raw, probs, max_rows=6).axes[0]
    assert len(ax.lines) == 6
    for line in ax.lines:
        assert np.all(np.diff(line.get_xdata()) >= 0) and np.all(np.diff(line.get_ydata()) >= 0)
