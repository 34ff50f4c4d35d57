"""The survey's and the errata's sentences: the checkpoints read live, E11's majority reading."""

from __future__ import annotations

from ..base.phrasing import joined
from .sentences_words import _finite, _ordered

__all__ = ["checkpoints_by_modality", "majority_reading", "percentile_edge", "same_outcome"]


def checkpoints_by_modality(n: int, by_modality) -> str:
    """``7 real checkpoints (5 text, 1 vision and 1 audio)``; modalities with none left out, and
    checkpoints of a modality not listed counted as ``other`` (so the parts add up to ``n``);
    parts that add up to more than ``n`` are refused in one line."""
    from ..base.phrasing import count

    n = count(n, "number of checkpoints")
    parts = {mod: count(k, f"number of {mod} checkpoints") for mod, k in dict(by_modality).items()}
    if sum(parts.values()) > n:
        raise ValueError(f"the modalities count {sum(parts.values())} checkpoints, more than the {n} there are; "
                         "count each checkpoint once.")
    words = [f"{k} {mod}" for mod, k in parts.items() if k] + ([f"{n - sum(parts.values())} other"]
                                                              if sum(parts.values()) < n else [])
    return f"{n} real checkpoint{'' if n == 1 else 's'} (" + joined(words) + ")"


def majority_reading(low: float, high: float) -> str:
    """What an interval for the occurrence-weighted share of frequent types with a context
    ratio above one says about most occurrences (E11): below one, above one, or undecided."""
    if not _finite(low, high):
        return "the interval is missing (a bound is not a number), so on which side of one most occurrences fall is not read"
    _ordered(low, high)
    if high < 0.5:
        return ("most occurrences of frequent types belong to types that are predicted more often than they "
                "serve as context")
    if low > 0.5:
        return "most occurrences of frequent types have a ratio above one"
    return "the interval does not say on which side of one most occurrences fall"


def percentile_edge(estimate: float, low: float, high: float) -> str:
    """How a percentile interval sits around its estimate: wholly above or below it (a percentile
    interval need not hold its estimate), with the estimate at its lower or upper edge (within a
    tenth of its width), far from symmetric about it (one side more than twice the other) or
    roughly symmetric."""
    if not _finite(estimate, low, high):
        return "cannot be placed about the estimate (a value is missing)"
    _ordered(low, high)
    if low == high:   # no width: no edge to sit at, and nothing to be asymmetric about
        return "has no width (its two ends are equal)"
    if estimate < low or estimate > high:
        return f"lies wholly {'above' if estimate < low else 'below'} the estimate"
    width, below, above = high - low, estimate - low, high - estimate
    if below < 0.1 * width:
        return "has the estimate at its own lower edge"
    if above < 0.1 * width:
        return "has the estimate at its own upper edge"
    if max(below, above) > 2 * min(below, above):
        return "is far from symmetric about the estimate"
    return "is roughly symmetric about the estimate"


def same_outcome(first: str, second: str, first_rules: str = "the percentile interval",
                 second_rules: str = "the bagged interval") -> str:
    """Whether two intervals of one rule give the same outcome, and the two outcomes when not."""
    if first == second:
        return "the outcome is the same under both"
    return f"the outcome differs: {first} under {first_rules}, {second} under {second_rules}"
