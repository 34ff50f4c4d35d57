"""Two sentences of the pages about the training claims: what the body trained at the paper's
learning rate shows (:func:`paper_rate_text`), and how far the blind matrix is
(:func:`blind_progress_text`).  Re-exported by :mod:`companion.judge.claims`."""

from __future__ import annotations

from ..base.phrasing import interval, joined, sentence_case
from .empirical_claims import training_tests_table
from .sentences_words import _finite, _num

__all__ = ["blind_progress_text", "paper_rate_text"]


_PAPER_LR_BODY = "wikipedia-regime-paper-lr"


def paper_rate_text() -> str:
    """The body trained at the paper's learning rate, in words: which of Figs. 3a/3b come out
    reversed there (interval wholly below 0), with their intervals and what rules v2 read.
    It was the one earlier body whose rule (v1) preceded its runs, so its result is stated,
    not left in a table cell."""
    parts, outs = [], set()
    what = {"training_symmetry": ("Fig. 3a", "the encoder ends less symmetric than the {c}"),
            "training_directionality": ("Fig. 3b", "the {c} ends less column-dominant than the encoder")}
    name = {"decoder": "true decoder", "authors-decoder": "authors' decoder"}
    n = 0
    tables = {}
    for key in what:
        t = training_tests_table(key)
        if len(t) and "body_key" in t:
            tables[key] = t[t["body_key"] == _PAPER_LR_BODY]
    n_tests = sum(len(t) for t in tables.values())   # the tests of this body the sentence picks from
    gate_failed = False
    unread = []   # tests with no interval (one seed, a bound missing): no reversal is read from them
    for key, (fig, reversed_how) in what.items():
        if key not in tables:
            continue
        for r in tables[key].itertuples():
            n = max(n, r.n)
            if not (r.n > 1 and _finite(r.low, r.high)):
                unread.append(f"{fig} against the {name.get(r.comparator, r.comparator)}")
                continue
            if r.high < 0:
                parts.append(f"{fig} against the {name.get(r.comparator, r.comparator)} is reversed "
                             f"({reversed_how.format(c=name.get(r.comparator, r.comparator))}): "
                             f"{_num(r.estimate, '+.3f')} ({interval(r.low, r.high)}; one of "
                             f"{n_tests}, unadjusted)")
                reason = r.gate_reason if isinstance(r.gate_reason, str) and r.gate_reason.strip() else ""
                outs.add(f"{r.outcome}" + (f", {reason}" if reason else ""))   # a missing reason is no 'nan'
                gate_failed = gate_failed or not r.gate
    not_read = (f"{joined(unread)} {'has' if len(unread) == 1 else 'have'} no interval (one seed, or a bound "
                "missing), so whether " + ("it comes" if len(unread) == 1 else "they come") + " out reversed is not read")
    if not parts:
        if unread:
            return (f"At the paper's learning rate {not_read}"
                    + ("; no other training contrast comes out reversed." if len(unread) < n_tests else "."))
        return ("At the paper's learning rate no training contrast comes out reversed."
                if n else "")
    return ("At the paper's learning rate (the body whose rule came before its runs under version 1, "
            f"{n} seeds), " + joined(parts) + ". Under rules v2 this reads " + joined(sorted(outs))
            + ": it is reported, not counted as a test of the paper; on that body"
            + (", whose gate did not pass," if gate_failed else "")
            + " the direction is the opposite of the paper's Fig. 3."
            + (f" {sentence_case(not_read)}." if unread else ""))


def blind_progress_text(n_claims: int, n_unmade: int, n_short: int) -> str:
    """How far the blind matrix is, for the training claims: how many have no paired runs on
    it yet, and how many have fewer than three seeds (data/runs/blind_plan.md).  Counts that
    are no whole numbers >= 0, or that add up to more than the claims, are refused in one line."""
    from ..base.phrasing import count

    n_claims, n_unmade, n_short = (count(v, "count of training claims") for v in (n_claims, n_unmade, n_short))
    if n_unmade + n_short > n_claims:   # '5 of the 3' counts claims that are not there
        raise ValueError(f"{n_unmade} training claims without runs and {n_short} short of seeds are more than the "
                         f"{n_claims} training claims; count each claim once.")
    has = lambda k: "has" if k == 1 else "have"
    if n_unmade == n_claims:
        if n_claims == 1:
            return ("The one training claim has no pair of its blind runs made yet, so it reads 'not testable "
                    "here' until its runs are made (in the plan's order, data/runs/blind_plan.md).")
        return (f"None of the {n_claims} training claims has a pair of its blind runs made yet, so each reads "
                "'not testable here' until its runs are made (in the plan's order, data/runs/blind_plan.md).")
    parts = []
    if n_unmade:
        parts.append(f"{n_unmade} of the {n_claims} training claims have no pair of blind runs made yet")
    if n_short:   # alone, it names what it counts: '1 has fewer' would leave the reader asking 1 of what
        parts.append(f"{n_short}{'' if n_unmade else f' of the {n_claims} training claims'} {has(n_short)} fewer than the three seeds {'its' if n_short == 1 else 'their'} "
                     "verdict needs")
    if not parts:
        return (f"Every one of the {n_claims} training claims has its three seeds on it." if n_claims != 1 else
                "The one training claim has its three seeds on it.")
    return sentence_case(joined(parts)) + " (the runs go on, in the plan's order; data/runs/blind_plan.md)."
