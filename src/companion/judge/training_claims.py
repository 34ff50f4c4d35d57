"""The four training claims judged by rules v3: each read at its looks
(:func:`companion.train.studies.registered_bodies.read_claim`), then the fixed sequence of the family applied.

:func:`training_verdicts` gives one row per claim in the family's order with its status, the look it
was read at, the paired effect and its interval, the gate, the power at the planning spread
and the detectable effect with its interval, and, while seeds are missing, which runs and the
command that makes them.  :func:`pilot_rows` shows the v2 bodies the design was planned from
under v3's yardsticks, marked: their guard was not measured in one mode, and v3's yardsticks
come from them, so v3 cannot judge them.
"""

from __future__ import annotations

from ..base.phrasing import interval
import pandas as pd

__all__ = ["fixed_sequence", "training_verdicts", "pilot_rows", "status_of", "chance_text"]


def fixed_sequence(readings: dict, order, labels: dict | None = None) -> dict:
    """The family's statuses (rules v3): in ``order``, a member's decided reading stands only if
    every member before it was decided.  After the first member whose final reading is not
    decided, the rest read ``inconclusive (fixed sequence stopped at LABEL)``.  While an earlier
    member is still being read, a later reading that the earlier one could still overturn is
    provisional: a decided one, and a final 'not testable here' (should the earlier member end
    undecided, the rules turn it into 'inconclusive (fixed sequence stopped ...)').  A later
    member that ends undecided stops nothing yet (the earlier one may stop the sequence
    first), but every member after it reads ``inconclusive (fixed sequence stops at LABEL at
    the latest; PENDING is still read)``, since whichever way the pending member ends, it
    cannot stand.  ``labels`` names the members in these texts (their keys by default)."""
    from ..rules.sequential import DECIDED

    name = (lambda k: (labels or {}).get(k, k))
    out, stopped, pending, blocked = {}, None, None, None
    for key in order:
        r = readings[key]
        decided = r.outcome in DECIDED
        if stopped is not None:
            out[key] = f"inconclusive (fixed sequence stopped at {name(stopped)})"
        elif blocked is not None:
            out[key] = (f"inconclusive (fixed sequence stops at {name(blocked)} at the latest; "
                        f"{name(pending)} is still read)")
        elif pending is not None and (decided or (r.final and r.outcome == "not testable here")):
            out[key] = f"{r.outcome} (provisional: {name(pending)} comes first in the fixed sequence and is still read)"
        else:
            out[key] = r.outcome
        if stopped is None and pending is None:
            if r.final and not decided:
                stopped = key
            elif not r.final:
                pending = key
        elif pending is not None and blocked is None and r.final and not decided:
            blocked = key   # behind a member still read: settles nothing yet, but nothing after it can stand
    return out


def _interval(est, fmt="+.4f") -> str:
    if est is None:
        return "no look complete"
    if est.problem:
        return est.problem
    return (f"{interval(est.low, est.high, estimate=est.mean, fmt=fmt)}, {est.n} seeds, nominal "
            f"{_level_text(est.level)} at this look")


def chance_text(p: float, digits: int, percent: bool = False) -> str:
    """A simulated chance with ``digits`` decimals, or as many more as keep it off 0 and 1 where it
    is neither: Table 1's 0.9999 read '1.00', a certainty the simulation did not find.  With
    ``percent``, as a percentage (a look's two-sided level: 99.9997% read '100.00%', the level of
    an interval without end)."""
    p = float(p)
    form = "%" if percent else "f"
    if not 0 < p < 1:
        return f"{p:.{digits}{form}}"
    for k in range(digits, 12):
        text = f"{p:.{k}{form}}"
        if 0 < float(text.rstrip("%")) < (100 if percent else 1):
            return text
    return f"{p:.12{form}}"


def _level_text(level: float) -> str:
    """A look's two-sided level as a percentage with two decimals, or as many more as keep it
    below 100% (:func:`chance_text`)."""
    return chance_text(level, 2, percent=True)


def status_of(key: str, table: pd.DataFrame | None = None) -> str:
    """The status of one claim read at looks (its family applied)."""
    table = table if table is not None else training_verdicts()
    if key not in set(table["key"]):   # a raw KeyError named the key alone
        raise ValueError(f"no claim {key!r} is read at looks; the claims are {', '.join(map(str, table['key']))}.")
    return str(table.set_index("key").loc[key, "status"])


def training_verdicts(rules: dict | None = None, readings: dict | None = None) -> pd.DataFrame:
    """One row per claim read at looks, in the rules' family order (see the module docstring):
    under version 4 each member read at its share of its family's level, under version 3 (as
    committed, for the history page) its fixed sequence applied.  Where the book's verdict
    cache is on (its kernels; ``make prepare`` fills it), the table of a rules file is read
    from there (:func:`companion.judge.cache._shared_when_on`), not computed again."""
    from ..rules.rulebook import load_rules

    rules = rules if rules is not None else load_rules()
    if readings is None:
        from .cache import _shared_when_on, content_key

        return _shared_when_on(f"training_verdicts-{content_key(rules)}", lambda: _training_verdicts(rules))
    return _training_verdicts(rules, readings)


def _training_verdicts(rules: dict, readings: dict | None = None) -> pd.DataFrame:
    """:func:`training_verdicts`, computed."""
    from ..train.studies.registered_bodies import MAKE_COMMAND, read_claim

    order = rules["framework"]["family"]["order"]
    claims = readings if readings is not None else {k: read_claim(k, rules) for k in order}
    if rules["framework"]["family"]["method"] == "split":   # version 4: each member at its own share
        statuses = {k: c["reading"].outcome for k, c in claims.items()}
    else:
        statuses = fixed_sequence({k: c["reading"] for k, c in claims.items()}, order,
                                  labels={k: c["rule"]["claim"].split(":")[0] for k, c in claims.items()})
    rows = []
    for pos, key in enumerate(order, 1):
        c = claims[key]
        rule, rd = c["rule"], c["reading"]
        lo, at, hi = c["detectable"]
        design = c["design"]
        pilot = design.loc["pilot"]
        rows.append({
            "key": key, "position": pos, "claim": rule["claim"], "body": rule["body_rule"]["label"],
            "look": f"look {rd.look} of {len(rd.looks)} ({rd.looks[rd.look - 1]} seeds)" if rd.look else "none yet",
            "seeds in": f"{len(c['seeds_in'])} of {len(rule['body_rule']['seeds'])}",
            "seeds at look": rd.looks[rd.look - 1] if rd.look else 0,
            "family": rule.get("family", "all"),
            "effect": _interval(rd.estimate), "d": c.get("d", rule["d"]), "reading": rd.outcome,
            # the same interval as numbers (none before the first look)
            "estimate": rd.estimate.mean if rd.estimate is not None else float("nan"),
            "low": rd.estimate.low if rd.estimate is not None else float("nan"),
            "high": rd.estimate.high if rd.estimate is not None else float("nan"),
            "n": rd.estimate.n if rd.estimate is not None else 0,
            "status": statuses[key], "why": rd.reason,
            "gate": ("not read yet" if not rd.look else
                     f"not read (no interval at the look: {rd.reason})" if c["gate"] is None else
                     "passes" if c["gate"]["passes"] else f"fails: {c['gate']['why']}"),
            "power (planned)": (f"whole sequence, planned before look 1: P(a decided outcome true of the pilot's effect {rule['pilot']['estimate_when_fixed']:+.4f}) "
                                f"= {chance_text(pilot['p_true_decided'], 2)} at the planning sd {rule['pilot']['planning_sd_when_fixed']:.4f}; "
                                f"P(refuted | d) = {chance_text(design.loc['d', 'refuted'], 3)}"),
            "detectable": at, "detectable low": lo, "detectable high": hi,   # the same, as numbers
            "detectable (observed sd)": ("" if pd.isna(at) else
                                         f"at look {rd.look} ({rd.looks[rd.look - 1]} seeds): {at:.4f} "
                                         f"(95% interval for the spread's uncertainty {lo:.4f} to {hi:.4f})"),
            "missing": c["missing"], "command": MAKE_COMMAND if c["missing"] else "",
            "secondary": "; ".join(f"encoder minus {k.split('/')[0]} at look {v['look']}: {_interval(v['estimate'])} "
                                   f"-> {v['outcome']} (one of {len(c['secondary'])}, unadjusted)"
                                   for k, v in c["secondary"].items()),
        })
    return pd.DataFrame(rows)


def pilot_rows(rules: dict | None = None) -> pd.DataFrame:
    """The v2 pilot bodies under v3's yardsticks, read as v3 would read them at their first
    look, each marked 'not testable here (guard not measured in one mode)': their runs logged
    no guard, and v3's yardsticks and planning spreads were derived from them."""
    from ..rules.sequential import look_estimate, look_outcome
    from ..rules.rulebook import claim_rule, load_rules
    from ..train.studies.design_check import pilot_values

    rules = rules if rules is not None else load_rules()
    rows = []
    for key in rules["framework"]["family"]["order"]:
        rule = claim_rule(key, rules)
        p = rule["pilot"]
        values = pilot_values({"body": p["body"], "quantity": rule["quantity"],
                               "candidate": rule["candidate"].split("/"),
                               "comparator": rule["comparator"].split("/"), "sign": rule.get("sign", 1)})
        first = rule["looks"][0]
        est = look_estimate(values.to_numpy()[:first], rule["nominal"][0])
        # a pilot of fewer seeds than look 1 counts is read on the seeds it has, and says so
        short = f" (look 1 counts {first} seeds; the pilot has {len(values)})" if len(values) < first else ""
        rows.append({"key": key, "claim": rule["claim"], "pilot body": p["body"],
                     "effect at look 1": _interval(est) + short, "d (v3)": rule["d"],
                     "interval alone would read": look_outcome(est, rule["d"]),
                     "status under v3": "not testable here (guard not measured in one mode; v3's yardstick "
                                        "and planning spread come from this pilot)"})
    return pd.DataFrame(rows)
