"""What the earlier rules files read: the readings the page "How the rules changed" shows.

The one rules file in force is ``data/verdict_rules.yaml``; versions 1 to 3 are kept unchanged
in ``data/rules_history/``.  Every other page states one status per claim, the one of
:func:`companion.judge.claims.all_verdicts`; this module gives, for the history appendix only,
the status each claim had under versions 1 and 2 (version 3's readings come from
:func:`companion.judge.training_claims.training_verdicts` run on its own file):

- version 1: the first rules' outcome of each claim's primary test (no family correction);
- version 2: its outcome on version 2's bodies, with Holm's correction over version 2's family
  of 11 tests (the four training claims, the mechanism, the swap, the survey's two scores, the
  three premises) carried into the status as version 2 worded it.

Nothing here decides a status that any page other than the history appendix shows.
"""

from __future__ import annotations

__all__ = ["second_training_status", "second_family", "earlier_readings"]

TRAINING = ("training_symmetry", "training_directionality", "symmetric_init_structure", "table_1")


def _second_rules() -> dict:
    from ..rules.rulebook import RULES_HISTORY, load_rules

    return load_rules(RULES_HISTORY[2])


def second_training_status(key: str) -> dict:
    """A training claim as version 2 read it on its primary (or, by its amendment 2.1,
    confirmatory) body, before the family's correction: ``{"status", "first"}``, where
    ``first`` is version 1's outcome of the same test."""
    from .claims import training_tests_table

    tests = training_tests_table(key)
    prim = tests[tests["primary"]] if len(tests) else tests
    if prim.empty:
        return {"status": "not testable here", "first": ""}
    p = prim.iloc[0]
    status = str(p["outcome"])
    if key == "symmetric_init_structure" and status == "holds":
        from .empirical import scale_confound

        if scale_confound()["outcome"] in ("holds", "holds, size open"):
            status = "holds with a correction"
    return {"status": status, "first": str(p["outcome_first"])}


def second_family():
    """Version 2's family: the primary test of every empirical claim with the one-sided
    p-value of the test that decided its outcome, Holm-adjusted over the 11 tests at
    version 2's ``fwer`` (:func:`companion.judge.empirical.family`)."""
    import pandas as pd

    from .claims import read_once_rows, training_tests_table
    from .empirical import family

    cols = ["claim", "outcome", "p_holds", "p_refuted", "p_decides"]
    rows = []
    for key in TRAINING:
        t = training_tests_table(key)
        if len(t) and t["primary"].any():
            rows.append(t[t["primary"]].iloc[0][cols])
    rows.extend(read_once_rows())
    fam = family(pd.DataFrame(rows).reset_index(drop=True), _second_rules()["framework"]["family"]["fwer"])
    fam["key"] = fam["claim"].str.split(" (", regex=False).str[0]
    return fam


def _first_of_read_once(key: str, own: str) -> str:
    """Version 1's outcome of a claim read once: its own outcome (the rules of the survey and
    the premises did not change), or version 1's reading of the primary test (the mechanism,
    the swap)."""
    from .claims import _cached, swap_tests_table
    from .empirical import update_tests

    if key == "update_structure":
        t = _cached("update_tests", update_tests)
    elif key == "objective_swap":
        t = swap_tests_table()
        t = t[t["body"] == "minilm"] if len(t) else t
    else:
        return own
    prim = t[t["primary"]] if len(t) else t
    return str(prim.iloc[0]["outcome_first"]) if len(prim) else ""


def earlier_readings():
    """One row per empirical claim: ``key``, ``claim``, ``version 1`` and ``version 2`` (each
    version's status as that version worded it; empty where a version did not judge the
    claim).  Read from the book's verdict cache where it is on (``make prepare`` fills it)."""
    from .cache import _shared_when_on

    return _shared_when_on("earlier_readings", _earlier_readings)


def _earlier_readings():
    """:func:`earlier_readings`, computed."""
    import pandas as pd

    from .claims import VERDICTS

    fam = second_family()
    rows = []
    for fn in VERDICTS:
        key = fn.__name__
        if key in TRAINING:
            r = second_training_status(key)
            own, first = r["status"], r["first"]
            from ..rules.rulebook import rule

            claim = rule(key, _second_rules())["claim"]
        else:
            v = fn()
            if v.kind != "empirical":
                continue
            own, claim = v.status, v.claim
            first = _first_of_read_once(key, own)
        second = own
        members = fam[fam["key"] == key]
        if (members["survives"] == "no").any() and own not in ("not testable here", "inconclusive"):
            second = "inconclusive (after Holm)"
        rows.append({"key": key, "claim": claim, "version 1": first, "version 2": second})
    return pd.DataFrame(rows)
