"""One verdict per claim of the paper, computed: what survives the book's checks.

Every function below re-runs, at a size small enough for two CPU cores, the computation
that a chapter of the book uses to check one claim of Saponati et al. (ICML 2025), and
turns its outcome into one of five statuses:

``holds``
    the statement is confirmed as printed (an empirical claim: with an effect at least as
    large as the smallest of interest, surviving the family's correction);
``holds, size open``
    an empirical claim's direction is shown, not that the effect is large enough to matter;
``negligible``
    the direction as claimed, but every effect as large as the smallest of interest is
    excluded: no structure worth the name;
``holds with a correction``
    the statement (or its conclusion) is confirmed once a slip in it or its proof is fixed;
``premise fails``
    the conclusion follows from the premise, but the premise is not met where we can
    measure it (or is what produces the effect on its own);
``refuted``
    a counterexample or a measurement contradicts the statement;
``not testable here``
    the claim needs a size (steps, data, GPUs) this build cannot reach.

The checking chapters call the same functions for their asserts, and the chapter
``book/what_survives.md`` tabulates them, so a status is never typed twice.  Each verdict
carries the chapter and label where the evidence is shown, and the size at which it was
obtained.

This module keeps the registry (:data:`VERDICTS`), the tables read from it and the words for
each status; the claims themselves live by concern, and every name is re-exported here:
:mod:`~companion.judge.verdict_record` (what a verdict is), :mod:`~companion.judge.cache` (the
tables' cache), :mod:`~companion.judge.math_claims`, :mod:`~companion.judge.premise_claims`,
:mod:`~companion.judge.empirical_claims` and :mod:`~companion.judge.claim_sentences`.
"""

from __future__ import annotations

import contextlib  # noqa: F401  contextlib, math, asdict, dataclass, np: names this module had
import math  # noqa: F401
from dataclasses import asdict, dataclass  # noqa: F401

import numpy as np  # noqa: F401

from ..base.errors import CompanionError
from ..base.phrasing import interval, joined, sentence_case, side_by_side  # joined: re-exported for the chapters
from . import cache as _cache_module
# the claims by concern, each in its module, all re-exported here (``claims.<name>`` as before)
from .cache import (_CACHE, _cache_path, _cached, _disk_cached, _file_lock, _read_table, _reads_back_as,
                    _ready_table)
from .claim_sentences import _PAPER_LR_BODY, blind_progress_text, paper_rate_text
from .empirical_claims import (_fmt_test, _read_at_looks, _update_rule_after, _zoo_contrast, objective_swap,
                               power_text, survey_encoder_decoder, swap_tests_table, symmetric_init_structure,
                               table_1, training_directionality, training_symmetry, training_tests_table,
                               update_structure)
from .math_claims import (_BETA, _SIGMA, _s18_verdict, conv_hull_check, cor_s1_9, lemma_s1_11, prop_2_1, prop_2_2,
                          prop_s1_10, prop_s1_17, prop_s1_18, prop_s1_7, prop_s1_8, remark_s1_15, remark_s1_6,
                          s1_8_same_law_profiles, s50_transpose_check)
from .premise_claims import (_beta_correlations, _equal_spreads_inputs, _premise_family_rows, _premise_runs,
                             _premise_share_table, cor_s1_13, premise_config, premise_runs, premise_seed_runs,
                             premise_shares, thm_s1_12, thm_s1_14)
from .verdict_record import MATH_CHECKS, STATUSES, Plain, Verdict

__all__ = ["Plain", "STATUSES", "Verdict", "VERDICTS", "all_verdicts", "verdict",
           "prop_2_1", "prop_2_2", "remark_s1_6", "prop_s1_7", "prop_s1_8", "cor_s1_9",
           "prop_s1_10", "lemma_s1_11", "thm_s1_12", "cor_s1_13", "thm_s1_14", "remark_s1_15",
           "prop_s1_17", "prop_s1_18", "survey_encoder_decoder", "training_symmetry",
           "training_directionality", "symmetric_init_structure", "table_1", "update_structure", "objective_swap",
           "swap_tests_table",
           "conv_hull_check", "s50_transpose_check", "s1_8_same_law_profiles",
           "premise_config", "premise_runs", "premise_seed_runs", "premise_shares",
           "training_tests_table", "family_table", "read_once_rows", "MATH_CHECKS", "PHRASES", "phrase", "RANK_PHRASES", "joined", "family_sentence", "blind_progress_text",
           "paper_rate_text", "power_text"]

# every claim module reads the cache as ``claims._CACHE`` is bound at the call (tests rebind it)
_cache_module.serve_from(lambda: _CACHE)

#: each status as the predicate of a sentence ("Fig. 3a is ...")
PHRASES = {"holds": "confirmed", "holds with a correction": "confirmed once corrected",
           "holds, size open": "shown in direction, with its size left open",
           "negligible": "present in direction but negligible (smaller than any effect of interest)",
           "premise fails": "resting on a premise that fails where we measure it",
           "inconclusive": "inconclusive (the interval allows both readings)",
           "refuted": "refuted",
           "not testable here": "not testable on the runs made here (too few, or not admitted by the gate)"}


VERDICTS = (prop_2_1, prop_2_2, remark_s1_6, prop_s1_7, prop_s1_8, cor_s1_9, prop_s1_10, lemma_s1_11,
            thm_s1_12, cor_s1_13, thm_s1_14, remark_s1_15, prop_s1_17, prop_s1_18,
            survey_encoder_decoder, training_symmetry, training_directionality,
            symmetric_init_structure, table_1, update_structure, objective_swap)


def verdict(key: str) -> Verdict:
    """The verdict of one claim by its key (the function's name).  An empirical verdict is
    the one of :func:`all_verdicts`, with the family's correction carried into its status,
    so that every page states the same status.  A mathematical claim (a key of
    :data:`MATH_CHECKS`) is read from that table where it is computed already (in this
    process or in the book's verdict cache), else checked on its own, without computing the
    whole table."""
    fn = {f.__name__: f for f in VERDICTS}.get(key)
    if fn is None:
        raise CompanionError(f"unknown claim {key!r}; choose one of {[f.__name__ for f in VERDICTS]}.")
    if key in MATH_CHECKS:
        table = _ready_table("all_verdicts")   # computed already: read, never recomputed
        if table is None:
            return fn()
    else:
        table = all_verdicts()
    return _record(table, key)


def _record(table, key: str) -> Verdict:
    """Claim ``key``'s row of a verdict table as a :class:`Verdict`; refused in one line where
    the table (read back, or edited) holds the key twice or not at all, or lacks or adds a field."""
    import dataclasses

    rows = table[table["key"] == key] if "key" in table.columns else table.iloc[:0]
    fields = {f.name for f in dataclasses.fields(Verdict)}
    odd = sorted(fields - set(table.columns)) or sorted(set(table.columns) - fields)
    if len(rows) != 1 or odd:
        why = (f"holds claim {key!r} more than once ({len(rows)} rows)" if len(rows) > 1 else f"has no row for claim {key!r}"
               if not len(rows) else f"{'lacks' if set(odd) <= fields else 'adds'} the field {odd[0]!r}")
        raise CompanionError(f"the verdict table {why}; compute it again (companion.judge.claims.all_verdicts), "
                             "or clear the book's verdict cache.")
    return Verdict(**rows.iloc[0].to_dict())


def all_verdicts():
    """All verdicts as a ``pandas.DataFrame`` in the order of the paper, under the one rules
    file in force: a training claim as read at its looks (its family's level split over the
    members), a claim read once with its family carried into its status: a decided outcome
    whose deciding p-value does not clear its share of the family's level
    (:func:`family_table`) reads ``inconclusive``, its own reading kept in ``withheld`` and
    ``measured``."""
    import pandas as pd

    def compute():
        verdicts = [fn() for fn in VERDICTS]
        fam = family_table()
        out = []
        for v in verdicts:
            d = v.as_dict()
            rows = fam[fam["key"] == v.key]
            if len(rows) and v.kind == "empirical":
                name, level = rows.iloc[0]["family"], float(rows.iloc[0]["level (one-sided)"])
                # the deciding p and the level it is read against, printed with digits enough that the
                # p stays on its own side of the level as printed (never 'stands (deciding p = 0.025)'
                # beside a level of 0.025)
                lost = (rows["stands"] == "no").any()
                stands = not lost and (rows["stands"] == "yes").all()
                shown = ([rows.loc[rows["p_decides"].idxmax(), "p_decides"]] if lost else
                         [rows["p_decides"].max()] if stands else [])
                shown, level_shown = side_by_side(shown, level)
                where = f"family {name}, each test at {level_shown} a side"
                if lost:
                    d["family"] = f"{where}: not decided at that level (deciding p = {shown[0]})"
                    if d["status"] not in ("not testable here", "inconclusive"):
                        d["measured"] += f"; read {d['status']!r} alone, not at the family's level"
                        d["withheld"], d["status"] = d["status"], "inconclusive"
                elif stands:
                    d["family"] = f"{where}: stands (deciding p = {shown[0]})"
                else:
                    d["family"] = where
            out.append(d)
        return pd.DataFrame(out)

    return _disk_cached("all_verdicts", compute)


def family_table():
    """The tests of the claims read once (the survey's two scores, the premises, the
    mechanism, the swap), each with the one-sided p-value of the test that decided its
    outcome and its share of the family's level (``framework.families`` of the rules in
    force: a two-sided ``alpha`` per test, so ``alpha / 2`` a side): a decided outcome stands
    when its deciding p is below that share.  ``key`` is the verdict's key."""
    return _disk_cached("family_table", _family_table)


def read_once_rows() -> list:
    """The primary test row of each claim read once (the mechanism, the swap, the survey's two
    scores, the three premises) with ``claim, outcome, p_holds, p_refuted, p_decides``: the
    members of the family in force (:func:`family_table`) and of version 2's
    (:func:`companion.judge.history.second_family`)."""
    import pandas as pd

    from .empirical import survey_test, update_tests

    cols = ["claim", "outcome", "p_holds", "p_refuted", "p_decides"]
    rows = []
    ut = _cached("update_tests", update_tests)
    if len(ut):
        rows.append(ut[ut["primary"]].iloc[0][cols])
    st = swap_tests_table()
    st = st[st["primary"] & (st["body"] == "minilm")] if len(st) else st
    if len(st):
        rows.append(st.iloc[0][cols])
    for r in survey_test(_cached("zoo_contrast", _zoo_contrast)).itertuples():
        rows.append(pd.Series({"claim": f"survey_encoder_decoder ({r.score})", "outcome": r.outcome,
                               "p_holds": r.p_holds, "p_refuted": r.p_refuted, "p_decides": r.p_decides}))
    rows.extend(_premise_family_rows())
    return rows


def _family_table():
    import pandas as pd

    from ..rules.rulebook import family_of, load_rules
    from ..rules.statistics import DECIDED

    rules = load_rules()
    fam = pd.DataFrame(read_once_rows()).reset_index(drop=True)
    fam["key"] = fam["claim"].str.split(" (", regex=False).str[0]
    fam["family"] = [family_of(k, rules) for k in fam["key"]]
    fam["level (one-sided)"] = [rules["framework"]["families"][f]["alpha"] / 2 for f in fam["family"]]
    decided = fam["outcome"].isin(DECIDED)
    fam["stands"] = ""
    fam.loc[decided, "stands"] = ["yes" if p < a else "no" for p, a in
                                  zip(fam.loc[decided, "p_decides"], fam.loc[decided, "level (one-sided)"])]
    return fam



# ------------------------------------------------------------------- sentences for the pages


def family_sentence(fam) -> str:
    """What the family's level did to the claims read once, in one sentence (:func:`family_table`);
    a count of one decided test takes the singular (a family of one test too), a deciding p-value that
    is not a number reads ``missing``, never ``nan``, and one beside the share is printed on its own
    side of it (:func:`companion.base.phrasing.side_by_side`)."""
    from .sentences_words import count_of

    decided = fam[fam["stands"] != ""]
    n = len(fam)
    share = float(fam["level (one-sided)"].iloc[0]) if n else float("nan")
    if not len(decided):
        who = ("The one test in the family did not reach" if n == 1 else
               "No test in the family reached" if n == 0 else f"None of the {n} tests in the family reached")
        return (f"{who} a decided outcome, so the family's level has nothing to withdraw; it would matter as "
                "soon as one did.")
    kept = int((decided["stands"] == "yes").sum())
    lost = decided[decided["stands"] == "no"]
    # the share and the withdrawn p-values printed so that none reads as a tie with the share
    lost_p, share_shown = side_by_side(lost["p_decides"], share)
    text = (f"Of the {count_of(n, 'test')} in the family, {len(decided)} reached a decided outcome at 95%, and "
            f"{kept} of those {'stands' if kept == 1 else 'stand'} at the family's share of {share_shown} a side")
    p = lambda shown: "deciding p missing" if shown == "missing" else f"deciding p = {shown}"
    if len(lost):
        text += ("; " + joined([f"{r.claim} ({r.outcome}, {p(q)})" for r, q in zip(lost.itertuples(), lost_p)])
                 + (" does not, and reads" if len(lost) == 1 else " do not, and read") + " 'inconclusive'")
    return text + "."



# ------------------------------------------------------------------- the headline claims, one status each


#: the paper's main claims as the front page lists them: (label, verdict key, half, chapter, label to link)
HEADLINE = (("Fig. 2, symmetry: pretrained encoders more symmetric than decoders", "survey_encoder_decoder",
             "symmetry", "survey"),
            ("Fig. 2, directionality: pretrained decoders more column-dominant than encoders",
             "survey_encoder_decoder", "directionality", "survey"),
            ("Fig. 3a: encoders trained from scratch become more symmetric than decoders", "training_symmetry",
             None, "fig3_decided"),
            ("Fig. 3b: decoders trained from scratch become more column-dominant than encoders",
             "training_directionality", None, "fig3_decided"),
            ("Table 1: a symmetric start speeds encoder training up", "table_1", None, "fig3_decided"))

#: what a status means, in the words of the test that gave it (a rank test has no interval)
MEANING = {
    ("holds", "rank"): "the rank test's one-sided p-value is small in the claimed direction",
    ("inconclusive", "rank"): "the rank test's p-value is small on neither side",
    ("refuted", "rank"): "the rank test's p-value is small in the reverse direction",
}


#: claims decided by a rank test (no interval): their statuses are worded by that test
RANK_TESTED = frozenset({"survey_encoder_decoder"})

#: each status as a predicate in the words of a rank test (for :data:`RANK_TESTED` claims)
RANK_PHRASES = {"holds": "confirmed (its rank test's one-sided p-value is small in the claimed direction)",
                "inconclusive": "inconclusive (its rank test's p-value is small on neither side)",
                "refuted": "refuted (its rank test's p-value is small in the reverse direction)"}


def phrase(key: str, status: str, withheld: str = "") -> str:
    """The status of claim ``key`` as the predicate of a sentence ("Fig. 3a is ..."), in the
    words of the test that decided it: a rank test's "inconclusive" names no interval, and a
    claim whose own decided reading does not stand at its family's level (``withheld``,
    :attr:`Verdict.withheld`) says what it reads alone."""
    if withheld and status == "inconclusive":
        return (f"inconclusive at its family's level (read alone at 95%: '{withheld}', which does not stand at the "
                "share of the family's error each of its tests is given)")
    if key in RANK_TESTED and status in RANK_PHRASES:
        return RANK_PHRASES[status]
    if status not in PHRASES:
        raise CompanionError(f"unknown status {status!r} of {key}; expected one of {list(PHRASES)}.")
    return PHRASES[status]


def status_of_half(key: str, half: str) -> str:
    """The status of one half of a two-part claim (the survey's symmetry or directionality
    contrast): its own test's outcome, with the family's level carried in exactly as
    :func:`all_verdicts` carries it into whole claims."""
    fam = family_table()
    rows = fam[fam["claim"] == f"{key} ({half})"]
    if rows.empty:
        raise CompanionError(f"no family member {key} ({half}); halves exist for {sorted(fam['claim'])}.")
    r = rows.iloc[0]
    if r["outcome"] not in ("not testable here", "inconclusive") and r["stands"] == "no":
        return "inconclusive"
    return str(r["outcome"])


def headline_claims():
    """The front page's table: one row per main claim of the paper (:data:`HEADLINE`) with the
    status every page gives (:func:`verdict`, or :func:`status_of_half` for a claim with two
    halves), its meaning in the words of its own test, and the chapter holding its evidence."""
    import pandas as pd

    rows = []
    for label, key, half, chapter in HEADLINE:
        v = None if half else verdict(key)
        status = status_of_half(key, half) if half else v.status
        kind = "rank" if key == "survey_encoder_decoder" else "interval"
        meaning = (phrase(key, status, v.withheld) if v is not None and v.withheld else
                   MEANING.get((status, kind), PHRASES[status]))
        rows.append({"claim": label, "key": key, "half": half or "", "status": status, "meaning": meaning,
                     "chapter": chapter})
    return pd.DataFrame(rows)
