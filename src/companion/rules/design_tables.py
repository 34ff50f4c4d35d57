"""The committed design and family tables the rules name, checked at load time against the rules themselves."""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import numpy as np

from ..base.paths import DATA_DIR
from .fields import _fail, nominal

__all__ = ["design_table_path", "family_table_path", "SETTINGS_DRAWS", "SETTINGS_Z"]

#: where a table is looked for when the rules do not say which file they came from: beside the
#: file in force (companion.rules.rulebook.RULES_PATH, which imports this module)
_IN_FORCE = DATA_DIR / "verdict_rules.yaml"


def _table_path(rules: dict, section: str, path: str | Path | None) -> Path:
    """A committed table named by ``framework.<section>.table`` (:func:`_committed_path`)."""
    return _committed_path(rules, rules["framework"][section]["table"], path)


def _committed_path(rules: dict, name: str, path: str | Path | None) -> Path:
    """A committed file the rules name (``data/...``), relative to the repository root that holds
    the rules file's ``data/`` folder."""
    table = Path(name)
    here = Path(path if path is not None else rules.get("__file__", _IN_FORCE)).resolve()
    # a table lies under the folder that holds the rules' data/ folder: the design check writes it
    # there (--write), so a name that is absolute or climbs out with '..' would overwrite any file
    if table.is_absolute() or Path(os.path.normpath(table)).parts[:1] == ("..",):
        from ..base.errors import CompanionError

        raise CompanionError(f"{here}: the table {str(name)[:80]!r} lies outside the folder of its rules "
                             f"({here.parent.parent}); name a file under it, such as data/verdict_rules_design.csv.")
    beside = here.parent / table.name
    if here.parent.name != "data":
        # a rules file outside a data/ folder (an earlier one moved unchanged to data/rules_history/,
        # or a user's own): its tables lie beside it, never in a data/ folder two levels up that it
        # does not own (--write would overwrite a file there)
        return beside
    named = here.parent.parent / table
    return named if named.exists() or not beside.exists() else beside


def _required_table(table: Path, path, where: str, named: str, command: str, what: str = "table") -> Path:
    """``table`` where it exists; else the refusal naming it and the command that writes it."""
    if table.exists() and not table.is_file():   # a FIFO would block the read, a folder fail it
        _fail(path, where, f"its {what} {named} is not a regular file ({table}); put the committed {what} there.")
    if not table.is_file():
        _fail(path, where, f"its {what} {named} is missing; run `python -m {command} --write`.")
    return table


def design_table_path(rules: dict, path: str | Path | None = None) -> Path:
    """The committed design table named by the rules (``framework.design_check.table``)."""
    return _table_path(rules, "design_check", path)


def family_table_path(rules: dict, path: str | Path | None = None) -> Path:
    """The committed family table (``framework.family_check.table``)."""
    return _table_path(rules, "family_check", path)


#: the most draws the settings tests re-simulate (:func:`_check_design_settings`,
#: :func:`_check_family_settings`): the rules' own number where it is at most this (the same seed
#: and draws as the committed table, so the same numbers), else this many; about 0.1 s a row
SETTINGS_DRAWS = 20000
#: how far (in Monte Carlo standard errors of the difference between two independent
#: simulations of :data:`SETTINGS_DRAWS` draws) a committed table's chance or expected seeds may
#: lie from the rules' own before the table is refused.  A table of the rules' own settings,
#: seed and draws agrees exactly; one of another seed or number of draws within its Monte Carlo
#: error.  At 2,000 draws and 6 errors (the check before) an alpha of 0.025 read a table of 0.02
#: as its own, and a family table of 0.02 hid a family erring in 4.9% of draws, not 4.0%
SETTINGS_Z = 4.0


def _settings_n(rules: dict, section: str) -> int:
    return min(int(rules["framework"][section]["draws"]), SETTINGS_DRAWS)


def _off(table_value: float, p: float, n: int) -> bool:
    """Whether a committed chance lies more than :data:`SETTINGS_Z` errors from ``p`` simulated at ``n`` draws."""
    se = math.sqrt(max(p * (1 - p), 1 / n) * 2 / n)
    return not abs(float(table_value) - p) <= SETTINGS_Z * se


@functools.lru_cache(maxsize=16)
def _settings_draws(est: float, sd: float, looks: tuple, nominal_levels: tuple, d: float, seed: int, n: int):
    """The chance of each outcome (in ``DECIDED + ('inconclusive',)`` order) and the mean and
    spread of the seeds used over ``n`` draws of the design at ``est`` (remembered: every load
    of the same rules asks the same)."""
    from .sequential import DECIDED, _drawn_outcomes

    x = est + sd * np.random.default_rng(seed).standard_normal((n, looks[-1]))
    outcome, used = _drawn_outcomes(x, list(looks), np.asarray(nominal_levels), d)
    return (tuple(float(np.mean(outcome == o)) for o in DECIDED + ("inconclusive",)),
            (float(used.mean()), float(used.std())))


def _check_design_settings(rules, df, path) -> None:
    """The committed design table was computed with this file's looks, alpha and spending
    function: its first claim's row at the pilot's effect is simulated again at the rules'
    draws (at most :data:`SETTINGS_DRAWS`) and seed, and each outcome's chance and the
    expected seeds must agree within :data:`SETTINGS_Z` standard errors.  (A table made with
    another seed or number of draws of the same design agrees within its Monte Carlo error,
    and is the same design.)"""
    from .sequential import DECIDED

    key, r = next(iter(rules["claims"].items()))
    row = df[(df["claim"] == key) & (df["effect"].astype(str) == "pilot")].iloc[0]
    d = float(rules["yardsticks"][r["sesoi"]]["value_when_fixed"])
    sd, est = float(r["pilot"]["planning_sd_when_fixed"]), float(r["pilot"]["estimate_when_fixed"])
    looks, mc = rules["framework"]["sequential"]["looks"], rules["framework"]["design_check"]
    n = _settings_n(rules, "design_check")
    chances, (seeds_mean, seeds_sd) = _settings_draws(est, sd, tuple(int(k) for k in looks),
                                                      tuple(float(a) for a in nominal(rules)), d, int(mc["seed"]), n)
    far = [f"P({name}) {float(row[name]):.4f} against {p:.4f}"
           for name, p in zip(DECIDED + ("inconclusive",), chances) if _off(row[name], p, n)]
    se = max(seeds_sd, 1.0) * math.sqrt(2 / n)
    if not abs(float(row["expected_seeds"]) - seeds_mean) <= SETTINGS_Z * se:
        far.append(f"expected seeds {float(row['expected_seeds']):.2f} against {seeds_mean:.2f}")
    if far:
        s = rules["framework"]["sequential"]
        _fail(path, f"rule {key!r}", f"the design table was not computed for this file's looks {s['looks']}, alpha "
                                     f"{s['alpha']} and {s['spending']} spending (at the pilot's effect: "
                                     f"{'; '.join(far)}); recompute it (companion.train.studies.design_check --write).")


@functools.lru_cache(maxsize=16)
def _family_row_error(members: tuple, looks: tuple, correlation: float, seed: int, n: int) -> float:
    from .sequential import family_error_split

    return family_error_split([(e, s, np.asarray(nom), d, g) for e, s, nom, d, g in members], list(looks),
                              correlation=correlation, draws=n, seed=seed)["family_error"]


def _check_family_settings(rules: dict, df, table, path) -> None:
    """The committed family table was computed with this file's looks, alpha, spending,
    correlation, seed and draws: each split family's worst row (the one the loader holds to
    the family's ``fwer``) is simulated again at the rules' draws (at most
    :data:`SETTINGS_DRAWS`) and seed, and must agree within :data:`SETTINGS_Z` standard errors.
    A table left from another alpha or spending showed a family within its level that, read
    as the rules now say, is not."""
    import pandas as pd

    fw, fc = rules["framework"], rules["framework"]["family_check"]
    looks = tuple(int(k) for k in fw["sequential"]["looks"])
    nom = tuple(float(a) for a in nominal(rules))
    n = _settings_n(rules, "family_check")
    for name, f in fw["families"].items():
        if f.get("read_once"):
            continue
        rows = df[df["family"] == name]
        err = pd.to_numeric(rows["family error"], errors="coerce")
        row = rows.loc[err.idxmax()]
        label, spread = str(row["true effects"]), float(row["spread over d"])
        claims = [rules["claims"][k] for k in f["members"]]
        if label == "alternately 0 and d":
            effects = [float(i % 2) for i in range(len(claims))]
        else:
            effects = [float(label.removeprefix("all at ").removesuffix(" d"))] * len(claims)
        members = []
        for e, c in zip(effects, claims):
            d = float(rules["yardsticks"][c["sesoi"]]["value_when_fixed"])
            members.append((e * d, spread * d, nom, d, c["body"]))
        p = _family_row_error(tuple(members), looks, float(fc["correlation"]), int(fc["seed"]), n)
        if _off(row["family error"], p, n):
            s = fw["sequential"]
            _fail(path, f"framework.families.{name}", f"the family table {table.name} was not computed for this file's "
                                                      f"looks {s['looks']}, alpha {s['alpha']}, {s['spending']} spending, "
                                                      f"correlation, seed and draws (its worst row, {label} at spread "
                                                      f"{spread:g} d, says {float(row['family error']):.4f}; simulated "
                                                      f"again, {p:.4f}); {_RECOMPUTE}.")


#: the columns of a design table (companion.train.studies.design_check.design_check) that hold numbers
_DESIGN_NUMBERS = ("delta", "sesoi", "planning_sd", "holds", "holds, size open", "negligible", "refuted",
                   "inconclusive", "expected_seeds", "p_direction", "p_true_decided")
_RECOMPUTE = "recompute it (companion.train.studies.design_check --write)"


def _check_design_rows(rules, df, table, path) -> None:
    """Each row of a committed design table is what the design check writes, so a table edited
    by hand is refused rather than read (and shown on the pages): its claims are the rules'
    (no row for a claim the file does not hold), every number is finite, each row's outcome
    chances lie in [0, 1] and sum to 1, ``p_direction`` is P(holds) + P(holds, size open) +
    P(negligible), and ``met`` is the row's target read again from the rules' targets."""
    import pandas as pd

    from .sequential import DECIDED

    where = "framework.design_check"
    missing = [c for c in ("claim", "effect", *_DESIGN_NUMBERS, "met") if c not in df.columns]
    if missing:
        _fail(path, where, f"the design table {table.name} lacks the columns {missing}; {_RECOMPUTE}.")
    extra = sorted(set(df["claim"].astype(str)) - set(rules["claims"]))
    if extra:
        _fail(path, where, f"the design table {table.name} has rows for {extra}, claims this file does not hold; "
                           f"{_RECOMPUTE}.")
    nums = df[list(_DESIGN_NUMBERS)].apply(pd.to_numeric, errors="coerce")
    bad = ~np.isfinite(nums.to_numpy(float))
    if bad.any():
        i, j = (int(k[0]) for k in np.nonzero(bad))
        _fail(path, where, f"the design table {table.name} holds no number for {_DESIGN_NUMBERS[j]!r} in the row of "
                           f"{df['claim'].iloc[i]!r} at effect {df['effect'].iloc[i]!s}; {_RECOMPUTE}.")
    chances = nums[list(DECIDED + ("inconclusive",))].to_numpy(float)
    total = chances.sum(axis=1)
    off = (chances < 0).any(axis=1) | (chances > 1).any(axis=1) | (np.abs(total - 1) > 1e-6)
    direction = nums["holds"] + nums["holds, size open"] + nums["negligible"]
    off |= (np.abs(nums["p_direction"] - direction) > 1e-6).to_numpy()
    # p_true_decided is the chance of the decided outcomes true of the row's effect (true_outcomes):
    # edited with its 'met', a missed target would read as met
    from .sequential import true_outcomes

    names = list(DECIDED + ("inconclusive",))
    true = np.array([sum(c[names.index(o)] for o in true_outcomes(dl, d))
                     for c, dl, d in zip(chances, nums["delta"], nums["sesoi"])])
    off |= np.abs(nums["p_true_decided"].to_numpy(float) - true) > 1e-6
    if off.any():
        i = int(np.argmax(off))
        _fail(path, where, f"the row of {df['claim'].iloc[i]!r} at effect {df['effect'].iloc[i]!s} in the design table "
                           f"{table.name} is not what the design check writes (its outcome chances sum to "
                           f"{total[i]:.6f}, not 1, or its p_direction is not P(holds) + P(holds, size open) + "
                           f"P(negligible), or its p_true_decided {nums['p_true_decided'].iloc[i]:.6g} is not the "
                           f"chance of the outcomes true of its effect, {true[i]:.6g}); {_RECOMPUTE}.")


def _check_design_met(rules, df, table, path) -> None:
    """A committed design table's ``met`` is each row's target read again from its numbers and
    the rules' targets (after :func:`_check_design` has refused a target the rules' own claims
    miss): a ``met`` edited by hand would drop a claim from the page's list of missed targets."""
    import pandas as pd

    t = rules["framework"]["design_check"]["targets"]
    nums = df[list(_DESIGN_NUMBERS)].apply(pd.to_numeric, errors="coerce")
    effect = df["effect"].astype(str).to_numpy()
    met = np.where(effect == "0", nums["p_direction"] <= t["direction_at_0"],
                   np.where(effect == "d", nums["refuted"] <= t["refuted_at_d"],
                            nums["p_true_decided"] >= t["true_at_pilot"]))
    said = df["met"].astype(str).str.strip().str.lower().map({"true": True, "false": False})
    off = said.isna().to_numpy() | (said.to_numpy() != met)
    if off.any():
        i = int(np.argmax(off))
        _fail(path, "framework.design_check", f"the row of {df['claim'].iloc[i]!r} at effect {df['effect'].iloc[i]!s} "
                                              f"in the design table {table.name} says met {df['met'].iloc[i]!s}, but "
                                              f"its numbers {'meet' if met[i] else 'miss'} the rules' target; "
                                              f"{_RECOMPUTE}.")


def _check_planning_sd(p: dict, confidence: float, path, where: str) -> None:
    """``pilot.planning_sd_when_fixed`` is the upper ``planning_confidence`` bound of the pilot's
    spread ``sd_when_fixed`` over its ``seeds``, ``sd sqrt((n - 1) / chi2_{1 - confidence, n - 1})``
    (:func:`companion.train.studies.design_check.planning_sd`), to four figures: the design
    table is checked against the planning spread, so one left from another confidence or pilot
    planned the design at a spread the rules do not state, and loaded."""
    from scipy import stats

    n, sd = p["seeds"], float(p["sd_when_fixed"])
    if n < 2:
        _fail(path, where, "'pilot.seeds' must be 2 or more: one seed gives no spread to plan at.")
    want = sd * math.sqrt((n - 1) / stats.chi2.ppf(1 - confidence, n - 1))
    if not abs(float(p["planning_sd_when_fixed"]) - want) <= 5e-4 * want:
        _fail(path, where, f"'pilot.planning_sd_when_fixed' {p['planning_sd_when_fixed']:g} is not the upper "
                           f"{confidence:g} bound of the pilot's spread {sd:g} over {n} seeds ({want:.5g}); "
                           "recompute it from the pilot, then the design table.")


def _check_design(rules, path):
    """The committed design table exists, was computed for this file's yardsticks, planning
    spreads and pilot effects (each claim's row at the pilot's effect is at the rules'
    ``pilot.estimate_when_fixed``; each planning spread is the pilot's at the planning
    confidence, :func:`_check_planning_sd`) and for its looks, alpha and spending function
    (:func:`_check_design_settings`), covers every claim at 0, d and the pilot's effect, and
    meets every target."""
    import pandas as pd

    dc = rules["framework"]["design_check"]
    table = _required_table(design_table_path(rules, path), path, "framework.design_check", dc["table"],
                            "companion.train.studies.design_check")
    df = pd.read_csv(table)
    _check_design_rows(rules, df, table, path)
    for key, r in rules["claims"].items():
        rows = df[df["claim"] == key]
        if sorted(rows["effect"].astype(str)) != ["0", "d", "pilot"]:
            _fail(path, f"rule {key!r}", f"the design table {table.name} has no rows at effects 0, d and the pilot's; "
                                         "recompute it (companion.train.studies.design_check --write).")
        d = float(rules["yardsticks"][r["sesoi"]]["value_when_fixed"])
        sd = float(r["pilot"]["planning_sd_when_fixed"])
        if not (np.allclose(rows["sesoi"], d, rtol=1e-6) and np.allclose(rows["planning_sd"], sd, rtol=1e-6)):
            _fail(path, f"rule {key!r}", f"the design table was computed for another yardstick or planning spread "
                                         f"than the rules' (d {d:g}, sd {sd:g}); recompute it.")
        _check_planning_sd(r["pilot"], dc["planning_confidence"], path, f"rule {key!r}")
        est = float(r["pilot"]["estimate_when_fixed"])
        at = rows[rows["effect"].astype(str) == "pilot"]["delta"].astype(float)
        if not np.allclose(at, est, rtol=1e-6, atol=1e-12):
            _fail(path, f"rule {key!r}", f"the design table was computed at a pilot effect of {float(at.iloc[0]):g}, "
                                         f"not the rules' pilot.estimate_when_fixed {est:g}; recompute it "
                                         "(companion.train.studies.design_check --write).")
        t = dc["targets"]
        by = rows.set_index(rows["effect"].astype(str))
        checks = {"0": (by.loc["0", "p_direction"] <= t["direction_at_0"], f"P(direction shown | 0) <= {t['direction_at_0']}"),
                  "d": (by.loc["d", "refuted"] <= t["refuted_at_d"], f"P(refuted | d) <= {t['refuted_at_d']}"),
                  "pilot": (by.loc["pilot", "p_true_decided"] >= t["true_at_pilot"],
                            f"P(a decided outcome true of the pilot's effect | pilot) >= {t['true_at_pilot']}")}
        accepted = r.get("below_target") if rules.get("version", 3) >= 4 else None
        for effect, (ok, target) in checks.items():   # the rules' targets, not the table's own verdict
            if not ok and isinstance(accepted, dict) and isinstance(accepted.get(effect), str) and accepted[effect].strip():
                continue   # missed, and the rules say so with the reason (version 4; a blank reason is none)
            if not ok:
                _fail(path, f"rule {key!r}", f"the design check fails its own target at effect {effect} "
                                             f"({target}); the design cannot decide this claim as written.")
    _check_design_met(rules, df, table, path)
    _check_design_settings(rules, df, path)


def _check_family_table(rules: dict, path) -> None:
    """The committed family table exists, covers every family over the file's grid, and its
    worst case is within each family's stated ``fwer``."""
    import pandas as pd

    fc = rules["framework"]["family_check"]
    table = _required_table(family_table_path(rules, path), path, "framework.family_check", fc["table"],
                            "companion.train.studies.design_check")
    df = pd.read_csv(table)
    _check_family_rows(rules, df, table, path)
    for name, f in rules["framework"]["families"].items():
        rows = df[df["family"] == name]
        if f.get("read_once"):
            # claims read once, each at its own level: the union bound, whatever their dependence
            bound = f["tests"] * f["alpha"] / 2
            if len(rows) != 1 or not np.isclose(float(rows["family error"].iloc[0]), bound, rtol=1e-6):
                _fail(path, f"framework.families.{name}", f"the family table {table.name} must state its bound, "
                                                          f"{f['tests']} x {f['alpha']:g} / 2 = {bound:.4g}; recompute "
                                                          "it (companion.train.studies.design_check --write).")
            if bound > f["fwer"]:
                _fail(path, f"framework.families.{name}", f"its bound {bound:.4g} exceeds the stated fwer {f['fwer']}.")
            continue
        if not np.isclose(rows["correlation"], fc["correlation"]).all():
            _fail(path, f"framework.families.{name}", f"the family table {table.name} does not cover the file's grid "
                                                      "and correlation; recompute it (companion.train.studies.design_check --write).")
        worst = float(rows["family error"].max())
        if worst > f["fwer"]:
            _fail(path, f"framework.families.{name}", f"simulated over the whole procedure, a wrong decided outcome "
                                                      f"stands in {worst:.2%} of families at worst, above the stated "
                                                      f"fwer {f['fwer']}; the family does not hold its level.")
    _check_family_settings(rules, df, table, path)


def _check_family_rows(rules: dict, df, table, path) -> None:
    """Each row of a committed family table is what the family check writes, so a table edited
    by hand is refused rather than read (a page shows its worst case): its families are the
    rules' (no row for another), every family error is a number, each row states its family's
    own ``fwer``, and a split family has exactly one row for each point of the file's grid (every
    member at each of ``effects_over_d`` times d, and alternately at 0 and d, by each of
    ``spreads_over_d``): a dropped row would leave its case unchecked, a doubled one hide it."""
    import pandas as pd

    fw, fc = rules["framework"], rules["framework"]["family_check"]
    missing = [c for c in ("family", "true effects", "spread over d", "correlation", "family error", "stated fwer")
               if c not in df.columns]
    if missing:
        _fail(path, "framework.family_check", f"the family table {table.name} lacks the columns {missing}; {_RECOMPUTE}.")
    extra = sorted(set(df["family"].astype(str)) - set(fw["families"]))
    if extra:
        _fail(path, "framework.family_check", f"the family table {table.name} has rows for {extra}, families this file "
                                              f"does not hold; {_RECOMPUTE}.")
    grid = sorted([(f"all at {float(e):g} d", float(x)) for e in fc["effects_over_d"] for x in fc["spreads_over_d"]]
                  + [("alternately 0 and d", float(x)) for x in fc["spreads_over_d"]])
    for name, f in fw["families"].items():
        rows = df[df["family"] == name]
        err = pd.to_numeric(rows["family error"], errors="coerce").to_numpy(float)
        stated = pd.to_numeric(rows["stated fwer"], errors="coerce").to_numpy(float)
        where = f"framework.families.{name}"
        if not np.isfinite(err).all() or not np.isclose(stated, float(f["fwer"]), rtol=1e-9).all():
            _fail(path, where, f"the family table {table.name} has a row with no family error or a stated fwer other "
                               f"than the file's {f['fwer']}; {_RECOMPUTE}.")
        # chances, and a member's wrong outcome is one of its family's: 0 <= worst member <= family <= 1
        worst = pd.to_numeric(rows.get("worst member error", pd.Series(dtype=float)), errors="coerce").to_numpy(float)
        if ((err < 0) | (err > 1)).any() or not (worst.size == err.size and np.isfinite(worst).all()
                                                   and ((worst >= 0) & (worst <= err + 1e-12)).all()):
            _fail(path, where, f"the family table {table.name} has a row whose family error is no chance in [0, 1] "
                               f"or whose worst member error is missing or not between 0 and the family error; "
                               f"{_RECOMPUTE}.")
        if f.get("read_once"):
            continue
        got = sorted(zip(rows["true effects"].astype(str), pd.to_numeric(rows["spread over d"], errors="coerce")))
        if len(got) != len(grid) or any(a != b or not np.isclose(x, y) for (a, x), (b, y) in zip(got, grid)):
            _fail(path, where, f"the family table {table.name} does not hold exactly one row for each of the file's "
                               f"{len(grid)} cases (true effects by spread); {_RECOMPUTE}.")
