"""A figure's source data and alt text (``companion.book.figures.source_data``): lines, spans
and bands drawn in axes fractions are written in data coordinates, and categorical bar
labels are kept, so the CSV and the alt text say what the figure shows."""

from __future__ import annotations

import numpy as np
import pytest


def _figure_csv(fig):
    import matplotlib.pyplot as plt

    from companion.book.figures import source_data as sd

    png, meta = sd.figure_bundle(fig)
    plt.close(fig)
    return sd.read_csv_text(sd.decode_csv(meta["companion"]["csv"])), meta["alt"]


def test_an_axhline_is_written_in_data_coordinates_and_so_is_its_alt_text():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([10, 20], [3.0, 5.0], label="data")
    ax.axhline(4.0, label="threshold")                 # x in axes fraction, [0, 1]
    ax.axvline(15.0, label="half")                     # y in axes fraction
    ax.plot([0, 1], [0, 1], transform=ax.transAxes, label="diagonal")
    xlim, ylim = ax.get_xlim(), ax.get_ylim()
    csv, alt = _figure_csv(fig)
    h = csv[csv["series"] == "threshold"]
    np.testing.assert_allclose(h["x"], xlim) and np.testing.assert_allclose(h["y"], [4.0, 4.0])
    np.testing.assert_allclose(csv[csv["series"] == "half"]["y"], ylim)
    np.testing.assert_allclose(csv[csv["series"] == "diagonal"][["x", "y"]].to_numpy(), np.array([xlim, ylim]).T)
    assert f"threshold: a line of 2 points, x from {xlim[0]:.3g} to {xlim[1]:.3g}, y 4" in alt, alt
    assert "from 0 to 1" not in alt


@pytest.mark.parametrize("span", ["axvspan", "axhspan"])
def test_a_span_is_a_band_in_data_coordinates_not_a_bar(span):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 10], [0, 100])
    getattr(ax, span)(2.0, 3.0) if span == "axvspan" else ax.axhspan(20.0, 30.0)
    ax.bar([5.0], [40.0], width=1.0, label="one bar")
    xlim, ylim = ax.get_xlim(), ax.get_ylim()
    csv, alt = _figure_csv(fig)
    assert csv[csv["element"] == "bars"]["value"].tolist() == [40.0]     # the bar, and only the bar
    band = csv[csv["element"] == "band"]
    assert len(band) == 4, csv
    if span == "axvspan":
        assert sorted(set(band["x"])) == [2.0, 3.0] and np.allclose(sorted(set(band["y"])), ylim)
    else:
        assert sorted(set(band["y"])) == [20.0, 30.0] and np.allclose(sorted(set(band["x"])), xlim)
    assert "1 bars" in alt and "2 bars" not in alt


def test_categorical_bar_labels_are_kept():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2)
    a.bar(["gpt2", "bert", "t5"], [0.3, -0.1, 0.2], label="symmetry")
    b.barh(["encoder", "decoder"], [4.0, 2.0], label="runs")
    csv, alt = _figure_csv(fig)
    assert csv[csv["series"] == "symmetry"]["category"].tolist() == ["gpt2", "bert", "t5"]
    assert csv[csv["series"] == "runs"]["category"].tolist() == ["encoder", "decoder"]
    assert csv[csv["series"] == "symmetry"]["x"].tolist() == [0.0, 1.0, 2.0]   # positions stay numbers
    assert "3 bars (gpt2, bert, t5)" in alt and "2 bars (encoder, decoder)" in alt


def test_a_band_drawn_in_axes_fraction_is_written_in_data_coordinates():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 10], [5, 7])
    ax.fill_between([2, 4], 0, 1, transform=ax.get_xaxis_transform(), label="warm-up")
    ylim = ax.get_ylim()
    csv, _ = _figure_csv(fig)
    band = csv[csv["series"] == "warm-up"]
    assert set(band["x"]) <= {2.0, 4.0} and np.allclose(sorted(set(band["y"])), ylim)
