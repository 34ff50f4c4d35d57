"""The survey's figure functions draw what the tidy tables hold and refuse malformed input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from companion.book.figures.survey import (
    figure_2_scatter,
    figure_s1,
    figure_s2,
    null_band_table,
    pairing_comparison,
    per_head_scores,
    qk_heatmaps,
    scores_vs_parameters,
)
from companion.core.null import null_scores
from companion.survey.summaries import published_summary


def _n_points(ax):
    """Data markers on an axes (error-bar caps and reference lines excluded)."""
    return sum(1 for line in ax.lines if line.get_marker() in ("o", "X", "*"))


@pytest.fixture(scope="module")
def published():
    return published_summary()


def test_figure_2_draws_one_marker_per_published_text_row_and_score(published):
    text = published[published["modality"] == "text"]
    fig = figure_2_scatter(text)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    ax_sym = fig.axes[0]
    n_markers = _n_points(ax_sym)
    assert n_markers == (text["score"] == "symmetry").sum()
    assert ax_sym.get_xscale() == "log"


def test_null_band_is_drawn_at_each_models_dimension(published):
    null = null_scores(64, n_samples=30, seed=1)
    bands = null_band_table(null)
    assert set(bands["score"]) == {"symmetry", "directionality"}
    assert (bands["lo"] <= bands["hi"]).all()
    rows = published[(published["key"] == "bert-tiny")].assign(d_model=64)
    fig = scores_vs_parameters(rows, "symmetry", null_bands=bands)
    grey = [line for line in fig.axes[0].lines if line.get_linewidth() == 6]
    assert len(grey) == 1
    lo, hi = bands.set_index("score").loc["symmetry", ["lo", "hi"]]
    assert np.allclose(sorted(grey[0].get_ydata()), [lo, hi])


def test_null_band_quantiles_come_from_the_samples():
    null = pd.DataFrame({"d": 8, "symmetry": np.arange(101) / 100,
                         "directionality": -np.arange(101) / 100})
    b = null_band_table(null, lo=0.1, hi=0.9).set_index("score")
    assert b.at["symmetry", "lo"] == pytest.approx(0.1)
    assert b.at["directionality", "hi"] == pytest.approx(-0.1)


def test_supplementary_figures_filter_by_modality(published):
    fig = figure_s1(published)
    n = _n_points(fig.axes[0])
    vision = published[published["modality"].isin(["vision", "audio"])]
    assert n == (vision["score"] == "symmetry").sum() > 0
    assert isinstance(figure_s2(published.assign(component="encoder")), Figure)


def test_heatmap_shows_the_matrix_it_was_given():
    M = np.arange(16.0).reshape(4, 4) - 8
    long = pd.DataFrame([(r, c, M[r, c]) for r in range(4) for c in range(4)],
                        columns=["row", "col", "value"]).assign(panel="toy")
    fig = qk_heatmaps(long, max_dim=None)
    shown = fig.axes[0].images[0].get_array()
    assert np.array_equal(np.asarray(shown), M)


def _fake_scores():
    rows = []
    for pairing in ("grouped", "modulo"):
        for layer in range(3):
            for head in (-1, 0, 1):
                rows.append(dict(key="m", role="causal", layer=layer, head=head, pairing=pairing,
                                 symmetry=0.1 * layer + (pairing == "modulo") * 0.05,
                                 directionality=-0.2))
    return pd.DataFrame(rows)


def test_per_head_and_pairing_figures_draw_from_the_tidy_scores():
    df = _fake_scores()
    fig = per_head_scores(df)
    assert len(fig.axes[0].collections[0].get_offsets()) == 6  # 3 layers x 2 heads
    fig = pairing_comparison(df)
    assert len(fig.axes[0].lines) >= 2


def test_malformed_tables_are_refused_with_the_missing_columns():
    with pytest.raises(ValueError, match="lacks columns"):
        figure_2_scatter(pd.DataFrame({"median": [0.1]}))
    with pytest.raises(ValueError, match="score must be"):
        scores_vs_parameters(published_summary(), "beauty")
    with pytest.raises(ValueError, match="both pairings"):
        pairing_comparison(_fake_scores().query("pairing == 'grouped'"))
    with pytest.raises(ValueError, match="panel, row, col, value"):
        qk_heatmaps(pd.DataFrame({"x": [1]}))


def test_bias_term_figure_draws_one_line_per_model_and_dashes_the_decoders():
    import pandas as pd

    from companion.book.figures.survey import bias_term_figure

    layers = pd.DataFrame({"model": ["enc"] * 3 + ["dec"] * 2 + ["one"], "layer": [0, 1, 2, 0, 1, 0],
                           "share": [0.1, 0.2, 0.3, 0.5, 0.6, 0.05]})
    fig = bias_term_figure(layers, decoders=("dec",))
    lines = {l.get_label(): l for l in fig.axes[0].get_lines()}
    assert set(lines) == {"enc (3 layers)", "dec (2 layers, decoder)", "one (1 layers)"}
    assert lines["dec (2 layers, decoder)"].get_linestyle() == "--" and lines["enc (3 layers)"].get_linestyle() == "-"
    assert list(lines["enc (3 layers)"].get_ydata()) == [10.0, 20.0, 30.0]      # percent
    assert list(lines["enc (3 layers)"].get_xdata()) == [0.0, 0.5, 1.0]          # relative depth
