"""The chapters' glue helpers paste text without quotes and numbers as Python numbers."""

import numpy as np

from companion.book import paste


def test_text_and_numbers_reach_glue_as_the_prose_shows_them(monkeypatch):
    import myst_nb

    seen = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.update({name: (value, display)}))
    paste.glue_text("status", "holds, size open")
    paste.glue_number("share", np.float32(0.25))
    value, display = seen["status"]
    assert repr(value) == "holds, size open" and display is False       # no quotes where it is pasted
    number, display = seen["share"]
    assert type(number) is float and f"{number:.2f}" == "0.25" and display is False


def test_a_figure_reaches_glue_as_the_figure_itself(monkeypatch):
    import myst_nb

    seen = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.update({name: (value, display)}))
    fig = object()
    paste.glue_figure("fig_forms", fig)
    assert seen["fig_forms"][0] is fig and seen["fig_forms"][1] is False


def test_no_nan_or_infinity_reaches_a_sentence(monkeypatch):
    """A non-finite number would be pasted as 'nan' or 'inf' in the prose: both helpers refuse
    it in one line naming the glued name, and glue nothing."""
    import myst_nb
    import pytest

    seen = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.update({name: value}))
    for bad in (float("nan"), np.float64("inf"), -np.inf, np.float32("nan")):
        with pytest.raises(ValueError, match=r"glue_number\('peak'\).*non-finite"):
            paste.glue_number("peak", bad)
    for bad in ("nan", "peaks nan and 0.3", "-inf", "between 0.1 and Infinity", "[0.2, NaN]"):
        with pytest.raises(ValueError, match=r"glue_text\('peaks'\).*non-finite"):
            paste.glue_text("peaks", bad)
    with pytest.raises(TypeError, match=r"glue_number\('n'\): list .* is not a number"):
        paste.glue_number("n", [1, 2])
    assert seen == {}
    # words that only contain the letters, and large but finite numbers, are glued as before
    paste.glue_text("words", "a financial nanny, infinite ranges, Nancy")
    paste.glue_number("big", 1e300)
    paste.glue_number("count", np.int64(7))
    assert seen == {"words": "a financial nanny, infinite ranges, Nancy", "big": 1e300, "count": 7}
    assert type(seen["count"]) is int
