"""Numbers, counts, intervals and statuses in words, the pieces of every computed sentence."""

from __future__ import annotations

from ..base.phrasing import interval, joined

__all__ = ["MISSING", "count_of", "COUNT_WORDS", "status_counts", "check_notes", "holds_or_not",
           "outcomes_agree", "p_value", "interval_reading", "estimate_in_words", "labelled_intervals",
           "lower_or_higher", "less_or_more_than", "design_targets", "algebra_holds", "percent"]


#: what a sentence says in place of a number that is missing (NaN, infinite, None): never "nan"
MISSING = "missing"


def _finite(*values) -> bool:
    """Whether every value is a finite number (a NaN, an infinity, None, text or a bool is not):
    :func:`companion.base.phrasing.finite`, the one guard."""
    from ..base.phrasing import finite

    return finite(*values)


def _num(value, fmt: str) -> str:
    """``value`` in ``fmt``, or :data:`MISSING` where it is not a finite number.  A zero (-0.0
    included) prints as ``+0.000``, never ``-0.000``; a number that is not zero but would round
    to zero in ``fmt`` prints with up to three more decimals (``-0.0004``), else in two significant
    digits (``-3.7e-08``), so its sign, which a
    sentence may read a direction from, is never printed away."""
    if not _finite(value):
        return MISSING
    import re

    v = float(value) or 0.0          # -0.0 -> +0.0
    text = format(v, fmt)
    fixed = re.fullmatch(r"(\+?)\.(\d+)f", fmt)
    if v and fixed and float(text) == 0:   # up to three more decimals (0.0004), then two digits (3.7e-08)
        sign, places = fixed.group(1), int(fixed.group(2))
        text = next((t for t in (format(v, f"{sign}.{places + k}f") for k in (1, 2, 3)) if float(t) != 0),
                    format(v, f"{sign}.1e"))
    return text


def _ordered(low, high) -> None:
    """Refuse an interval whose lower end is above its upper end (the two passed the wrong way
    round): every reading of it (a direction, what it excludes) would be one the numbers never
    showed.  Bounds that are not numbers are left to the caller's missing reading."""
    if _finite(low, high) and float(low) > float(high):
        from ..base.errors import CompanionError

        raise CompanionError(f"an interval's lower end {float(low)!r} is above its upper end {float(high)!r}; "
                             "pass (low, high) in that order.")


def _part_of(part, whole, what: str) -> None:
    """Refuse, in one line, a count ``part`` of ``whole`` that is no whole number >= 0 or is
    larger than its whole: '5 of 3 seed pairs' counts pairs that are not there."""
    from ..base.phrasing import count

    part, whole = count(part, f"count of {what}"), count(whole, f"number of {what}")
    if part > whole:
        raise ValueError(f"{part} of {whole} {what}: a part is more than its whole; pass the counts of one set.")


def percent(share: float, marks=(0.0, 1.0)) -> str:
    """``share`` as a percentage with the fewest decimals (none at first) that keep it on its own
    side of each of ``marks``: 0.996 reads ``99.6%``, never ``100%`` (which says every pair),
    and 0.004 reads ``0.4%``, never ``0%``; :data:`MISSING` where it is not a number."""
    if not _finite(share):
        return MISSING
    share = float(share) or 0.0
    if not -1e-12 <= share <= 1 + 1e-12:   # a share of all: 1.5 would read '150%' of the pairs
        from ..base.errors import CompanionError

        raise CompanionError(f"a share lies in [0, 1]; got {share!r}: pass a count over its total, not a percentage.")
    share = min(max(share, 0.0), 1.0)
    for digits in range(12):
        shown = round(share * 100, digits) / 100
        if all((shown < m) == (share < m) and (shown > m) == (share > m) for m in marks):
            break
    return f"{share:.{digits}%}"


def count_of(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 seed"``, ``"3 seeds"``, ``"0 seeds"``; a count written as text (``"6 of 12"``) is
    kept as it is.  A number that is no whole number >= 0 (NaN, 2.5, -1, a bool) is refused in
    one line (:func:`companion.base.phrasing.count`): 'nan seeds' or '2.5 seeds' is no count;
    ``3.0`` reads ``3``."""
    from ..base.phrasing import count

    if not isinstance(n, str):
        n = count(n, f"count of {plural or noun + 's'}")
    return f"{n} {noun if str(n).strip() == '1' else (plural or noun + 's')}"


#: each status as the verb phrase of a count, for one claim and for several ("1 is refuted",
#: "3 hold as printed")
COUNT_WORDS = {"holds": ("holds as printed", "hold as printed"),
               "holds with a correction": ("holds once corrected", "hold once corrected"),
               "holds, size open": ("holds in direction with the size left open",
                                    "hold in direction with the size left open"),
               "negligible": ("is negligible", "are negligible"),
               "premise fails": ("rests on a premise that fails where measured",
                                 "rest on a premise that fails where measured"),
               "inconclusive": ("is inconclusive", "are inconclusive"),
               "refuted": ("is refuted", "are refuted"),
               "not testable here": ("is not testable on the runs made here", "are not testable on the runs made here")}


def status_counts(n_claims: int, counts) -> str:
    """``Of the 24 claims, 10 hold as printed and 2 are refuted``: ``counts`` maps each status
    to its number of claims, in the order to be read; zero counts are left out."""
    from ..base.errors import CompanionError
    from ..base.phrasing import count

    counts = dict(counts)
    if unknown := sorted(str(st) for st in counts if st not in COUNT_WORDS):
        raise CompanionError(f"no words for the status {unknown[0]!r}; statuses are {', '.join(COUNT_WORDS)}.")
    n_claims = count(n_claims, "number of claims")
    counts = {st: count(n, f"count of claims that are {st!r}") for st, n in counts.items()}
    if sum(counts.values()) > n_claims:   # 'Of the 3 claims, 5 hold' counts claims that are not there
        raise CompanionError(f"the status counts add up to {sum(counts.values())}, more than the {n_claims} claims; "
                             "count each claim once.")
    return f"Of the {count_of(n_claims, 'claim')}, " + joined(
        f"{n} {COUNT_WORDS[status][0 if n == 1 else 1]}" for status, n in counts.items() if n)


def check_notes(check: str, power: str = "", holm: str = "", rule_after: bool = False) -> str:
    """A verdict's check column: the check, then its power, its family's correction and
    whether its rule was written after the evidence, each when there is one."""
    return (check + (f"; power: {power}" if power else "") + (f"; {holm}" if holm else "")
            + ("; rule written after the evidence" if rule_after else ""))


def holds_or_not(holds: bool | None, missing: str = "cannot be checked in this build") -> str:
    """A claim checked on one case: ``holds``, ``does not hold``, or ``missing`` (None: the
    case could not be read)."""
    if holds is None:
        return missing
    return "holds" if holds else "does not hold"


def outcomes_agree(differing) -> str:
    """Whether two ways of counting give the same outcome, as the predicate of "The two
    counts ...": ``differing`` names the scores whose outcomes differ."""
    differing = list(differing)
    if not differing:
        return "give the same outcome for both scores"
    return "give different outcomes for " + joined(differing)


def p_value(p: float, smallest: float) -> str:
    """``p = 0.0012``, and ``, the smallest value it can reach`` when an exact test's p-value
    is its floor (equal to ``smallest`` up to rounding, as ``numpy.isclose(p, smallest,
    rtol=1e-9)`` reads it)."""
    if not _finite(p):
        return "p missing (not a number)"
    if not -1e-12 <= p <= 1 + 1e-12:   # a probability: 1.5 or -0.001 would state an impossible result
        from ..base.errors import CompanionError

        raise CompanionError(f"a p-value must lie in [0, 1]; got p = {p!r}: check the test that computed it.")
    p = min(max(float(p), 0.0), 1.0)
    floor = _finite(smallest) and abs(p - smallest) <= 1e-8 + 1e-9 * abs(smallest)
    # below 0.001 four decimals keep one digit or none (3e-6 read "p = 0.0000"): two significant digits
    shown = f"{p:.4f}" if p >= 0.001 or p == 0 else f"{p:.1e}"
    return f"p = {shown}" + (", the smallest value it can reach" if floor else "")


def interval_reading(low: float, high: float, sesoi: float, unit: str = "", gain: str = "a gain",
                     loss: str = "a loss") -> str:
    """What an interval for an effect (> 0: ``gain``) rules out and what it leaves open, at
    the smallest effect of interest ``sesoi``: e.g. 'its interval, -0.052 to +0.031 nats,
    excludes a gain of 0.037 nats or more; it leaves open no effect at all and a loss of
    0.037 nats or more'.  Each reading is decided by the interval alone, so the sentence
    cannot say more than the interval does; an interval or yardstick that is not a number is
    said to be missing, and rules nothing out."""
    u = f" {unit}" if unit else ""
    if not _finite(low, high, sesoi):
        return (f"its interval is missing (a bound or the smallest effect of interest is not a number), "
                "so it rules nothing out")
    _ordered(low, high)
    if sesoi <= 0:   # 'a gain of -0.050 or more' is no yardstick: each reading below would be decided wrongly
        from ..base.errors import CompanionError

        raise CompanionError(f"the smallest effect of interest must be a number > 0; got {sesoi!r}: pass its size, "
                             "not a signed effect.")
    size = f"{_num(sesoi, '.3f')}{u} or more"   # 0.0004, never '0.000'
    readings = [(f"{gain} of {size}", high < sesoi), ("no effect at all", low > 0 or high < 0),
                (f"{loss} of {size}", low > -sesoi)]
    out = [r for r, excluded in readings if excluded]
    left = [r for r, excluded in readings if not excluded]
    text = f"its interval, {_num(low, '+.3f')} to {_num(high, '+.3f')}{u},"
    if out:
        text += f" excludes {joined(out)}"
    if left:
        text += ("; it" if out else "") + f" leaves open {joined(left)}"
    return text


def estimate_in_words(estimate: float, low: float, high: float, n: int, note: str) -> str:
    """``+0.034 (95% t-interval +0.009 to +0.059, 3 seeds; note)``; an estimate that is not a
    number reads ``missing``."""
    return f"{_num(estimate, '+.3f')} ({interval(low, high, n=n)}; {note})"


def labelled_intervals(rows, empty: str = "none", fmt: str = "+.2f") -> str:
    """``cpu sgd decoder -0.12 [-0.20, -0.04], ...``: ``rows`` are (label, estimate, low,
    high); ``empty`` for none."""
    return ", ".join(f"{label} {interval(low, high, estimate=est, fmt=fmt)}" for label, est, low, high in rows) or empty


def lower_or_higher(low: float, high: float) -> str:
    """Where an interval for a difference lies: ``lower`` (wholly below 0), ``higher`` (wholly
    above) or ``not distinguishable``; ``not read (a bound is missing)`` where a bound is not a number."""
    if not _finite(low, high):
        return "not read (a bound is missing)"
    _ordered(low, high)
    if high < 0:
        return "lower"
    if low > 0:
        return "higher"
    return "not distinguishable"


def less_or_more_than(value: float, bound: float) -> str:
    """``less than`` (value below bound) or ``more than``; where either is not a number,
    ``by a missing amount (not a number), so not compared with``."""
    if not _finite(value, bound):
        return "by a missing amount (not a number), so not compared with"
    return "less than" if value < bound else "more than" if value > bound else "as large as"


def design_targets(targets) -> str:
    """The design check's targets: ``holds 0.8; refuted 0.05`` (underscores read as spaces)."""
    return "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in dict(targets).items())


def algebra_holds(n_hold: int, n: int, corrected: bool) -> str:
    """How many of the algebraic statements hold (``corrected``: some only once corrected); a
    count larger than the statements is refused in one line."""
    _part_of(n_hold, n, "algebraic statements")
    return (f"{n_hold} of the {count_of(n, 'algebraic statement')} of Section 2 and S1.3 "
            f"{'holds' if int(n_hold) == 1 else 'hold'}" + (", some once corrected" if corrected else ""))
