"""What survives at a glance: each test is drawn where its numbers say, and its outcome is
told by shape and words, not by colour alone."""

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from companion.base.errors import CompanionError
from companion.book.figures.source_data import alt_text, figure_data
from companion.book.figures.verdicts import OUTCOME_STYLE, evidence_at_a_glance
from companion.rules.statistics import OUTCOMES


def _primary():
    rows = []
    for k, outcome in enumerate(OUTCOMES):
        rows.append({"claim": f"claim {k}", "estimate": 0.01 * (k + 1), "low": -0.02 * k,
                     "high": 0.03 * (k + 1), "sesoi": 0.05, "n": 3, "gate": outcome != "not testable here",
                     "outcome": outcome})
    rows.append({"claim": "one seed", "estimate": 0.2, "low": np.nan, "high": np.nan, "sesoi": 0.1,
                 "n": 1, "gate": False, "outcome": "not testable here"})
    return pd.DataFrame(rows)


def test_each_estimate_and_interval_is_drawn_in_units_of_its_smallest_effect():
    p = _primary()
    fig = evidence_at_a_glance(p)
    ax = fig.axes[0]
    markers = [l for l in ax.lines if l.get_marker() not in ("None", None, "")]
    xs = sorted(float(l.get_xdata()[0]) for l in markers)
    assert xs == pytest.approx(sorted((p["estimate"] / p["sesoi"]).tolist()))
    bars = [l for l in ax.lines if len(l.get_xdata()) == 2 and l.get_marker() in ("None", "")
            and l.get_ydata()[0] == l.get_ydata()[1]]          # horizontal: not the reference lines
    spans = np.array(sorted((float(l.get_xdata()[0]), float(l.get_xdata()[1])) for l in bars))
    keep = p["n"] > 1
    want = np.array(sorted(zip(p["low"][keep] / p["sesoi"][keep], p["high"][keep] / p["sesoi"][keep])))
    assert spans.shape == want.shape                # no interval for the one-seed row
    assert np.allclose(spans, want)


def test_outcomes_are_written_and_shaped_not_only_coloured():
    p = _primary()
    ax = evidence_at_a_glance(p).axes[0]
    words = [t.get_text() for t in ax.texts]
    for outcome, gate in zip(p["outcome"], p["gate"]):
        assert (outcome if gate else outcome + " (gate not passed)") in words
    shapes = {m for m, _ in OUTCOME_STYLE.values()}
    assert len(shapes) == len(OUTCOME_STYLE)        # a distinct marker per outcome
    hollow = [l for l in ax.lines if l.get_marker() not in ("None", "") and l.get_markerfacecolor() == "white"]
    assert len(hollow) == int((~p["gate"]).sum())


def test_the_figure_gives_its_data_and_a_text_alternative():
    fig = evidence_at_a_glance(_primary())
    data = figure_data(fig)
    assert len(data) > 0
    assert "The training claims" in alt_text(fig, data)


@pytest.mark.parametrize("change, match", [
    (lambda p: p.drop(columns="sesoi"), "lack the columns"),
    (lambda p: p.assign(outcome="holds strongly"), "unknown outcomes"),
    (lambda p: p.assign(sesoi=0.0), "positive, finite"),
    (lambda p: p.iloc[:0], "no primary test"),
])
def test_bad_input_is_refused_in_one_line(change, match):
    with pytest.raises(CompanionError, match=match):
        evidence_at_a_glance(change(_primary()))


def test_the_status_after_the_correction_is_written_and_the_tests_own_outcome_labelled():
    p = _primary()
    p = p.assign(status=["inconclusive"] + list(p["outcome"].iloc[1:]))
    ax = evidence_at_a_glance(p).axes[0]
    words = [t.get_text() for t in ax.texts]
    first = p.iloc[0]
    own = first["outcome"] + ("" if first["gate"] else " (gate not passed)")
    assert f"inconclusive\n(test alone: {own})" in words
    assert not any(w == own for w in words[:1])          # the test's outcome never stands alone for it
    for status, gate in zip(p["status"].iloc[1:], p["gate"].iloc[1:]):
        assert any(w.startswith(status) for w in words)


def test_every_text_of_the_figure_is_at_least_12_px_at_100_dpi():
    fig = evidence_at_a_glance(_primary())
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text()]
    assert min(sizes) * 100 / 72 >= 12


def _verdicts():
    from companion.book.figures.verdicts import STATUS_STYLE

    statuses = list(STATUS_STYLE)
    return pd.DataFrame({"claim": [f"Prop. {k}: claim {k}" for k in range(12)],
                         "status": [statuses[(3 * k) % len(statuses)] for k in range(12)],
                         "kind": ["mathematical"] * 5 + ["empirical"] * 7})


def test_the_overview_puts_each_claim_in_the_column_of_its_status_in_the_papers_order():
    from companion.book.figures.verdicts import STATUS_STYLE, status_overview

    v = _verdicts()
    fig = status_overview(v)
    ax = fig.axes[0]
    columns = [t.get_text() for t in ax.get_xticklabels()]
    assert columns == list(STATUS_STYLE)
    names = [t.get_text() for _, t in sorted(zip(ax.get_yticks(), ax.get_yticklabels()), key=lambda p: -p[0])]
    assert names == [f"Prop. {k}" for k in range(12)]          # top row first, named by the paper
    markers = [l for l in ax.lines if l.get_marker() not in ("None", None, "")]
    drawn = sorted((int(round(l.get_ydata()[0])), columns[int(round(l.get_xdata()[0]))]) for l in markers)
    want = sorted((len(v) - 1 - k, s) for k, s in enumerate(v["status"]))
    assert drawn == want
    # one rule between the mathematical and the empirical claims
    assert [l for l in ax.lines if l.get_ydata()[0] == l.get_ydata()[-1] == len(v) - 5 - 0.5]
    # each status has its own shape, so the figure reads without colour
    assert len({m for m, _ in STATUS_STYLE.values()}) == len(STATUS_STYLE)


def test_the_overview_refuses_an_unknown_status_naming_it():
    from companion.book.figures.verdicts import status_overview

    with pytest.raises(CompanionError, match="unknown statuses \\['mostly'\\]"):
        status_overview(pd.DataFrame({"claim": ["a: b"], "status": ["mostly"]}))
    with pytest.raises(CompanionError, match="lack the columns"):
        status_overview(pd.DataFrame({"claim": ["a: b"]}))


def test_a_status_the_family_withholds_is_written_first_and_the_reading_alone_after_it():
    p = _primary()
    p = p.assign(status=["inconclusive"] + list(p["outcome"].iloc[1:]))
    fig = evidence_at_a_glance(p, title="at their looks")
    words = [t.get_text() for t in fig.axes[0].texts]
    first = p.iloc[0]
    own = first["outcome"] + ("" if first["gate"] else " (gate not passed)")
    assert words[0] == (f"inconclusive\n(test alone: {own})" if first["outcome"] != "inconclusive" else "inconclusive")
    assert fig.axes[0].get_title() == "at their looks" and not any("rules v" in w for w in words)
