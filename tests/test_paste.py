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
