"""The mechanism studies' sentences: rank-one updates, Thm. S1.14, update tests, the objective swap."""

from __future__ import annotations

from ..base.phrasing import interval
from .sentences_words import _finite, _num, _ordered, estimate_in_words

__all__ = ["rank_one_updates", "update_symmetry_reading", "orthogonality", "shared_direction",
           "THM_S1_14_MEANING", "thm_s1_14_meaning", "symmetry_gap_reading", "follows_theorem",
           "primary_update_test", "secondary_update_test", "update_test_reading", "update_group", "peaks_at",
           "swap_test", "negligible_swap", "swap_update_reading", "direction_and_size", "swap_update_order",
           "table1_preview"]


def rank_one_updates(share_autoregressive: float, share_masked: float, near: float = 0.8) -> str:
    """Which summed update is close to rank one (its top singular value holding more than
    ``near`` of the squared norm), with the two shares."""
    ar, mlm = share_autoregressive, share_masked
    if not _finite(ar, mlm):
        return (f"Whether the updates are close to rank one is not read: a share of the squared norm is missing "
                f"(top singular values {_num(ar, '.2f')} and {_num(mlm, '.2f')})")
    bad = [f"{name} {v!r}" for name, v in (("autoregressive", ar), ("masked", mlm)) if not 0 <= v <= 1 + 1e-9]
    if bad:   # a share of the squared norm: 1.3 would read 'close to rank one', more than all of it
        from ..base.errors import CompanionError

        raise CompanionError(f"a top singular value's share of the squared norm lies in [0, 1]; got {', '.join(bad)}: "
                             "pass sigma_1^2 / sum(sigma_i^2), not sigma_1 or a percentage.")
    close = [name for name, v in (("autoregressive", ar), ("masked", mlm)) if v > near]
    f = lambda v, places: _off_the_mark(v, places, near)
    if len(close) == 2:
        return (f"Both updates are close to rank one (top singular value {f(ar, 2)} and {f(mlm, 3)} of the squared "
                f"norm)")
    if len(close) == 1:
        one, other = close[0], "masked" if close[0] == "autoregressive" else "autoregressive"
        s1, s2 = (ar, mlm) if one == "autoregressive" else (mlm, ar)
        return (f"The {one} update is close to rank one ({f(s1, 3)} of its squared norm in the top singular value), "
                f"the {other} one less so ({f(s2, 2)})")
    return f"Neither update is close to rank one (top singular values {f(ar, 2)} and {f(mlm, 2)} of the squared norm)"


def _off_the_mark(v: float, places: int, mark: float) -> str:
    """``v`` in ``places`` decimals, or in the fewest more (up to 12) that keep it printed on its
    own side of ``mark``: a share of 0.7996 beside a mark of 0.8 reads ``0.7996``, never ``0.80``,
    which would read as the mark (or as the 0.8004 beside it, on the other side)."""
    v = float(v) + 0.0
    for k in range(places, 13):
        text = f"{v:.{k}f}"
        if (float(text) > mark) == (v > mark) and (float(text) < mark) == (v < mark):
            return text
    return text


def update_symmetry_reading(autoregressive_more_symmetric: bool | None) -> str:
    """Whether the summed updates' symmetry goes the way Thm. S1.14's intuition suggests
    (the masked update the more symmetric); None (an update's symmetry is missing: compare
    with :func:`companion.base.phrasing.exceeds`) says so, with no reading."""
    if autoregressive_more_symmetric is None:
        return "is not read (an update's symmetry is missing)"
    if autoregressive_more_symmetric:
        return "runs against the theorem's intuition"
    return "goes the way the theorem leads one to expect"


def _cosine(cosine) -> None:
    """Refuse a cosine outside [-1, 1] (up to rounding): no angle has it, so 'nearly orthogonal' or
    'shares part of it' would be read from a number that measured something else."""
    if abs(float(cosine)) > 1 + 1e-9:
        from ..base.errors import CompanionError

        raise CompanionError(f"a cosine lies in [-1, 1]; got {float(cosine)!r}: pass u.v / (|u| |v|).")


def orthogonality(cosine: float, near: float = 0.3) -> str:
    """``nearly orthogonal to`` (|cos| below ``near``) or ``far from orthogonal to``; a cosine
    that is not a number reads ``at an angle not measured (its cosine is missing) to``."""
    if not _finite(cosine):
        return "at an angle not measured (its cosine is missing) to"
    _cosine(cosine)
    return "nearly orthogonal to" if abs(cosine) < near else "far from orthogonal to"


def shared_direction(cosine: float, near: float = 0.3) -> str:
    """``shares part of it`` (|cos| at least ``near``) or ``shares little of it``; a cosine that
    is not a number reads ``shares an unmeasured part of it (its cosine is missing)``."""
    if not _finite(cosine):
        return "shares an unmeasured part of it (its cosine is missing)"
    _cosine(cosine)
    return "shares part of it" if abs(cosine) >= near else "shares little of it"


#: what Thm. S1.14's premise verdict means for the mechanism
THM_S1_14_MEANING = {
    "holds": "At this size the premise is met: the masked objective's updates come in pairs with "
             "similar coefficients, the mechanism the theorem describes.",
    "premise fails": "Here the premise fails, so the symmetry that masked training builds does not "
                     "come through the pairwise mechanism the theorem describes.",
    "inconclusive": "Whether the symmetry that masked training builds comes through the pairwise "
                    "mechanism the theorem describes, these seeds cannot say.",
}


def thm_s1_14_meaning(status: str, phrases=None) -> str:
    """What Thm. S1.14's verdict means for the mechanism; another status is named by its
    predicate (``phrases``: status -> predicate, default the claims' own)."""
    if status in THM_S1_14_MEANING:
        return THM_S1_14_MEANING[status]
    if phrases is None:
        from .claims import PHRASES as phrases
    return f"The verdict is {phrases.get(status, status)}."


def symmetry_gap_reading(low: float, high: float) -> str:
    """What an interval for masked minus causal final symmetry says against Thm. S1.14."""
    if not _finite(low, high):
        return "the interval for the gap is missing (a bound is not a number), so which objective ends the more symmetric is not read"
    _ordered(low, high)
    if low > 0:
        return "the masked objective ends the more symmetric in every reading the seeds allow, as Thm. S1.14 predicts"
    if high < 0:
        return "the causal objective ends the more symmetric, against Thm. S1.14"
    return "at this size the seeds do not tell which objective ends the more symmetric"


def follows_theorem(follows: bool, theorem: str = "Thm. S1.12") -> str:
    """``follows Thm. S1.12 at this size`` or ``does not follow ...``."""
    return f"{'follows' if follows else 'does not follow'} {theorem} at this size"


def primary_update_test(estimate: float, low: float, high: float, n: int, sesoi: float) -> str:
    """The update claim's primary test, with its smallest effect of interest."""
    return estimate_in_words(estimate, low, high, n, f"smallest effect of interest {_num(sesoi, '.3f')}")


def secondary_update_test(estimate: float, low: float, high: float, n: int, n_tests: int, p_holm: float) -> str:
    """A secondary test, as one of many (``n_tests``, a whole number >= 1), with its
    Holm-adjusted p-value of a reversal, with the digits that keep it on its own side of 0.05
    (0.0499 read '0.05')."""
    from ..base.phrasing import count, side_by_side

    n_tests = count(n_tests, "number of secondary tests")
    which = "the one secondary test" if n_tests == 1 else f"one of {n_tests} secondary tests"
    return estimate_in_words(estimate, low, high, n, f"{which}, Holm-adjusted one-sided p of "
                                                 f"a reversal {side_by_side([p_holm], 0.05, digits=2)[0][0]}")


def update_test_reading(estimate: float, low: float, high: float, n: int, outcome: str) -> str:
    """A test with the outcome the rule's reading gives it."""
    return estimate_in_words(estimate, low, high, n, f"{outcome} by the rule's reading")


def update_group(pattern: str) -> str:
    """A group of update runs named from its run pattern: ``update-mini-sgd-*`` is ``sgd at
    BERT-Mini size``, ``update-batch8-adamw-*`` is ``adamw at the regime size``."""
    group = pattern.rstrip("-*").rsplit("-", 1)[-1]
    return f"{group} at {'BERT-Mini' if '-mini-' in pattern else 'the regime'} size"


def peaks_at(values, steps) -> str:
    """``0.081 at step 500, 0.077 at step 750``; as many values as steps, each step a whole
    number >= 0, or a one-line ``ValueError`` (a value without its step would be dropped, a
    step of 500.5 read as 500)."""
    from ..base.phrasing import count

    values, steps = list(values), list(steps)
    if len(values) != len(steps):
        raise ValueError(f"{len(values)} values and {len(steps)} steps: pass one step for each value.")
    return ", ".join(f"{_num(v, '.3f')} at step {count(s, 'step')}" for v, s in zip(values, steps))


def swap_test(estimate: float, low: float, high: float, n: int, sesoi: float) -> str:
    """An objective-swap test, swap minus control: ``+0.0012 (95% t-interval ..., 3 seeds);
    smallest effect of interest 0.0183``; a value that is not a number reads ``missing``."""
    return (f"{_num(estimate, '+.4f')} ({interval(low, high, n=n, fmt='+.4f')}); smallest effect of interest "
            f"{_num(sesoi, '.4f')}")


def negligible_swap(negligible: bool) -> str:
    """What an interval above 0 and wholly below the smallest effect of interest means for the
    objective swap (rules v2 read it negligible), as a sentence followed by a space; empty
    when the interval is not such."""
    if not negligible:
        return ""
    return ("The interval lies above 0 and wholly below the smallest effect of interest: the swap did "
            "lower symmetry relative to its control, beyond the seed-to-seed noise, but by less than "
            "the paper's own figures could show as a difference, so rules v2 read it as negligible "
            "(version 1 read it as holds). ")


def swap_update_reading(low: float, high: float, n: int) -> str:
    """Which arm's updates are the more symmetric, from an interval for the next-token swap
    minus the masked-LM control; an interval that is not a number is said to be missing, and
    no order is read from it."""
    if not _finite(low, high):
        return "the interval is missing (a bound is not a number), so which updates are the more symmetric is not read"
    _ordered(low, high)
    if n < 2 or low <= 0 <= high:
        return "the interval allows either order"
    if low > 0:
        return ("the next-token updates are the more symmetric, the opposite of what Thm. 2.4 leads one to "
                "expect of a masked objective")
    return "the masked-LM updates are the more symmetric, as Thm. 2.4 leads one to expect"


def direction_and_size(predicted: bool | None, larger: bool | None) -> str:
    """A difference read against its prediction and its smallest effect of interest; None for
    either (the difference or the yardstick is missing) says so, with no direction read."""
    if predicted is None or larger is None:
        return "not read against its prediction (the difference or its smallest effect of interest is missing)"
    return (("in the predicted direction" if predicted else "against the predicted direction")
            + (", and larger than" if larger else ", and smaller than") + " the smallest effect of interest")


def swap_update_order(swap_more_symmetric: bool | None) -> str:
    """Which arm's updates are the more symmetric when a causal decoder is swapped to a masked
    objective; None (an arm's update symmetry is missing) says so, with no order read."""
    if swap_more_symmetric is None:
        return "which arm's updates are the more symmetric is not read (an arm's update symmetry is missing)"
    if swap_more_symmetric:
        return "the masked swap's updates are the more symmetric, as Thm. 2.4 leads one to expect"
    return ("the causal control's updates are the more symmetric, the opposite of what Thm. 2.4 leads one "
            "to expect of a masked objective")


def table1_preview(paired_seeds, published_speedup_percent: float, published_loss_difference: float,
                   encoder_speedup: str | None = None, encoder_loss_difference: float | None = None) -> str:
    """The BERT-Mini preview of Table 1 against its 4-layer Wikipedia row: ``paired_seeds``
    lists (mode, paired seeds) made so far; the encoders' median speed-up (as text, with its
    interval) and final loss difference when there are encoder pairs.  A preview while any
    mode has fewer than three paired seeds."""
    paired_seeds = list(paired_seeds)
    text = ("No seed has both of its runs cached yet" if not paired_seeds else
            "Paired seeds so far: " + ", ".join(f"{mode} {n}" for mode, n in paired_seeds))
    text += (f". Table 1's 4-layer Wikipedia row, one seed after 200,000 steps: a "
             f"{_num(published_speedup_percent, '.0f')}% speed-up and a final loss "
             f"{_num(published_loss_difference, '+.3f')} nats from the symmetric start")
    if encoder_speedup is not None:
        text += (f"; our BERT-Mini encoders after 2,000 steps: median speed-up {encoder_speedup}, "
                 f"final loss {_num(encoder_loss_difference, '+.3f')} nats")
    if not paired_seeds or min(n for _, n in paired_seeds) < 3:
        text += (". With fewer than three paired seeds these rows are a preview, not a measurement of "
                 "Table 1: the regime runs above, with three seeds, are the firmer evidence")
    return text
