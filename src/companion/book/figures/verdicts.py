"""What survives at a glance: the training claims' primary tests in one picture.

One row per training claim as read at its last look (``training_claims.training_verdicts()``: effect, interval, d). The
horizontal axis is the effect in units of the claim's smallest effect of interest
(``estimate / sesoi``), so claims measured in different units share one axis: 0 is no
effect, 1 is the smallest effect the rules call large enough (the band between them is
shaded), and the claimed direction is to the right.  Each row shows the estimate and its
interval; the outcome is told three ways, so the figure reads in greyscale and for every
colour-vision deficiency: the marker's shape, its colour, and the outcome written at the
right edge.  A test whose gate did not pass is drawn hollow with a dashed interval.

Where the rows carry a ``status`` (the claim's verdict after the family's correction, from
``claims.verdict``), the right edge states that status, the one every page gives, and the
test's own outcome follows it labelled as such ("test alone: refuted") only where the two
differ: a per-test outcome never stands where the status belongs.  Text is set at 11 points
on a figure 7 inches wide, at least 12 px where the page shows it at 100 dpi.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ...base.errors import CompanionError
from ...rules.statistics import OUTCOMES
from .palette import CYCLE, plain

__all__ = ["OUTCOME_STYLE", "STATUS_STYLE", "claim_names", "evidence_at_a_glance", "status_overview"]

#: marker and colour of each outcome (the outcome is also written beside it)
OUTCOME_STYLE = {
    "holds": ("o", CYCLE[2]),
    "holds, size open": (">", CYCLE[0]),
    "negligible": ("D", CYCLE[3]),
    "refuted": ("X", CYCLE[1]),
    "inconclusive": ("s", CYCLE[4]),
    "not testable here": ("^", CYCLE[7]),
}
assert set(OUTCOME_STYLE) == set(OUTCOMES)

_NEEDED = ("claim", "estimate", "low", "high", "sesoi", "n", "gate", "outcome")


FONT = 11


def evidence_at_a_glance(primary: pd.DataFrame, label_width: int = 34,
                         title: str = "The training claims at their looks") -> Figure:
    """The figure described in the module's docstring, one row per row of ``primary``."""
    missing = [c for c in _NEEDED if c not in primary.columns]
    if missing:
        raise CompanionError(f"the primary tests lack the columns {missing}; pass the rows of "
                             "claims.training_tests_table(key) with 'primary' true.")
    if primary.empty:
        raise CompanionError("no primary test to draw.")
    # a missing outcome (NaN) among words: repr'd, so the refusal is sorted and names it
    unknown = sorted({repr(o) if not isinstance(o, str) else o for o in primary["outcome"]} - set(OUTCOME_STYLE))
    if unknown:
        raise CompanionError(f"unknown outcomes {unknown}; expected one of {list(OUTCOME_STYLE)}.")
    if "status" in primary.columns:   # the status every page gives: one of them, in every row
        wrong = [s for s in primary["status"] if not isinstance(s, str) or s not in STATUS_STYLE]
        if wrong:
            raise CompanionError(f"the status {wrong[0]!r} is no status a claim can have (one of {list(STATUS_STYLE)}); "
                                 "pass each row's status from claims.all_verdicts(), or leave the column out.")
    odd = [g for g in primary["gate"] if not isinstance(g, (bool, np.bool_)) and g not in (0, 1)]
    if odd:   # bool("False") is True: a gate read from text would be drawn as passed
        raise CompanionError(f"the primary tests' gate holds {odd[0]!r}, not True or False; pass the rows of "
                             "claims.training_tests_table(key), or turn the column into booleans.")
    sesoi = pd.to_numeric(primary["sesoi"], errors="coerce").to_numpy(float)
    if not np.all(np.isfinite(sesoi) & (sesoi > 0)):
        raise CompanionError("every primary test needs a positive, finite smallest effect of interest.")
    est = primary["estimate"].to_numpy(float) / sesoi
    lo = primary["low"].to_numpy(float) / sesoi
    hi = primary["high"].to_numpy(float) / sesoi
    n = pd.to_numeric(primary["n"], errors="coerce").to_numpy(float)
    testable = (primary["outcome"] != "not testable here").to_numpy()
    bad = testable & ~(np.isfinite(n) & (n >= 0) & (n == np.round(n)))
    if bad.any():   # NaN read as an int was -2**63: the interval dropped without a word
        raise CompanionError(f"the primary test of {primary['claim'].iloc[int(np.argmax(bad))]!r} has n = "
                             f"{primary['n'].iloc[int(np.argmax(bad))]!r}, not a whole number of seeds; "
                             "pass the rows of claims.training_tests_table(key).")
    n = np.nan_to_num(n, nan=0.0).astype(int)
    # a row the figure would draw untruthfully: an interval whose ends are swapped (drawn as the
    # same segment) or a decided outcome with no estimate (written beside no marker)
    decided = primary["outcome"].isin(["holds", "holds, size open", "negligible", "refuted"]).to_numpy()
    bad = decided & ~np.isfinite(est) | (n > 1) & np.isfinite(lo) & np.isfinite(hi) & (lo > hi)
    if bad.any():
        k = int(np.argmax(bad))
        raise CompanionError(f"the primary test of {primary['claim'].iloc[k]!r} has estimate "
                             f"{primary['estimate'].iloc[k]!r} and interval {primary['low'].iloc[k]!r} to "
                             f"{primary['high'].iloc[k]!r}: no estimate, or the interval's ends swapped; pass the "
                             "rows of claims.training_tests_table(key).")
    rows = len(primary)
    fig = Figure(figsize=(7.0, 0.75 * rows + 2.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.axvspan(0, 1, color="0.87", zorder=0, label="below the smallest effect of interest")
    ax.axvline(0, color="black", lw=0.8)
    ax.axvline(1, color="black", lw=0.8, ls=":")
    finite = np.concatenate([est, lo[n > 1], hi[n > 1]])
    finite = finite[np.isfinite(finite)]
    left = min(-1.0, float(finite.min()) - 0.3) if finite.size else -1.0
    right = max(2.0, float(finite.max()) + 0.3) if finite.size else 2.0
    seen = set()
    for k, r in enumerate(primary.itertuples(index=False)):
        y = rows - 1 - k
        marker, colour = OUTCOME_STYLE[r.outcome]
        gate = bool(r.gate)
        if n[k] > 1 and np.isfinite(lo[k]) and np.isfinite(hi[k]):
            ax.plot([lo[k], hi[k]], [y, y], color=colour, lw=2, ls="-" if gate else "--",
                    solid_capstyle="butt")
        label = r.outcome if r.outcome not in seen else None
        seen.add(r.outcome)
        ax.plot([est[k]], [y], marker=marker, ms=9, ls="none", color=colour,
                markerfacecolor=colour if gate else "white", markeredgewidth=1.8, label=label)
        words = r.outcome + ("" if gate else " (gate not passed)")
        status = getattr(r, "status", None)
        if status is not None:
            words = status if status == r.outcome else f"{status}\n(test alone: {words})"
        ax.annotate(plain(words), xy=(1.01, y), xycoords=("axes fraction", "data"), va="center",
                    fontsize=FONT - 1)
    full = [str(c) for c in primary["claim"]]
    cut = [c if len(c) <= label_width else c[:label_width - 1] + "…" for c in full]
    # a name the cut makes equal to another's keeps its end instead ("…ining, encoder")
    cut = [c if cut.count(c) == 1 else "…" + f[-(label_width - 1):] for c, f in zip(cut, full)]
    # two names that differ only between the kept start and end read alike either way: whole
    cut = [c if cut.count(c) == 1 else f for c, f in zip(cut, full)]
    names = [plain(c) for c in cut]
    ax.set_yticks(range(rows - 1, -1, -1), names, fontsize=FONT)
    ax.set_ylim(-0.7, rows - 0.3)
    ax.set_xlim(left, right)
    ax.set_xlabel("effect / smallest effect of interest\n(claimed direction to the right; "
                  "interval over seeds)", fontsize=FONT)
    ax.set_title(plain(title), fontsize=FONT + 1)
    ax.tick_params(axis="x", labelsize=FONT)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, fontsize=FONT - 1, frameon=False)
    fig.subplots_adjust(left=0.26, right=0.62, bottom=0.36 if rows < 5 else 0.26)
    return fig


#: marker and colour of every status a claim can have (the rules' outcomes and the statuses
#: that only whole claims take), in the order the overview's columns show them
STATUS_STYLE = {
    "holds": OUTCOME_STYLE["holds"],
    "holds with a correction": ("P", CYCLE[5]),
    "holds, size open": OUTCOME_STYLE["holds, size open"],
    "negligible": OUTCOME_STYLE["negligible"],
    "premise fails": ("v", CYCLE[6]),
    "inconclusive": OUTCOME_STYLE["inconclusive"],
    "refuted": OUTCOME_STYLE["refuted"],
    "not testable here": OUTCOME_STYLE["not testable here"],
}


def claim_names(verdicts: pd.DataFrame) -> list[str]:
    """Each row's claim as the paper names it: its ``key``'s name
    (:data:`companion.book.tables.CLAIM_NAMES`), else the text of ``claim`` before its colon
    ("Prop. 2.1: softmax keeps ..." gives "Prop. 2.1").  Never ``label``, which is the page
    anchor of the claim's evidence (``ro-beta``, ``f3-gate``), shared by two claims or empty.
    Two rows with one name, or a row with none, are an error naming them."""
    from ..tables import CLAIM_NAMES

    heads = verdicts["claim"].astype(str).str.split(":").str[0].str.strip()
    keys = verdicts["key"].astype(str) if "key" in verdicts.columns else pd.Series([""] * len(verdicts))
    names = [CLAIM_NAMES.get(k, h) for k, h in zip(keys, heads)]
    empty = [i for i, n in enumerate(names) if not n]
    twice = sorted({n for n in names if names.count(n) > 1})
    if empty or twice:
        raise CompanionError(f"claims without a name (rows {empty}) or named twice ({twice}): give each a "
                             "key of companion.book.tables.CLAIM_NAMES or a claim text 'Name: ...'.")
    return names


def status_overview(verdicts: pd.DataFrame) -> Figure:
    """Every claim's status in one picture: one row per claim (named as the paper names it,
    :func:`claim_names`), one column per status, a
    marker where the claim's status is.  Rows keep the order of ``verdicts`` (the paper's);
    a rule separates the mathematical claims from the empirical ones where ``kind`` is given.
    Shape, colour and column all tell the status, so it reads in greyscale."""
    missing = [c for c in ("claim", "status") if c not in verdicts.columns]
    if missing:
        raise CompanionError(f"the verdicts lack the columns {missing}; pass claims.all_verdicts().")
    if verdicts.empty:
        raise CompanionError("no claim to draw.")
    unknown = sorted({repr(s) if not isinstance(s, str) else s for s in verdicts["status"]} - set(STATUS_STYLE))
    if unknown:   # a missing status (NaN) among words: repr'd, so the refusal is sorted and names it
        raise CompanionError(f"unknown statuses {unknown}; expected one of {list(STATUS_STYLE)}.")
    labels = claim_names(verdicts)
    columns = list(STATUS_STYLE)
    rows = len(verdicts)
    fig = Figure(figsize=(7.0, 0.3 * rows + 2.4))
    ax = fig.add_subplot(1, 1, 1)
    for j in range(len(columns)):
        ax.axvline(j, color="0.9", lw=0.8, zorder=0)
    for k, status in enumerate(verdicts["status"]):
        y = rows - 1 - k
        ax.axhline(y, color="0.94", lw=0.6, zorder=0)
        marker, colour = STATUS_STYLE[status]
        ax.plot([columns.index(status)], [y], marker=marker, ms=10, ls="none", color=colour,
                markeredgecolor="black", markeredgewidth=0.6)
    if "kind" in verdicts.columns:
        kinds = verdicts["kind"].tolist()
        for k in range(1, rows):
            if kinds[k] != kinds[k - 1]:
                ax.axhline(rows - k - 0.5, color="black", lw=0.8)
    ax.set_yticks(range(rows - 1, -1, -1), [plain(n) for n in labels], fontsize=FONT)
    ax.set_xticks(range(len(columns)), columns, rotation=35, ha="left", fontsize=FONT)
    ax.xaxis.tick_top()
    ax.set_xlim(-0.5, len(columns) - 0.5)
    ax.set_ylim(-0.6, rows - 0.4)
    ax.tick_params(axis="both", length=0)
    for side in ("right", "bottom", "left", "top"):
        ax.spines[side].set_visible(False)
    fig.subplots_adjust(left=0.36, right=0.98, top=1 - 2.0 / (0.3 * rows + 2.4), bottom=0.02)
    return fig
