"""The empirical verdicts' tests: each rule of ``data/verdict_rules.yaml`` applied to its evidence.

One function per kind of evidence returns a tidy table with one row per test (a body of
runs and a comparator, or a kind of window, ...): the estimate, its interval, the
smallest effect of interest, the gate, the outcome, the power and the one-sided p-values.
The row marked ``primary`` decides the claim's verdict (:mod:`companion.judge.claims`); the
others are shown beside it.  Nothing here decides a threshold: the rules file does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..rules.rulebook import rule
from ..rules.rulebook import earlier_rules
from ..rules.power import detectable_effect, directional_power
from ..rules.statistics import (deciding_p, directional_outcome, directional_outcome_first, equivalence_outcome, p_above, p_below, paired_t, power_spread, seeds_without_a_number, threshold_outcome)

__all__ = ["training_tests", "survey_test", "premise_share_test", "equal_spreads_test",
           "beta_correlation_test", "family", "update_tests", "yardstick"]

from .cache import _cached   # the one in-process cache of computed tables (companion.judge.cache)


def _body(name, rules):
    from ..train.studies.evidence import body_runs

    return _cached(("body", name), lambda: body_runs(rules["bodies"][name]))


def _training_row(r: dict, label: str, body: str, pair: dict, res: dict, lr: float) -> dict:
    """One test's row of :func:`training_tests`, assembled from the rule's result
    (:func:`companion.rules.training.apply_rule_to_pair`); nothing is computed here."""
    est, g, power = res["estimate"], res["gate"], res["power"]
    return dict(claim=r["key"], body=label, comparator=pair["comparator"], n=est.n, estimate=est.mean,
                low=est.low, high=est.high, sd=est.sd, level=est.level, sesoi=res["sesoi"], gate=g["passes"],
                outcome=res["outcome"], primary=res["primary"], reversed=bool(est.n > 1 and est.high < 0),
                detectable=power["detect_direction"], detect_holds=power["detect_holds"],
                p_refuted_at_0=power["p_refuted_at_0"], p_holds=res["p_holds"], p_refuted=res["p_refuted"],
                p_decides=res["p_decides"], rule_after_runs=res["after"], gate_text=g["text"],
                gate_reason=g["reason"], gate_why=g["why"], gate_finite=g["parts"].get("finite", True),
                gate_context=g["parts"]["context"],
                gate_memorisation=g["parts"]["memorisation"], gate_horizon=g["parts"]["horizon"],
                horizon_at_half=g["horizon"]["at_half"], horizon_at_end=g["horizon"]["at_end"], body_key=body,
                outcome_first=res["outcome_first"], lr=lr, seeds=",".join(map(str, pair["seeds"])), role=res["role"])


def yardstick(r: dict, runs: pd.DataFrame | None, quantity: str) -> float:
    """The smallest effect of interest of rule ``r`` for ``quantity`` on a body of ``runs``
    (:func:`companion.train.studies.evidence.yardstick`)."""
    from ..train.studies.evidence import yardstick as measured

    return measured(r, runs, quantity)


def training_tests(key: str, rules=None) -> pd.DataFrame:
    """Every test of one training claim (Figs. 3a, 3b, S5b, Table 1) over the cached bodies,
    by rules v2, in one pass down the layers: the rule names its bodies and pairs, each body's
    runs become one evidence table with every value the rule reads, the rule is applied to
    each pair once, and the row is assembled from the result.

    Fig. 3a/3b: encoder minus each comparator (true decoder, the authors' decoder), same
    seed, standard initialisation.  Fig. S5b: symmetric minus standard start of the same
    mode and seed (encoders judged; decoders reported beside).  Table 1: the baseline's
    final held-out loss minus the symmetric start's (> 0: the symmetric start is ahead).
    Each row carries the v2 outcome, the gate's three parts, the power of the applied test,
    the deciding p-value (for Holm) and, beside it, the outcome version 1 gave.
    """
    from ..rules.training import bodies_of, pairs_of, apply_rule_to_pair
    from ..rules.rulebook import load_rules
    from ..train.studies.evidence import body_evidence

    # 1. the rule: its bodies and its pairs
    rules = rules if rules is not None else earlier_rules()
    r = rule(key, rules)
    pairs = pairs_of(key, r)
    bodies = bodies_of(r)
    rows = []
    for name in bodies:
        # 2. the body's evidence, built once
        runs = _body(name, rules)
        if runs is None:
            continue
        evidence = body_evidence(runs, r, pairs)
        # 3. the rule applied to each pair once, then the row assembled from the result
        for pair in evidence["pairs"]:
            result = apply_rule_to_pair(key, r, name, pair, evidence)
            rows.append(_training_row(r, rules["bodies"][name]["label"], name, pair, result, evidence["lr"]))
    return apply_confirmatory(pd.DataFrame(rows), r)


def apply_confirmatory(tests: pd.DataFrame, r: dict) -> pd.DataFrame:
    """Rules v2.1: a claim with a ``confirmatory`` body is decided on it when, and only when,
    the primary body's gate failed and the confirmatory body's test passes its own gate with
    the rule's seeds; the ``primary`` flag then moves to that row (``decided_by`` says which
    role decided) and the primary body's row stays in the table beside it."""
    if tests.empty:
        return tests
    tests = tests.copy()
    tests["decided_by"] = ""
    prim = tests.index[tests["primary"]]
    if len(prim):
        tests.loc[prim[0], "decided_by"] = "primary"
    conf = r.get("confirmatory")
    if not conf or not len(prim) or bool(tests.loc[prim[0], "gate"]):
        return tests
    cand = tests.index[tests.get("role", pd.Series("", index=tests.index)) == "confirmatory"]
    if not len(cand):
        return tests
    c = cand[0]
    if not bool(tests.loc[c, "gate"]) or int(tests.loc[c, "n"]) < int(r.get("min_seeds", 3)):
        return tests
    tests.loc[prim[0], ["primary", "decided_by"]] = [False, ""]
    tests.loc[c, ["primary", "decided_by"]] = [True, "confirmatory"]
    return tests


def scale_confound(rules=None) -> dict:
    """Fig. S5b's correction: PyTorch's default-scale symmetric start (the released code's)
    minus the matched-scale one, paired by seed (reference manual, cpu size, encoders)."""
    from ..train.studies.evidence import arm_values, body_runs
    from ..rules.rulebook import load_rules

    rules = rules if rules is not None else earlier_rules()
    runs = _cached(("body", "manual-cpu-all"), lambda: body_runs(
        dict(rules["bodies"]["manual-cpu"], patterns=["cpu-encoder-s*"])))
    a = arm_values(runs, "symmetry", "encoder", "symmetric-torch-default")
    b = arm_values(runs, "symmetry", "encoder", "symmetric")
    est = paired_t(a, b, rules["framework"].get("level", 0.95))
    # 'keeps more symmetry' is the interval above 0: a level claim at 0 (holds when the interval lies
    # above it).  A directional outcome needs a yardstick > 0 and refused 0.0 with a raw error.
    return {"estimate": est, "outcome": threshold_outcome(est, 0.0, 3)}


# ------------------------------------------------------------------- Sec. 3 on the zoo


def _exact_rank_p(enc, dec) -> tuple[float, float]:
    """The exact one-sided Mann-Whitney p-values ``(P(U >= u), P(U <= u))`` given the ties: the
    permutation law of the encoders' sum of mid-ranks over every split of the pooled values,
    counted by dynamic programming over the (doubled, so whole) mid-ranks.  scipy's exact method
    uses the law without ties, which with tied values (the printed tables' two decimals) gives a
    p-value too small."""
    from scipy.stats import rankdata

    pooled = np.concatenate([np.asarray(enc, float), np.asarray(dec, float)])
    k, ranks = len(enc), np.rint(2 * rankdata(pooled)).astype(int)
    counts = np.zeros((k + 1, int(ranks.sum()) + 1))
    counts[0, 0] = 1.0
    for r in ranks:   # subsets of size j summing to s, one value more at a time (numpy reads before it writes)
        counts[1:, r:] += counts[:-1, :-r]
    law, observed = counts[k], int(ranks[:k].sum())
    return float(law[observed:].sum() / law.sum()), float(law[:observed + 1].sum() / law.sum())


def survey_test(contrast: dict, rules=None, published: pd.DataFrame | None = None) -> pd.DataFrame:
    """Sec. 3: exact one-sided Mann-Whitney tests over the zoo's text models, encoders'
    median symmetry above decoders', decoders' median directionality below encoders'.
    With tied values the exact law is the one given the ties (:func:`_exact_rank_p`).

    Each row also gives ``min_p``, the smallest p-value the test can reach with these
    numbers of models (every encoder above every decoder): when it is above the test's
    level, ``holds`` cannot be reached and the row says so.  With ``published`` (the
    paper's Tables S2/S3, :func:`companion.zoo.catalog.published_scores`) the same test on the
    published per-model medians is added beside (``primary`` False).
    """
    import numbers

    from scipy import stats

    from ..rules.rulebook import load_rules

    r = rule("survey_encoder_decoder", rules if rules is not None else load_rules())
    alpha = (1 - r.get("level", 0.95)) / 2
    from math import comb

    rows = []
    sets = [("symmetry", contrast["sym_enc"], contrast["sym_dec"], "offline zoo, scored live", True),
            ("directionality", contrast["dir_enc"], contrast["dir_dec"], "offline zoo, scored live", True)]
    if published is not None:
        for table, score in (("S2", "symmetry"), ("S3", "directionality")):
            t = published[published["table"] == table]
            sets.append((score, t[t["role"] == "encoder"]["median"].tolist(),
                         t[t["role"] == "decoder"]["median"].tolist(), f"published Table {table}", False))
    for score, enc, dec, evidence, primary in sets:
        short = {"symmetry": "sym", "directionality": "dir"}[score]
        for v in list(enc) + list(dec):   # text or None: numpy's own TypeError named no model
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                from ..base.errors import CompanionError

                raise CompanionError(f"the {score} medians ({evidence}: {short}_enc, {short}_dec) hold {v!r}, which "
                                     "is no number; give each model's median as a number, or leave the model out before the test.")
        bad = [v for v in list(enc) + list(dec) if not np.isfinite(float(v))]
        if bad:   # scipy's p is then NaN, and 'NaN < alpha' read as inconclusive
            from ..base.errors import CompanionError

            raise CompanionError(f"the {score} medians ({evidence}: {short}_enc, {short}_dec) hold {bad[0]}, a model "
                                 "that was not scored; score it again, or leave it out before the test.")
        p_claim = stats.mannwhitneyu(enc, dec, alternative="greater", method="exact").pvalue
        p_rev = stats.mannwhitneyu(enc, dec, alternative="less", method="exact").pvalue
        if len(set(map(float, list(enc) + list(dec)))) < len(enc) + len(dec):
            p_claim, p_rev = _exact_rank_p(enc, dec)   # tied values: the exact law given the ties
        u = stats.mannwhitneyu(enc, dec, alternative="greater", method="exact").statistic
        outcome = "holds" if p_claim < alpha else "refuted" if p_rev < alpha else "inconclusive"
        if min(len(enc), len(dec)) < 2:
            outcome = "not testable here"
        min_p = 1 / comb(len(enc) + len(dec), len(dec))
        rows.append(dict(claim=r["key"], score=score, evidence=evidence, n_encoders=len(enc),
                         n_decoders=len(dec), share_ordered=float(u / (len(enc) * len(dec))),
                         p_holds=float(p_claim), p_refuted=float(p_rev), min_p=min_p,
                         holds_reachable=min_p < alpha, outcome=outcome, primary=primary,
                         p_decides={"holds": float(p_claim), "refuted": float(p_rev)}.get(outcome, np.nan)))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------- premises


def premise_share_test(shares: dict, rules=None) -> pd.DataFrame:
    """Thm. S1.12's premise: ``shares`` maps a kind of window to ``(share, low, high)``
    (bootstrap over documents).  Met when the interval lies above the rule's threshold."""
    import numbers

    from ..base.errors import CompanionError
    from ..rules.rulebook import load_rules
    from ..rules.estimates import rounded

    r = rule("thm_s1_12", rules if rules is not None else load_rules())
    t = r["threshold"]
    rows = []

    for windows, v in shares.items():
        if len(v) not in (3, 5):   # one p-value alone was dropped, and the member entered Holm without it
            raise CompanionError(f"the {windows} windows' share is given as {len(v)} numbers; pass (share, low, high) "
                                 "or (share, low, high, p_above, p_below).")
        share, lo, hi = v[:3]
        p_hi, p_lo = (v[3], v[4]) if len(v) > 4 else (np.nan, np.nan)
        for x in (share, lo, hi, p_hi, p_lo):   # text compared as text, None, or True read as a share of 1
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
                raise CompanionError(f"the {windows} windows' share is given as {tuple(v)!r}, which holds {x!r}: "
                                     "pass numbers (share, low, high), NaN where a bound was not computed.")
        given = [float(x) for x in (share, lo, hi) if np.isfinite(float(x))]
        if any(not 0 <= x <= 1 for x in given) or (np.isfinite(float(lo)) and np.isfinite(float(hi)) and lo > hi):
            raise CompanionError(f"the {windows} windows' share {share!r} and its interval [{lo!r}, {hi!r}] must be "
                                 "proportions in [0, 1] with the lower end first; pass (share, low, high).")
        if any(not np.isnan(float(p)) and not 0 <= float(p) <= 1 for p in (p_hi, p_lo)):
            raise CompanionError(f"the {windows} windows' one-sided p-values {p_hi!r} and {p_lo!r} must be "
                                 "probabilities in [0, 1] (or NaN where none was computed).")
        # a bound that is not a number decides nothing: 'not testable here', as threshold_outcome reads it;
        # bounds and threshold compared after rounding to DIGITS significant digits, as threshold_outcome
        # compares (a bound of 0.5 + 1 ulp is not above 0.5)
        outcome = ("not testable here" if not (np.isfinite(float(lo)) and np.isfinite(float(hi))) else
                   "holds" if rounded(lo) > rounded(t) else "refuted" if rounded(hi) < rounded(t) else "inconclusive")
        rows.append(dict(claim=r["key"], windows=windows, estimate=share, low=lo, high=hi, threshold=t,
                         outcome=outcome, primary=windows == r["primary"]["windows"], p_holds=p_hi,
                         p_refuted=p_lo, p_decides={"holds": p_hi, "refuted": p_lo}.get(outcome, np.nan)))
    return pd.DataFrame(rows)


def equal_spreads_test(per_seed_log_ratio, band: float, rules=None) -> pd.DataFrame:
    """Cor. S1.13: per seed, the layer mean of log(Var rows / Var cols); the claim of
    equality holds when the interval lies inside (-band, band)."""
    from ..rules.rulebook import load_rules
    from ..rules.statistics import one_sample_t

    r = rule("cor_s1_13", rules if rules is not None else load_rules())
    est = one_sample_t(per_seed_log_ratio, r["framework"].get("level", 0.95))
    outcome = equivalence_outcome(est, band, len(r["seeds"]))
    from ..rules.power import equivalence_power

    pw = equivalence_power(est.n, power_spread(est), band, est.level)
    p_eq = deciding_p(est, "holds", band=band) if est.n > 1 else np.nan   # TOST
    p_ne = min(p_above(est, band), p_below(est, -band)) if est.n > 1 else np.nan
    return pd.DataFrame([dict(claim=r["key"], n=est.n, estimate=est.mean, low=est.low, high=est.high,
                              sd=est.sd, sesoi=band, outcome=outcome, primary=True, p_holds=p_eq, p_refuted=p_ne,
                              p_decides=deciding_p(est, outcome, band=band) if est.n > 1 else np.nan,
                              p_holds_at_0=pw["p_holds_at_0"], p_refuted_at_0=pw["p_refuted_at_0"])])


def beta_correlation_test(per_seed_corr, rules=None) -> pd.DataFrame:
    """Thm. S1.14's premise: per seed, the mean over checkpoints of corr(beta_ij, beta_ji);
    met when the interval lies above the rule's threshold."""
    from ..rules.rulebook import load_rules
    from ..rules.statistics import one_sample_t

    from ..base.errors import CompanionError
    from ..rules.statistics import seed_values

    r = rule("thm_s1_14", rules if rules is not None else load_rules())
    v = seed_values(per_seed_corr)
    bad = v[np.isfinite(v) & (np.abs(v) > 1 + 1e-9)]   # (a rounding above 1 is a perfect correlation)
    if bad.size:   # no correlation: a reading of 1.2 'held' the premise
        raise CompanionError(f"a per-seed correlation of {bad[0]!r} is outside [-1, 1]; it is no correlation of "
                             "beta_ij with beta_ji: recompute it.")
    est = one_sample_t(per_seed_corr, r["framework"].get("level", 0.95))
    outcome = threshold_outcome(est, r["threshold"], len(r["seeds"]))
    from ..rules.power import threshold_power

    pw = threshold_power(est.n, power_spread(est), r["threshold"], est.level)
    return pd.DataFrame([dict(claim=r["key"], n=est.n, estimate=est.mean, low=est.low, high=est.high,
                              sd=est.sd, threshold=r["threshold"], outcome=outcome, primary=True,
                              p_holds=p_above(est, r["threshold"]), p_refuted=p_below(est, r["threshold"]),
                              p_decides=deciding_p(est, outcome, threshold=r["threshold"]) if est.n > 1 else np.nan,
                              detect_holds=pw["detect_holds"])])


def family(primary_rows: pd.DataFrame, fwer: float = 0.05) -> pd.DataFrame:
    """Holm over the family of empirical verdicts (rules v2: the primary test of every
    claim, premises included).  Each member's p-value is the one-sided p of the test that
    decided its outcome (``p_decides``, :func:`companion.rules.statistics.deciding_p`); an
    undecided member (inconclusive) enters with the smaller of its two one-sided p-values,
    so the family's size counts every test made.  ``survives`` says whether a decided
    outcome stays significant at ``fwer / 2`` (the one-sided level of the two-sided
    intervals) after adjustment; ``status`` is the outcome, or ``inconclusive (after
    Holm)`` for a decided outcome that does not survive."""
    import math

    from ..rules.estimates import rounded
    from ..rules.statistics import DECIDED, holm

    t = primary_rows.copy()
    base = t["outcome"].str.split(" (", regex=False).str[0]
    decided = base.isin(DECIDED)
    dec_p = t["p_decides"] if "p_decides" in t else pd.Series(np.nan, index=t.index)
    t["p"] = np.where(decided & dec_p.notna(), dec_p, np.fmin(t["p_holds"], t["p_refuted"]))
    t["p_holm"] = holm(t["p"].to_numpy())
    # Holm rejects at an adjusted p at or below the level, compared after rounding to DIGITS significant
    # digits as interval ends are: a 'holds' whose low end meets d exactly has p = fwer/2 up to its last
    # bit, and it read 'inconclusive (after Holm)' in 9 of 10 such cases, by that bit
    t["survives"] = [("yes" if math.isfinite(p) and rounded(p) <= rounded(fwer / 2) else "no") if d else ""
                     for p, d in zip(t["p_holm"], decided)]
    t["status"] = [("inconclusive (after Holm)" if s == "no" else o) for o, s in zip(t["outcome"], t["survives"])]
    t["family_size"] = len(t)   # every registered member, a test not made too (Holm counts it)
    return t


# ------------------------------------------------------------------- updates (Thms. 2.3/2.4 in training)


def update_tests(rules=None) -> pd.DataFrame:
    """The ``update_structure`` rule on the cached update-level runs: per group of runs
    (``update-GROUP-*``: the optimiser and schedule of data/runs/mechanism_plan.md) and per
    score, the encoder minus the true decoder, paired by seed, of the mean over layers and
    over the logged steps of the first 10% of training (:func:`companion.train.runner.updates.window_means`).
    The row of the rule's primary group (plain SGD) on ``update_symmetry`` decides.  Under the
    rules in force, read from the book's verdict cache where it is on (``make prepare`` fills it)."""
    if rules is None:
        from .cache import _shared_when_on

        return _shared_when_on("update_tests", _update_tests)
    return _update_tests(rules)


def _update_tests(rules=None) -> pd.DataFrame:
    """:func:`update_tests`, computed."""
    import fnmatch

    from ..train.studies import evidence
    from ..train.runner.runs import load_runs
    from ..train.runner.updates import window_means
    from ..rules.rulebook import load_rules

    rules = rules if rules is not None else load_rules()
    r = rule("update_structure", rules)
    level = r["framework"].get("level", 0.95)
    try:
        runs = load_runs(pattern="update-*")
    except FileNotFoundError:
        return pd.DataFrame()
    runs = runs[runs["seed"].isin(r["seeds"])]
    rows = []
    for pattern in [r["primary"]["runs"]] + list(r.get("secondary", [])):
        sub = runs[[fnmatch.fnmatch(n, pattern) for n in runs["run"]]]
        if sub.empty:
            continue
        for q in ["update_symmetry"] + list(r.get("also", [])):
            m = window_means(sub, q)
            if "encoder" not in m.index.get_level_values("mode") or "decoder" not in m.index.get_level_values("mode"):
                continue
            a, b = m.xs("encoder", level="mode").droplevel("init"), m.xs("decoder", level="mode").droplevel("init")
            if len(a.index.intersection(b.index)) == 0:
                continue
            est = paired_t(a, b, level)
            band_first = evidence.null_band(sub, q.split("_", 1)[1])
            band = yardstick(r, sub, q)
            no_number = seeds_without_a_number(a, b)    # rules v2.3: a seed without a number is never dropped
            outcome = directional_outcome(est, band, r.get("min_seeds", 3), gate=not no_number)
            pw = directional_power(est.n, power_spread(est), band, level)
            rows.append(dict(claim=r["key"], runs=pattern, quantity=q, n=est.n, estimate=est.mean, low=est.low,
                             high=est.high, sd=est.sd, sesoi=band, outcome=outcome,
                             outcome_first=directional_outcome_first(est, band_first, r.get("min_seeds", 3)),
                             sesoi_first=band_first,
                             primary=pattern == r["primary"]["runs"] and q == "update_symmetry",
                             detectable=detectable_effect(est.n, power_spread(est), level), detect_holds=pw["detect_holds"],
                             p_refuted_at_0=pw["p_refuted_at_0"], p_holds=p_above(est),
                             p_refuted=p_below(est, band),
                             p_decides=deciding_p(est, outcome, band) if est.n > 1 else np.nan,
                             seeds_without_a_number=", ".join(map(str, no_number))))
    if rows:  # the secondary rows are one family of their own: say how many, adjusted
        from ..rules.statistics import holm

        out = pd.DataFrame(rows)
        # the family is the secondary rows alone: the primary row is a member of the claims' family
        # (counting it here said 'one of 20 secondary tests' of 19, and adjusted over one test too many)
        sec = ~out["primary"]
        out["n_tests"] = int(sec.sum())
        out["p_reversed_holm"] = np.nan
        if sec.any():
            out.loc[sec, "p_reversed_holm"] = holm(1 - out.loc[sec, "p_holds"].to_numpy())   # one-sided p of 'effect < 0'
        return out
    return pd.DataFrame(rows)
