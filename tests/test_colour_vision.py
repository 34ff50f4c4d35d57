"""The book's colours stay distinguishable for the common colour-vision deficiencies.

Each colour is simulated for protanopia, deuteranopia and tritanopia with the matrices of
Machado, Oliveira & Fernandes (2009, IEEE TVCG 15(6), severity 1.0, applied in linear RGB),
then compared in CIELAB (CIE76 distance, D65).  A CIE76 distance of about 2.3 is a
just-noticeable difference; the thresholds below ask for differences plainly visible on
small markers and thin lines.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from matplotlib import colormaps
from matplotlib.colors import to_rgb

from companion.book.figures import palette

ROOT = Path(__file__).resolve().parents[1]

MACHADO = {
    "protanopia": [[0.152286, 1.052583, -0.204868],
                   [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968],
                     [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779],
                   [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}
VISION = {"normal": np.eye(3).tolist(), **MACHADO}

MIN_PALETTE_DISTANCE = 15.0   # any two colours of a palette
MIN_MAP_ENDS = 30.0           # the two ends of a colour map
MIN_MAP_STEP = 3.0            # neighbouring samples of 16 along a map


def _linear(srgb):
    c = np.asarray(srgb, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _srgb(linear):
    c = np.clip(linear, 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def simulate(srgb, deficiency: str):
    """sRGB colours (..., 3) as seen with ``deficiency`` (Machado et al. 2009)."""
    return _srgb(_linear(srgb) @ np.asarray(VISION[deficiency]).T)


def lab(srgb):
    xyz = _linear(srgb) @ np.array([[0.4124, 0.3576, 0.1805],
                                    [0.2126, 0.7152, 0.0722],
                                    [0.0193, 0.1192, 0.9505]]).T
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]),
                     200 * (f[..., 1] - f[..., 2])], axis=-1)


def _distance(a, b, deficiency):
    return float(np.linalg.norm(lab(simulate(a, deficiency)) - lab(simulate(b, deficiency))))


def _closest_pair(colors, deficiency):
    rgb = [np.array(to_rgb(c)) for c in colors]
    return min((_distance(rgb[i], rgb[j], deficiency), colors[i], colors[j])
               for i, j in itertools.combinations(range(len(rgb)), 2))


# ------------------------------------------------------------------ the simulation itself
def test_simulation_keeps_white_and_black_and_merges_red_and_green_for_deuteranopes():
    for deficiency in MACHADO:
        assert np.allclose(simulate([1.0, 1.0, 1.0], deficiency), 1.0, atol=2e-3)
        assert np.allclose(simulate([0.0, 0.0, 0.0], deficiency), 0.0)
    # a classic confusion pair: visible to normal vision, nearly the same to a deuteranope
    red, green = to_rgb("#d62728"), to_rgb("#2ca02c")
    assert _distance(red, green, "normal") > 60
    assert _distance(red, green, "deuteranopia") < _distance(red, green, "normal") / 3
    # blue/yellow survive red-green deficiencies but not tritanopia as well
    blue, teal = to_rgb("#0072B2"), to_rgb("#009E73")
    assert _distance(blue, teal, "tritanopia") < _distance(blue, teal, "deuteranopia")


def test_the_check_rejects_a_palette_that_is_not_safe():
    # matplotlib's default cycle: blue, orange, green, red -- orange and green merge
    tab = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]
    worst = min(_closest_pair(tab, d)[0] for d in MACHADO)
    assert worst < MIN_PALETTE_DISTANCE


# ------------------------------------------------------------------ the book's colours
@pytest.mark.parametrize("deficiency", list(VISION))
def test_the_line_cycle_stays_distinguishable(deficiency):
    dist, a, b = _closest_pair(palette.CYCLE, deficiency)
    assert dist >= MIN_PALETTE_DISTANCE, f"{deficiency}: {a} and {b} are {dist:.1f} apart in CIELAB"


@pytest.mark.parametrize("deficiency", list(VISION))
def test_encoder_and_decoder_colours_stay_distinguishable(deficiency):
    colors = list(palette.KIND_COLORS.values())
    dist, a, b = _closest_pair(colors, deficiency)
    assert dist >= 2 * MIN_PALETTE_DISTANCE, f"{deficiency}: {a} and {b} are {dist:.1f} apart"
    # and colour is not the only cue: the kinds' error bars differ in line style
    assert len(set(palette.KIND_STYLES.values())) == len(palette.KIND_STYLES)


@pytest.mark.parametrize("deficiency", list(VISION))
@pytest.mark.parametrize("role", list(palette.COLORMAPS))
def test_colour_maps_stay_readable(role, deficiency):
    cmap = colormaps[palette.COLORMAPS[role]]
    samples = np.array([cmap(x)[:3] for x in np.linspace(0, 1, 16)])
    seen = lab(simulate(samples, deficiency))
    ends = float(np.linalg.norm(seen[0] - seen[-1]))
    assert ends >= MIN_MAP_ENDS, f"{role} map {cmap.name}: ends {ends:.1f} apart for {deficiency}"
    steps = np.linalg.norm(np.diff(seen, axis=0), axis=1)
    assert steps.min() >= MIN_MAP_STEP, (
        f"{role} map {cmap.name}: a step of {steps.min():.1f} for {deficiency} (flat stretch)")
    if role == "diverging":  # both halves stay apart from the neutral middle
        mid = seen[len(seen) // 2]
        assert min(np.linalg.norm(seen[0] - mid), np.linalg.norm(seen[-1] - mid)) >= MIN_MAP_ENDS / 2
    else:  # a sequential map is read by lightness, which must rise monotonically
        assert np.all(np.diff(seen[:, 0]) > 0), f"{cmap.name}: lightness not monotonic for {deficiency}"


def test_figure_modules_use_only_the_book_palette_for_categories():
    """Categorical colours in the figure helpers come from companion.book.figures.palette."""
    import re

    allowed = {c.lower() for c in palette.CYCLE + list(palette.KIND_COLORS.values())}
    for path in (ROOT / "src" / "companion" / "figures").glob("*.py"):
        if path.name == "palette.py":
            continue
        for hexcode in re.findall(r"#[0-9a-fA-F]{6}\b", path.read_text(encoding="utf-8")):
            assert hexcode.lower() in allowed, f"{path.name}: colour {hexcode} is not in the book's palette"
        for cmap in re.findall(r"cmap=\"(\w+)\"|plt\.cm\.(\w+)|colormaps\[\"(\w+)\"\]", path.read_text(encoding="utf-8")):
            name = next(n for n in cmap if n)
            assert name in palette.COLORMAPS.values(), f"{path.name}: colour map {name} is not checked"


def test_the_book_kernels_use_the_palette():
    startup = ROOT / "book" / "_ipython" / "profile_default" / "startup" / "00_figures_as_images.py"
    assert "_use_book_defaults()" in startup.read_text(encoding="utf-8")
    import matplotlib as mpl
    import pandas as pd

    from companion.book.kernel import use_book_defaults

    with mpl.rc_context(), pd.option_context("display.max_colwidth", 50):
        use_book_defaults()
        assert [c.lower() for c in mpl.rcParams["axes.prop_cycle"].by_key()["color"]] == \
            [c.lower() for c in palette.CYCLE]
        # and a table's cell reaches the reader whole (pandas would cut it at 50 characters)
        sentence = "+0.1091 [-0.129, +0.348], 99.99% repeated interval, look 1 of 4"
        assert sentence in pd.DataFrame({"effect": [sentence]})._repr_html_()
