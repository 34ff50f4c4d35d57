"""Rules v3's design, computed from the pilot bodies only: yardsticks, planning spreads, pilot
estimates, and the design check (the simulated chance of each outcome).

Everything here reads bodies that rules v3 does *not* judge (the v2 blind bodies on Wikipedia
and on the English mix, and the paper's Tables S2/S3); :func:`companion.rules.rulebook.load_rules`
refuses a yardstick derived from a body it judges.  The numbers are written into
``data/rules_history/verdict_rules_v3.yaml`` (``value_when_fixed``) and ``data/rules_history/verdict_rules_v3_design.csv``
when the rules are committed; ``tests/test_rules_at_looks.py`` recomputes both from the pilots.

    python -m companion.train.studies.design_check            # print the design check
    python -m companion.train.studies.design_check --write    # write data/rules_history/verdict_rules_v3_design.csv
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["pilot_values", "pilot_estimate", "planning_sd", "scaled_yardstick", "speedup_yardstick",
           "true_outcomes", "design_check", "family_error_table", "family_check_table", "reachable_outcomes", "DESIGN_PATH", "main"]

from ...base.errors import CompanionError
from ...base.paths import DATA_DIR

DESIGN_PATH = DATA_DIR / "rules_history" / "verdict_rules_v3_design.csv"   # version 3's; a file names its own (design_check.table)

from ...rules.sequential import true_outcomes  # noqa: E402  (the one definition; re-exported here)


def _pilot_body(key: str) -> pd.DataFrame:
    """A pilot body's runs: the bodies of version 2 (data/rules_history/), never judged at looks."""
    from ...rules.rulebook import RULES_HISTORY, load_rules
    from .evidence import body_runs

    rules = load_rules(RULES_HISTORY[2])
    body = dict(rules["bodies"][key])
    body["seeds"] = list(body["seeds"]) + list(body.get("extra_seeds", []))
    return body_runs(body)


def pilot_values(pilot: dict) -> pd.Series:
    """The pilot's per-seed paired differences ``candidate - comparator`` at its horizon:
    ``pilot = {body, quantity, candidate: [mode, init], comparator: [mode, init], sign}``
    (``sign`` -1 turns e.g. baseline-minus-candidate loss into the claim's direction).  A
    seed with a value that is not a finite number is refused, naming it: a design planned on
    the seeds that happened to give a number would hide the one that did not."""
    from .evidence import arm_values

    runs = _pilot_body(pilot["body"])
    a = arm_values(runs, pilot["quantity"], *pilot["candidate"], non_finite="raise")
    b = arm_values(runs, pilot["quantity"], *pilot["comparator"], non_finite="raise")
    return (pilot.get("sign", 1) * (a - b)).dropna()   # the seeds both arms have


def pilot_estimate(pilot: dict) -> tuple[float, float, int]:
    """``(mean, sd, seeds)`` of :func:`pilot_values`."""
    v = pilot_values(pilot)
    return float(v.mean()), float(v.std(ddof=1)), int(v.size)


def planning_sd(sd: float, n: int, confidence: float) -> float:
    """The upper ``confidence`` bound of a spread estimated from ``n`` seeds,
    ``sd sqrt((n - 1) / chi2_{1 - confidence, n - 1})``: planning at it guards against a pilot
    whose few seeds happened to agree."""
    from scipy import stats

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2 or not 0 < confidence < 1:
        raise CompanionError(f"a planning spread needs a spread from 2 or more seeds at a confidence in (0, 1); got "
                             f"{n!r} seeds at confidence {confidence!r}.")
    _positive(sd, "the pilot's spread", "a design planned at a spread of 0 (or none) cannot be simulated")
    return float(sd * math.sqrt((n - 1) / stats.chi2.ppf(1 - confidence, n - 1)))


def scaled_yardstick(score: str, role: str, body: str, mode: str) -> dict:
    """The paper's interquartile width of ``score`` (rules v2's yardstick) scaled from the
    paper's level of that score to the pilot's: ``width x |pilot level| / |published level|``,
    where the published level is the median over the text models' rows of ``role`` (Tables
    S2/S3) and the pilot level the seed-mean layer-mean score of the pilot arm ``mode`` at its
    horizon.  The paper's bands could resolve a gap of ``width`` at its level; this is the gap
    of the same relative size at the level the runs reach."""
    from .evidence import _published, arm_values, published_iqr_width

    width = published_iqr_width(score)
    pub = _published()
    level_pub = float(pub[(pub["score"] == score) & (pub["role"] == role)]["median"].median())
    level_pilot = float(arm_values(_pilot_body(body), score, mode, non_finite="raise").mean())
    value = width * abs(level_pilot) / abs(level_pub) if level_pub else float("nan")
    _positive(value, f"the scaled yardstick of {score} (role {role!r}, pilot {body}, arm {mode})",
              f"the paper's level {level_pub:g} (no published row of that score and role reads as NaN) and the "
              f"pilot's level {level_pilot:g} must both be numbers other than 0")
    return {"published_width": width, "published_level": level_pub, "pilot_level": level_pilot, "value": value}


def speedup_yardstick(body: str, speedup: float) -> float:
    """Rules v2's Table 1 yardstick (the loss a ``speedup`` share of steps is worth at the
    end, :func:`companion.train.studies.evidence.speedup_nats`) on a pilot body's standard encoders."""
    from .evidence import speedup_nats

    value = float(speedup_nats(_pilot_body(body), speedup))
    _positive(value, f"the speed-up yardstick of {body} at {speedup!r}",
              "the pilot's loss must fall between that share of the steps and the horizon")
    return value


def _positive(value, what: str, why: str) -> None:
    """Refuse, in one line, a yardstick or spread that is not a finite number above 0: a yardstick
    of 0, below 0 or NaN decides every claim it judges the wrong way, or none."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise CompanionError(f"{what} is {value!r}, not a number above 0; {why}.")


def _simulation_settings(rules: dict, draws: int | None):
    """The looks, their one-sided nominal levels, the design check's settings and its number
    of draws (``draws`` where given), as the design check and the family error simulate them."""
    from ...rules.sequential import nominal_levels

    seq = rules["framework"]["sequential"]
    mc = rules["framework"]["design_check"]
    return seq["looks"], nominal_levels(seq["looks"], seq["alpha"], seq["spending"]), mc, int(draws or mc["draws"])


def design_check(rules: dict, draws: int | None = None) -> pd.DataFrame:
    """The design check of rules v3: for each primary claim, at the planning spread, the
    simulated probability of each outcome of the whole sequential procedure at a true effect
    of 0, of the yardstick d, and of the pilot's estimate, with the expected seeds used, the
    three targets and whether each is met.  One row per (claim, effect)."""
    from ...rules.sequential import DECIDED, simulate_design

    looks, nominal, mc, draws = _simulation_settings(rules, draws)
    t = mc["targets"]
    rows = []
    for key, r in rules["claims"].items():
        d = float(rules["yardsticks"][r["sesoi"]]["value_when_fixed"])
        p = r["pilot"]
        sd_plan = float(p["planning_sd_when_fixed"])
        est = float(p["estimate_when_fixed"])
        for label, delta in (("0", 0.0), ("d", d), ("pilot", est)):
            probs = simulate_design(delta, sd_plan, looks, nominal, d, draws=draws, seed=int(mc["seed"]))
            true = true_outcomes(delta, d)
            row = {"claim": key, "effect": label, "delta": delta, "sesoi": d, "planning_sd": sd_plan,
                   **{o: probs[o] for o in DECIDED + ("inconclusive",)},
                   "expected_seeds": probs["expected_seeds"],
                   "p_direction": probs["holds"] + probs["holds, size open"] + probs["negligible"],
                   "p_true_decided": sum(probs[o] for o in true)}
            if label == "0":
                row["target"] = f"P(direction shown | 0) <= {t['direction_at_0']}"
                row["met"] = row["p_direction"] <= t["direction_at_0"]
            elif label == "d":
                row["target"] = f"P(refuted | d) <= {t['refuted_at_d']}"
                row["met"] = probs["refuted"] <= t["refuted_at_d"]
            else:
                row["target"] = f"P(a decided outcome true of the pilot's effect | pilot) >= {t['true_at_pilot']}"
                row["met"] = row["p_true_decided"] >= t["true_at_pilot"]
            rows.append(row)
    return pd.DataFrame(rows)


def family_error_table(rules: dict, draws: int | None = None) -> pd.DataFrame:
    """What the fixed sequence of rules v3's family holds, measured: the chance that a wrong
    decided outcome stands anywhere in the family (:func:`companion.rules.sequential.family_error`,
    the design check's draws and seed), with every claim's true effect at 0, at its yardstick
    d, or at its pilot's estimate, and every claim's seed spread at its planning spread or
    equal to its yardstick (the spread near which one look most often decides wrongly).  One
    row per configuration, with the chance that the sequence reaches its last member and the
    rules' stated ``fwer``."""
    from ...rules.sequential import family_error

    fw = rules["framework"]
    looks, nominal, mc, draws = _simulation_settings(rules, draws)
    claims = [rules["claims"][k] for k in fw["family"]["order"]]
    d = [float(rules["yardsticks"][c["sesoi"]]["value_when_fixed"]) for c in claims]
    rows = []
    for effect in ("0", "d", "pilot"):
        for spread in ("planning", "d"):
            members = [({"0": 0.0, "d": di, "pilot": float(c["pilot"]["estimate_when_fixed"])}[effect],
                        float(c["pilot"]["planning_sd_when_fixed"]) if spread == "planning" else di, nominal, di)
                       for c, di in zip(claims, d)]
            res = family_error(members, looks, draws=draws, seed=int(mc["seed"]))
            rows.append({"true effects": {"0": "all 0", "d": "all at d", "pilot": "the pilots' estimates"}[effect],
                         "seed spread": {"planning": "planning spreads", "d": "equal to d"}[spread],
                         "family error": res["family_error"], "reaches the last member": res["reached"][-1],
                         "stated fwer": float(fw["family"]["fwer"])})
    return pd.DataFrame(rows)


def reachable_outcomes(rules: dict, design: pd.DataFrame | None = None, floor: float = 0.01) -> pd.DataFrame:
    """What each claim's design can reach, from the design table: the half-width of the first
    look's interval in seed spreads (``t(1 - a_1, n_1 - 1) / sqrt(n_1)``: a look whose interval
    is hundreds of spreads wide decides nothing), and each outcome whose simulated chance at a
    true effect of 0, of d or of the pilot's estimate is at least ``floor`` (with the effects at
    which it is).  One row per claim."""
    from scipy import stats

    from ...rules.sequential import DECIDED
    from ...rules.rulebook import design_table_path

    design = design if design is not None else pd.read_csv(design_table_path(rules))
    looks = rules["framework"]["sequential"]["looks"]
    a1 = float(rules["framework"]["sequential"]["nominal_when_fixed"][0])
    half = float(stats.t.isf(a1, looks[0] - 1) / math.sqrt(looks[0]))
    rows = []
    for key in rules["framework"]["family"]["order"]:
        d = design[design["claim"] == key]
        d = d.set_index(d["effect"].astype(str))
        reach = {o: [e for e in ("0", "d", "pilot") if e in d.index and d.loc[e, o] >= floor] for o in DECIDED}
        rows.append({"claim": key, "look 1 half-width (spreads)": half,
                     "reachable": ", ".join(f"{o} (at {'/'.join(es)})" for o, es in reach.items() if es) or "none",
                     "out of reach": ", ".join(o for o, es in reach.items() if not es) or "none"})
    return pd.DataFrame(rows)


def family_check_table(rules: dict, draws: int | None = None) -> pd.DataFrame:
    """The family check (version 4): for each family (its level split over its members), the
    simulated chance that a wrong decided outcome stands anywhere in it
    (:func:`companion.rules.sequential.family_error_split`), over the file's grid: every
    member's true effect at each multiple of its d in ``effects_over_d`` (and one mixed row
    per spread, members alternately at 0 and at d), every member's spread at each multiple
    of its d in ``spreads_over_d``, claims on one body correlated by ``correlation``.  One
    row per (family, effects, spread) with the stated ``fwer``; the loader refuses a file
    whose worst row exceeds it."""
    from ...rules.sequential import family_error_split

    fw = rules["framework"]
    fc = fw["family_check"]
    looks, nominal, _, _ = _simulation_settings(rules, None)
    n = int(draws or fc["draws"])
    rows = []
    for name, fam in fw["families"].items():
        if fam.get("read_once"):   # each test at its own level: the union bound, whatever the dependence
            rows.append({"family": name, "true effects": "any (union bound)", "spread over d": float("nan"),
                         "correlation": float(fc["correlation"]), "family error": fam["tests"] * fam["alpha"] / 2,
                         "worst member error": fam["alpha"] / 2, "stated fwer": float(fam["fwer"])})
            continue
        claims = [(k, rules["claims"][k]) for k in fam["members"]]
        d = [float(rules["yardsticks"][c["sesoi"]]["value_when_fixed"]) for _, c in claims]
        configs = [(f"all at {e:g} d", [e] * len(claims)) for e in fc["effects_over_d"]]
        configs.append(("alternately 0 and d", [float(i % 2) for i in range(len(claims))]))
        for label, effects in configs:
            for spread in fc["spreads_over_d"]:
                members = [(e * di, spread * di, nominal, di, c["body"]) for e, di, (_, c) in zip(effects, d, claims)]
                res = family_error_split(members, looks, correlation=float(fc["correlation"]), draws=n,
                                         seed=int(fc["seed"]))
                rows.append({"family": name, "true effects": label, "spread over d": spread,
                             "correlation": float(fc["correlation"]), "family error": res["family_error"],
                             "worst member error": max(res["member_error"]), "stated fwer": float(fam["fwer"])})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    import argparse

    from ...rules.rulebook import load_rules

    ap = argparse.ArgumentParser(prog="python -m companion.train.studies.design_check", description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the design (and, version 4, the family) table")
    ap.add_argument("--rules", default=None, help="the rules file (default: the one in force)")
    args = ap.parse_args(argv)
    from ...rules.rulebook import design_table_path, family_table_path

    rules = load_rules(args.rules, check_design=False)
    table = design_check(rules)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.round(4).to_string(index=False))
    fam = family_check_table(rules) if rules["version"] >= 4 else None
    if fam is not None:
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(fam.round(4).to_string(index=False))
    if args.write:
        from ...base.outputs import write_csv_atomic

        write_csv_atomic(table, design_table_path(rules, args.rules))
        print(f"wrote {design_table_path(rules, args.rules)}")
        if fam is not None:
            write_csv_atomic(fam, family_table_path(rules, args.rules))
            print(f"wrote {family_table_path(rules, args.rules)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
