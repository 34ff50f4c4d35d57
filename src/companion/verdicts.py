"""The statistics behind the empirical verdicts, and the rules file that fixes them.

Every empirical claim of Saponati et al. (ICML 2025) that the book judges (Figs. 3a, 3b,
S5b, Table 1, Sec. 3's contrast, the premises of Thms. S1.12/S1.14 and Cor. S1.13) is
decided by a rule written in ``data/verdict_rules.yaml`` before the evidence it judges,
through the functions here:

:func:`paired_t`
    the mean of per-seed differences with a two-sided Student-t interval over seeds (the
    seed is the independent unit: a pair of runs with one seed shares its initial draw and
    its data order, so the difference removes both);
:func:`directional_outcome`
    ``holds`` when the interval lies above 0, ``refuted`` when it lies below the smallest
    effect of interest, ``inconclusive`` otherwise, ``not testable here`` when the seeds
    are too few or the gate fails;
:func:`threshold_outcome`, :func:`equivalence_outcome`
    the same four outcomes for a claim about a level (a premise's threshold) and for a
    claim of equality (Cor. S1.13);
:func:`detectable_effect`
    the true difference the test finds with probability 0.8 at the seeds it has (power);
:func:`holm`
    Holm's step-down adjustment over the family of empirical verdicts;
:func:`median_interval`
    a distribution-free interval for a median over seeds with its exact coverage.

Each outcome can occur: ``tests/test_verdicts.py`` drives every rule with synthetic seeds
and shows all four.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import CompanionError

__all__ = ["OUTCOMES", "Estimate", "load_rules", "rule", "paired_t", "one_sample_t",
           "directional_outcome", "threshold_outcome", "equivalence_outcome",
           "detectable_effect", "p_above", "p_below", "holm", "median_interval",
           "rule_written_after"]

#: the outcomes of an empirical verdict
OUTCOMES = ("holds", "refuted", "inconclusive", "not testable here")

RULES_PATH = Path(__file__).resolve().parents[2] / "data" / "verdict_rules.yaml"


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds with its two-sided Student-t interval at ``level``."""

    values: tuple
    mean: float
    sd: float
    low: float
    high: float
    level: float

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n) if self.n > 1 else float("nan")

    def text(self, fmt: str = "+.3f") -> str:
        """``+0.012 (95% t-interval -0.03 to +0.05, 3 seeds)``; one seed: no interval."""
        if self.n < 2:
            return f"{self.mean:{fmt}} (1 seed, no interval)"
        return (f"{self.mean:{fmt}} ({self.level:.0%} t-interval {self.low:{fmt}} to "
                f"{self.high:{fmt}}, {self.n} seeds)")


# ------------------------------------------------------------------- rules


def load_rules(path: str | Path | None = None) -> dict:
    """The rules file (``data/verdict_rules.yaml``), checked for the fields the framework reads."""
    import yaml

    path = Path(path) if path is not None else RULES_PATH
    try:
        rules = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise CompanionError(f"no verdict rules at {path}; the book's data/verdict_rules.yaml is "
                             "needed (run from a checkout or an editable install).") from None
    except yaml.YAMLError as err:
        raise CompanionError(f"{path} is not valid YAML ({err}); fix the file.") from None
    if not isinstance(rules, dict) or not isinstance(rules.get("claims"), dict):
        raise CompanionError(f"{path} has no 'claims' mapping; see the file's header for its layout.")
    for key, r in rules["claims"].items():
        for field in ("claim", "test", "fixed", "seen_before"):
            if field not in r:
                raise CompanionError(f"rule {key!r} in {path} has no {field!r}; every rule says what "
                                     "it judges, how, when it was written and what had been seen.")
        if not isinstance(r["fixed"], _dt.date):
            raise CompanionError(f"rule {key!r}: 'fixed' must be a date (YYYY-MM-DD); got {r['fixed']!r}.")
    for key, b in rules.get("bodies", {}).items():
        if not {"seeds", "label"} <= set(b) or not ({"pattern", "patterns"} & set(b)):
            raise CompanionError(f"body {key!r} in {path} needs 'label', 'seeds' and 'pattern' "
                                 "(or a list 'patterns').")
    return rules


def rule(key: str, rules: dict | None = None) -> dict:
    """One claim's rule by key, with the framework's settings under ``"framework"``."""
    rules = rules if rules is not None else load_rules()
    if key not in rules["claims"]:
        raise CompanionError(f"no rule for claim {key!r} in the rules file; rules exist for "
                             f"{sorted(rules['claims'])}.")
    return dict(rules["claims"][key], framework=rules.get("framework", {}), key=key)


def rule_written_after(r: dict, dates) -> bool:
    """Whether rule ``r`` was written after any of ``dates`` (ISO strings or dates) of the
    evidence it judges: such a rule is shown as set after the data."""
    fixed = r["fixed"]
    for d in dates:
        d = _dt.date.fromisoformat(str(d)[:10]) if not isinstance(d, _dt.date) else d
        if d < fixed:
            return True
    return False


# ------------------------------------------------------------------- estimates


def one_sample_t(values, level: float = 0.95) -> Estimate:
    """Mean of ``values`` (one per seed) with its two-sided Student-t interval."""
    from scipy import stats

    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}.")
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0 or not np.isfinite(v).all():
        raise ValueError(f"need at least one finite value per seed; got {values!r}.")
    mean = float(v.mean())
    if v.size < 2:
        return Estimate(tuple(v.tolist()), mean, float("nan"), float("nan"), float("nan"), level)
    sd = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1)) * sd / math.sqrt(v.size)
    return Estimate(tuple(v.tolist()), mean, sd, mean - half, mean + half, level)


def paired_t(candidate, comparator, level: float = 0.95) -> Estimate:
    """Mean of the per-seed differences ``candidate - comparator`` and its t-interval.

    Both are pandas Series indexed by seed (or equal-length sequences in seed order); only
    seeds present in both count.
    """
    import pandas as pd

    a, b = pd.Series(candidate, dtype=float), pd.Series(comparator, dtype=float)
    if not (isinstance(candidate, pd.Series) and isinstance(comparator, pd.Series)) and len(a) != len(b):
        raise ValueError(f"paired values need one of each per seed; got {len(a)} and {len(b)}.")
    diff = (a - b).dropna()
    return one_sample_t(diff.to_numpy(), level)


# ------------------------------------------------------------------- outcomes


def directional_outcome(est: Estimate, sesoi: float = 0.0, min_seeds: int = 3,
                        gate: bool = True) -> str:
    """The claim says the true mean difference is > 0.

    ``not testable here`` when fewer than ``min_seeds`` seeds or the gate fails;
    ``holds`` when the interval's lower end is above 0; ``refuted`` when its upper end is
    below ``sesoi`` (the interval excludes every effect as large as the smallest one of
    interest; a reversed effect is one case); ``inconclusive`` otherwise.
    """
    if est.n < max(min_seeds, 2) or not gate:
        return "not testable here"
    if est.low > 0:
        return "holds"
    if est.high < sesoi:
        return "refuted"
    return "inconclusive"


def threshold_outcome(est: Estimate, threshold: float, min_seeds: int = 3) -> str:
    """The claim (a premise) says the true mean is above ``threshold``: ``holds`` when the
    interval lies above it, ``refuted`` when it lies below, else ``inconclusive``."""
    if est.n < max(min_seeds, 2):
        return "not testable here"
    if est.low > threshold:
        return "holds"
    if est.high < threshold:
        return "refuted"
    return "inconclusive"


def equivalence_outcome(est: Estimate, band: float, min_seeds: int = 3) -> str:
    """The claim says the true mean is 0: ``holds`` when the interval lies inside
    ``(-band, band)``, ``refuted`` when it lies wholly outside ``[-band, band]``,
    ``inconclusive`` otherwise."""
    if band <= 0:
        raise ValueError(f"the equivalence band must be > 0; got {band}.")
    if est.n < max(min_seeds, 2):
        return "not testable here"
    if -band < est.low and est.high < band:
        return "holds"
    if est.low > band or est.high < -band:
        return "refuted"
    return "inconclusive"


# ------------------------------------------------------------------- power and multiplicity


def detectable_effect(n: int, sd: float, level: float = 0.95, power: float = 0.8) -> float:
    """The true mean difference that the test 'interval above 0' detects with probability
    ``power``, at ``n`` seeds with seed-to-seed standard deviation ``sd`` (non-central t).

    The test rejects when ``mean / (sd/sqrt(n)) > t_{1-alpha/2, n-1}`` with
    ``alpha = 1 - level``; under a true difference ``delta`` the statistic is non-central t
    with ``n - 1`` degrees of freedom and non-centrality ``delta sqrt(n) / sd``.
    """
    from scipy import optimize, stats

    if n < 2 or not np.isfinite(sd) or sd <= 0:
        return float("nan")
    df = n - 1
    crit = stats.t.ppf(0.5 + level / 2, df)

    def gap(ncp):
        return stats.nct.sf(crit, df, ncp) - power

    ncp = optimize.brentq(gap, 0.0, 200.0)
    return float(ncp * sd / math.sqrt(n))


def p_above(est: Estimate, value: float = 0.0) -> float:
    """One-sided p-value of 'true mean > value' (t-test with ``n - 1`` degrees of freedom)."""
    from scipy import stats

    if est.n < 2 or not est.sd > 0:
        return float("nan")
    return float(stats.t.sf((est.mean - value) / est.se, est.n - 1))


def p_below(est: Estimate, value: float = 0.0) -> float:
    """One-sided p-value of 'true mean < value'."""
    from scipy import stats

    if est.n < 2 or not est.sd > 0:
        return float("nan")
    return float(stats.t.cdf((est.mean - value) / est.se, est.n - 1))


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error rate); NaN entries stay NaN
    and do not count towards the family's size."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    order = ok[np.argsort(p[ok])]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def median_interval(values, level: float = 0.95) -> dict:
    """A distribution-free interval for the median of the seeds' distribution.

    The interval between the k-th smallest and the k-th largest of ``n`` values covers
    the median with probability ``1 - 2 P(Binomial(n, 1/2) < k)``, whatever the
    distribution.  The largest ``k`` whose coverage is at least ``level`` is used; when
    even ``k = 1`` (min to max) falls short, that is used and its coverage stated (with 3
    seeds: 0.75).  NaN values are censored below every observed one (as ``-inf``).
    Returns ``median``, ``low``, ``high``, ``coverage``, ``n``.
    """
    from scipy import stats

    v = np.sort(np.where(np.isnan(np.asarray(values, dtype=float)), -np.inf, values))
    n = v.size
    if n == 0:
        raise ValueError("no values given.")
    best = 1
    for k in range(1, (n + 1) // 2 + 1):
        if 1 - 2 * stats.binom.cdf(k - 1, n, 0.5) >= level:
            best = k
    coverage = float(1 - 2 * stats.binom.cdf(best - 1, n, 0.5))
    return {"median": float(np.median(v)), "low": float(v[best - 1]), "high": float(v[n - best]),
            "coverage": coverage, "n": int(n)}
