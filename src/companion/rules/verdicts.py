"""The statistics behind the empirical verdicts, and the rules file that fixes them.

Every empirical claim of Saponati et al. (ICML 2025) that the book judges (Figs. 3a, 3b,
S5b, Table 1, Sec. 3's contrast, the premises of Thms. S1.12/S1.14 and Cor. S1.13, the
update-level mechanism and the objective swap) is decided by a rule written in
``data/verdict_rules.yaml`` (version 2) before the evidence it judges, through the
functions here:

:func:`paired_t`
    the mean of per-seed differences with a two-sided Student-t interval over seeds (the
    seed is the independent unit: a pair of runs with one seed shares its initial draw and
    its data order, so the difference removes both);
:func:`directional_outcome`
    one of six outcomes that partition every interval (``holds``, ``holds, size open``,
    ``negligible``, ``refuted``, ``inconclusive``, ``not testable here``), so that no two
    can hold at once;
:func:`threshold_outcome`, :func:`equivalence_outcome`
    the outcomes of a claim about a level (a premise's threshold) and of a claim of
    equality (Cor. S1.13);
:func:`deciding_p`
    the one-sided p-value of the test that decided an outcome, the one Holm adjusts;
:func:`directional_power`, :func:`threshold_power`, :func:`equivalence_power`
    the power of the test actually applied, at the seeds it has (Monte Carlo over the
    exact law of the mean and the standard deviation, fixed seed);
:func:`holm`
    Holm's step-down adjustment over the family of empirical verdicts;
:func:`median_interval`
    a distribution-free interval for a median over seeds with its exact coverage.

Version 1's outcome rule is kept as :func:`directional_outcome_v1` (the page shows each
claim's v1 outcome beside v2's).  ``tests/test_verdicts.py`` drives every rule with
synthetic seeds and shows each outcome occurs and that no two can hold at once.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base.errors import CompanionError
from ..base.paths import DATA_DIR

__all__ = ["OUTCOMES", "OUTCOMES_V1", "DECIDED", "Estimate", "load_rules", "rule", "paired_t", "one_sample_t",
           "directional_outcome", "directional_outcome_v1", "outcome_conditions", "threshold_outcome",
           "equivalence_outcome", "deciding_p", "directional_power", "threshold_power", "equivalence_power",
           "detectable_effect", "p_above", "p_below", "holm", "median_interval", "rule_written_after",
           "rule_commit_time", "started_before_rule"]

#: the outcomes of an empirical verdict under rules v2 (they partition every interval)
OUTCOMES = ("holds", "holds, size open", "negligible", "refuted", "inconclusive", "not testable here")
#: version 1's outcomes (``holds`` and ``refuted`` could both be true; v1 settled it by order)
OUTCOMES_V1 = ("holds", "refuted", "inconclusive", "not testable here")
#: outcomes that decide something, so that they enter the family's correction
DECIDED = ("holds", "holds, size open", "negligible", "refuted")

RULES_PATH = DATA_DIR / "verdict_rules.yaml"


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
        """``+0.012 (95% t-interval -0.03 to +0.05, 3 seeds)``; one seed: ``one seed, no interval`` (:func:`companion.base.phrasing.interval`)."""
        from ..base.phrasing import interval

        return f"{self.mean:{fmt}} ({interval(self.low, self.high, n=self.n, level=self.level, fmt=fmt)})"


# ------------------------------------------------------------------- rules

#: the largest number of YAML nodes a rules file may hold once aliases are expanded
MAX_RULE_NODES = 20_000


def _load_bounded(text: str, path) -> object:
    """Safe YAML, refusing a document whose aliases expand past :data:`MAX_RULE_NODES`
    nodes (a 'billion laughs' file) before it is built."""
    from ..base.bounded_yaml import TooDeep, load_bounded

    try:
        return load_bounded(text, MAX_RULE_NODES)
    except TooDeep:
        raise CompanionError(f"{path} nests its mappings or lists too deeply to be a rules file; write it "
                             "out plainly.") from None
    except OverflowError:
        raise CompanionError(f"{path}: the rules file expands to more than {MAX_RULE_NODES:,} "
                             "YAML nodes (aliases repeated inside aliases?); write it out plainly.") from None


def load_unique(text: str, path):
    """Safe YAML that refuses a key written twice in one mapping (the second copy would
    silently win) and aliases expanding past the rules' bound."""
    import yaml

    class Unique(yaml.SafeLoader):
        pass

    def construct(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise CompanionError(f"{path}: the key {key!r} is written twice in one mapping (line "
                                     f"{key_node.start_mark.line + 1}); keep one, or the second copy would "
                                     "silently replace the first.")
            seen.add(key)
        return loader.construct_mapping(node, deep=deep)

    Unique.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct)
    try:
        _load_bounded(text, path)   # the alias bound, before building anything
        return yaml.load(text, Loader=Unique)   # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        raise CompanionError(f"{path} is not valid YAML ({str(err)[:300]}); fix the file.") from None
    except RecursionError:
        raise CompanionError(f"{path} nests its mappings or lists too deeply to be a rules file; write it "
                             "out plainly.") from None


def _when(value, where: str, path, field: str = "fixed") -> _dt.datetime:
    """A rule's ``fixed`` (or another stamp, ``field``): a full timestamp with its time zone, not in
    the future."""
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value)
        except ValueError:
            raise CompanionError(f"{where} in {path}: '{field}' must be an ISO 8601 timestamp with a time zone "
                                 f"(e.g. 2026-11-26T21:54:00+00:00); got {value!r}.") from None
    if not isinstance(value, _dt.datetime):
        raise CompanionError(f"{where} in {path}: '{field}' must be a timestamp with a time zone "
                             f"(e.g. 2026-11-26T21:54:00+00:00), not only a date; got {value!r}.")
    if value.tzinfo is None:
        raise CompanionError(f"{where} in {path}: '{field}' ({value.isoformat()}) has no time zone; add one "
                             "(e.g. +00:00), or the moment it names is ambiguous.")
    if value > _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(minutes=5):
        raise CompanionError(f"{where} in {path}: '{field}' ({value.isoformat()}) lies in the future; a rule "
                             "is dated when it is written.")
    return value


def _number(r: dict, field: str, where: str, path, positive: bool = False):
    v = r[field]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
        kind = "a positive number" if positive else "a finite number"
        raise CompanionError(f"{where} in {path}: {field!r} must be {kind}; got {v!r}.")
    return v


def _whole_numbers(v) -> bool:
    return isinstance(v, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in v)


def _check_body(key, b: dict, path) -> None:
    """The fields of a body that the loaders of runs read: seeds (whole numbers) and the
    folder pattern(s) (text)."""
    where = f"body {key!r} in {path}"
    for field in ("seeds", "extra_seeds"):
        if field in b and not (_whole_numbers(b[field]) and (b[field] or field == "extra_seeds")):
            raise CompanionError(f"{where}: {field!r} must be a list of whole-number seeds, e.g. [0, 1, 2]; "
                                 f"got {str(b[field])[:60]!r}.")
    if "pattern" in b and not (isinstance(b["pattern"], str) and b["pattern"]):
        raise CompanionError(f"{where}: 'pattern' must be one folder pattern (text, e.g. wiki-bert-mini-*); "
                             f"got {str(b['pattern'])[:60]!r}. Several go in a list 'patterns'.")
    if "patterns" in b and not (isinstance(b["patterns"], list) and b["patterns"]
                                and all(isinstance(p, str) and p for p in b["patterns"])):
        raise CompanionError(f"{where}: 'patterns' must be a list of folder patterns (text); "
                             f"got {str(b['patterns'])[:60]!r}.")


def _fraction(value, field: str, where: str, path) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise CompanionError(f"{where} in {path}: {field!r} must lie in (0, 1); got {str(value)[:40]!r}.")


def _check_framework_tests(fw: dict, path) -> None:
    """``power`` (target, draws, seed) and ``family`` (its ``fwer``), both optional, read by
    the verdicts' power and family-wise computations."""
    power = fw.get("power", {})
    if not isinstance(power, dict):
        raise CompanionError(f"framework in {path}: 'power' must be a mapping (target, draws, seed); "
                             f"got {str(power)[:40]!r}.")
    if "target" in power:
        _fraction(power["target"], "target", "framework power", path)
    for field in ("draws", "seed"):
        v = power.get(field)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < (1 if field == "draws" else 0)):
            raise CompanionError(f"framework power in {path}: {field!r} must be a whole number"
                                 f"{' >= 1' if field == 'draws' else ' >= 0'}; got {str(v)[:40]!r}.")
    if "family" not in fw:   # a file without family-wise tests (the verdicts' table then asks for one)
        return
    family = fw["family"]
    if not isinstance(family, dict) or "fwer" not in family:
        raise CompanionError(f"framework in {path}: 'family' must be a mapping with the family-wise error "
                             f"rate 'fwer' (e.g. {{method: holm, fwer: 0.05}}); got {str(family)[:40]!r}.")
    _fraction(family["fwer"], "fwer", "framework family", path)


def _check_v2(rules: dict, path) -> None:
    fw = rules.get("framework")
    if not isinstance(fw, dict):
        raise CompanionError(f"{path}: 'framework' must be a mapping (level, power, family, gate).")
    level = fw.get("level", 0.95)
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise CompanionError(f"framework in {path}: 'level' must lie in (0, 1); got {level!r}.")
    _check_framework_tests(fw, path)
    gate = fw.get("gate")
    if not isinstance(gate, dict):
        raise CompanionError(f"framework in {path}: 'gate' must be a mapping with context_floor_nats, "
                             "horizon_fraction, memorisation_nats, fixed, seen_before and derivation.")
    for field in ("context_floor_nats", "horizon_fraction", "memorisation_nats", "fixed", "seen_before",
                  "derivation"):
        if field not in gate:
            raise CompanionError(f"the gate (framework) in {path} has no {field!r}.")
    for field in ("context_floor_nats", "horizon_fraction", "memorisation_nats"):
        _number(gate, field, "the gate (framework)", path, positive=True)
    if not gate["horizon_fraction"] < 1:
        raise CompanionError(f"the gate (framework) in {path}: 'horizon_fraction' must lie in (0, 1).")
    gate["fixed"] = _when(gate["fixed"], "the gate (framework)", path)
    for name, y in (rules.get("yardsticks") or {}).items():
        if not isinstance(y, dict) or "derivation" not in y:
            raise CompanionError(f"yardstick {name!r} in {path} needs a 'derivation'.")
    for key, r in rules["claims"].items():
        where = f"rule {key!r}"
        r["fixed"] = _when(r["fixed"], where, path)
        # every other stamp of a rule is dated the same way (a confirmatory body's, an amendment's)
        if isinstance(r.get("confirmatory"), dict) and "fixed" in r["confirmatory"]:
            r["confirmatory"]["fixed"] = _when(r["confirmatory"]["fixed"], f"{where} (confirmatory)", path)
        if "amended_at" in r:
            r["amended_at"] = _when(r["amended_at"], where, path, field="amended_at")
            if r["amended_at"] < r["fixed"]:
                raise CompanionError(f"{where} in {path}: 'amended_at' ({r['amended_at'].isoformat()}) is "
                                     f"before 'fixed' ({r['fixed'].isoformat()}); an amendment follows its rule.")
        if "sesoi" in r:
            v = r["sesoi"]
            named = set(rules.get("yardsticks") or {}) | {"null-band"}
            if isinstance(v, str):
                if v not in named:
                    raise CompanionError(f"{where} in {path}: sesoi {v!r} is neither a number nor a yardstick "
                                         f"of the file ({sorted(named)}).")
            else:
                _number(r, "sesoi", where, path, positive=True)
        for field in ("threshold", "min_seeds"):
            if field in r:
                _number(r, field, where, path)
        if "min_seeds" in r and (not isinstance(r["min_seeds"], int) or r["min_seeds"] < 2):
            raise CompanionError(f"{where} in {path}: 'min_seeds' must be a whole number >= 2.")


def load_rules(path: str | Path | None = None) -> dict:
    """The rules file (``data/verdict_rules.yaml``), checked whole before any verdict reads it.

    Every problem is one :class:`~companion.base.errors.CompanionError` naming the rule and the
    field: a file that is not a mapping, a rule missing a field, a ``fixed`` without a time
    zone or in the future (version 2), a threshold that is not a number, a ``sesoi`` that is
    neither a positive number nor a named yardstick, aliases expanding past a small bound.
    """
    import yaml

    path = Path(path) if path is not None else RULES_PATH
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise CompanionError(f"no verdict rules at {path}; the book's data/verdict_rules.yaml is "
                             "needed (run from a checkout or an editable install).") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as err:
        raise CompanionError(f"cannot read the verdict rules at {path} ({type(err).__name__}); "
                             "give the path of a readable YAML file.") from None
    rules = load_unique(text, path)
    if not isinstance(rules, dict) or not isinstance(rules.get("claims"), dict):
        raise CompanionError(f"{path} has no 'claims' mapping; see the file's header for its layout.")
    for key, r in rules["claims"].items():
        if not isinstance(r, dict):
            raise CompanionError(f"rule {key!r} in {path} must be a mapping of fields; got {type(r).__name__}.")
        for field in ("claim", "test", "fixed", "seen_before"):
            if field not in r:
                raise CompanionError(f"rule {key!r} in {path} has no {field!r}; every rule says what "
                                     "it judges, how, when it was written and what had been seen.")
        if not isinstance(r["fixed"], (_dt.date, str)):
            raise CompanionError(f"rule {key!r}: 'fixed' must be a date or timestamp; got {r['fixed']!r}.")
    for section in ("bodies", "yardsticks", "framework"):
        if rules.get(section) is not None and not isinstance(rules[section], dict):
            raise CompanionError(f"{path}: {section!r} must be a mapping; got {type(rules[section]).__name__}.")
    version = rules.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CompanionError(f"{path}: 'version' must be a whole number (1 or 2); got {str(version)[:40]!r}.")
    named = set(rules.get("yardsticks") or {}) | {"null-band"}
    for key, r in rules["claims"].items():
        if "sesoi" not in r:
            continue
        v = r["sesoi"]
        if isinstance(v, str):
            if v not in named:
                raise CompanionError(f"rule {key!r} in {path}: sesoi {v[:60]!r} is neither a number nor a "
                                     f"yardstick of the file ({sorted(named)}); give a positive number or "
                                     "one of those names.")
        elif version < 2:   # v1 allowed 0 ("refuted only when shown behind")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise CompanionError(f"rule {key!r} in {path}: 'sesoi' must be a number >= 0 or a "
                                     f"yardstick name; got {str(v)[:60]!r}.")
    for key, b in (rules.get("bodies") or {}).items():
        if not isinstance(b, dict) or not {"seeds", "label"} <= set(b) or not ({"pattern", "patterns"} & set(b)):
            raise CompanionError(f"body {key!r} in {path} needs 'label', 'seeds' and 'pattern' "
                                 "(or a list 'patterns').")
        _check_body(key, b, path)
    if version >= 2:
        _check_v2(rules, path)
    return rules


def rule(key: str, rules: dict | None = None) -> dict:
    """One claim's rule by key, with the framework's settings under ``"framework"``."""
    rules = rules if rules is not None else load_rules()
    if key not in rules["claims"]:
        raise CompanionError(f"no rule for claim {key!r} in the rules file; rules exist for "
                             f"{sorted(rules['claims'])}.")
    return dict(rules["claims"][key], framework=rules.get("framework", {}), key=key,
                yardsticks=rules.get("yardsticks", {}))


def _as_datetime(d) -> _dt.datetime:
    """A date, a datetime or an ISO string as an aware datetime (a bare date: its midnight UTC)."""
    if isinstance(d, str):
        d = d.strip().replace("Z", "+00:00")
        d = _dt.datetime.fromisoformat(d) if "T" in d or " " in d else _dt.date.fromisoformat(d[:10])
    if not isinstance(d, _dt.datetime):
        d = _dt.datetime(d.year, d.month, d.day)
    return d if d.tzinfo is not None else d.replace(tzinfo=_dt.timezone.utc)


def rule_written_after(r: dict, dates) -> bool:
    """Whether rule ``r`` was written after any of ``dates`` (ISO timestamps, dates) of the
    evidence it judges.  Full timestamps are compared (v2); a bare date of v1 counts as the
    end of its day, so a run made the same day before the rule counts as seen."""
    fixed = r["fixed"]
    if not isinstance(fixed, _dt.datetime):  # v1: a date; the rule may have come at any time that day
        fixed = _as_datetime(fixed) + _dt.timedelta(days=1)
    fixed = _as_datetime(fixed)
    return any(_as_datetime(d) < fixed for d in dates)


def rule_commit_time(fixed, path: str | Path | None = None) -> _dt.datetime | None:
    """When the rule stamped ``fixed`` entered the repository: the time of the oldest commit
    whose rules file contains that stamp (``git log -S``), or None outside a git checkout."""
    import subprocess

    path = Path(path) if path is not None else RULES_PATH
    stamp = fixed.isoformat() if isinstance(fixed, _dt.date) else str(fixed)
    try:
        out = subprocess.run(["git", "log", "--reverse", "--format=%cI", "-S", stamp, "--", path.name],
                             cwd=path.parent, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else []
    return _as_datetime(lines[0]) if lines else None


def started_before_rule(started, fixed, commit_time=None) -> bool:
    """Whether a run that ``started`` (provenance) began before its rule was fixed: before
    the rule's commit where the history is known, else before its ``fixed`` stamp."""
    anchor = commit_time if commit_time is not None else fixed
    return _as_datetime(started) < _as_datetime(anchor)


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


def outcome_conditions(low: float, high: float, sesoi: float) -> dict:
    """Each decided outcome of a directional claim as a condition on the interval
    ``[low, high]`` (smallest effect of interest ``sesoi`` > 0).  They partition the
    half-plane ``low <= high``: exactly one is true for every interval, which
    ``tests/test_verdicts.py`` checks over a grid and with random intervals."""
    return {"holds": low >= sesoi,
            "holds, size open": 0 < low < sesoi <= high,
            "negligible": 0 < low and high < sesoi,
            "refuted": low <= 0 and high < sesoi,
            "inconclusive": low <= 0 and sesoi <= high}


def directional_outcome(est: Estimate, sesoi: float, min_seeds: int = 3, gate: bool = True) -> str:
    """The claim says the true mean difference is > 0 (rules v2).

    ``not testable here`` when fewer than ``min_seeds`` seeds or the gate fails; otherwise
    the one outcome of :func:`outcome_conditions` that the interval meets: ``holds``
    (``low >= sesoi``), ``holds, size open`` (``0 < low < sesoi <= high``), ``negligible``
    (``0 < low``, ``high < sesoi``), ``refuted`` (``low <= 0``, ``high < sesoi``; reversed
    when ``high < 0``) or ``inconclusive`` (``low <= 0 <``, ``sesoi <= high``).
    """
    if not (isinstance(sesoi, (int, float)) and math.isfinite(sesoi) and sesoi > 0):
        raise ValueError(f"the smallest effect of interest must be a positive number; got {sesoi!r}. "
                         "A yardstick of 0 lets no precise null refute a claim (rules v2).")
    if est.n < max(min_seeds, 2) or not gate:
        return "not testable here"
    hits = [k for k, v in outcome_conditions(est.low, est.high, sesoi).items() if v]
    if len(hits) != 1:  # NaN interval: no condition is met
        raise ValueError(f"the interval [{est.low}, {est.high}] meets {len(hits)} outcomes; it must be finite.")
    return hits[0]


def directional_outcome_v1(est: Estimate, sesoi: float = 0.0, min_seeds: int = 3, gate: bool = True) -> str:
    """Version 1's rule, kept to show each claim's v1 outcome beside v2's: ``holds`` when
    the lower end is above 0, else ``refuted`` when the upper end is below ``sesoi``, else
    ``inconclusive``.  Its first two outcomes overlap (``0 < low <= high < sesoi``) and
    the order of the tests decided; v2 replaced it."""
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


def deciding_p(est: Estimate, outcome: str, sesoi: float | None = None, *, threshold: float | None = None,
               band: float | None = None) -> float:
    """The one-sided p-value of the test that decided ``outcome`` (the family's member):
    directional claims (``sesoi``): holds, p of 'effect > sesoi'; holds, size open, p of
    'effect > 0'; negligible, the larger of p('effect > 0') and p('effect < sesoi') (both
    must hold: an intersection-union test); refuted, p of 'effect < sesoi'.  Level claims
    (``threshold``): holds, p of 'mean > t'; refuted, p of 'mean < t'.  Equality claims
    (``band``): holds, the larger of the two one-sided tests of the band (TOST); refuted,
    p of the side the interval lies on.  NaN for an undecided outcome."""
    base = outcome.split(" (")[0]
    if band is not None:
        if base == "holds":
            return max(p_above(est, -band), p_below(est, band))
        if base == "refuted":
            return p_above(est, band) if est.mean > 0 else p_below(est, -band)
        return float("nan")
    if threshold is not None:
        return {"holds": p_above(est, threshold), "refuted": p_below(est, threshold)}.get(base, float("nan"))
    if base == "holds":
        return p_above(est, sesoi)
    if base == "holds, size open":
        return p_above(est, 0.0)
    if base == "negligible":
        return max(p_above(est, 0.0), p_below(est, sesoi))
    if base == "refuted":
        return p_below(est, sesoi)
    return float("nan")


# ------------------------------------------------------------------- power and multiplicity


def _draw_intervals(delta: float, sd: float, n: int, level: float, draws: int, seed: int):
    """``draws`` intervals of the paired t-test at ``n`` seeds when the true difference is
    ``delta`` and the seed-to-seed standard deviation ``sd``: the mean and the standard
    deviation are drawn from their exact laws (normal; scaled chi), so no per-seed values
    are simulated."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    mean = delta + sd / math.sqrt(n) * rng.standard_normal(draws)
    s = sd * np.sqrt(rng.chisquare(n - 1, draws) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * s / math.sqrt(n)
    return mean - half, mean + half


def directional_power(n: int, sd: float, sesoi: float, level: float = 0.95, target: float = 0.8,
                      draws: int = 200_000, seed: int = 20261126) -> dict:
    """The power of the directional test actually applied (rules v2), at ``n`` seeds and a
    seed-to-seed standard deviation ``sd`` of the paired differences:

    ``p_refuted_at_0``
        the probability of reading ``refuted`` when the true effect is 0;
    ``p_holds_at_sesoi``
        the probability of ``holds`` (``low >= sesoi``) when the true effect is ``sesoi``;
    ``detect_holds``
        the true effect at which ``holds`` is reached with probability ``target``;
    ``detect_direction``
        the true effect at which the interval lies above 0 (holds in any form) with
        probability ``target`` (:func:`detectable_effect`, exact).

    Monte Carlo over the exact law of (mean, sd) with a fixed seed; NaN below two seeds.
    """
    from scipy import stats

    if n < 2 or not np.isfinite(sd) or sd <= 0 or not sesoi > 0:
        return {"p_refuted_at_0": float("nan"), "p_holds_at_sesoi": float("nan"),
                "detect_holds": float("nan"), "detect_direction": float("nan")}
    lo, hi = _draw_intervals(0.0, sd, n, level, draws, seed)
    p_ref = float(np.mean((lo <= 0) & (hi < sesoi)))
    # 'holds' (low >= sesoi) at a true effect delta is the exact non-central t event
    crit = stats.t.ppf(0.5 + level / 2, n - 1)

    def p_holds(delta):
        return float(stats.nct.sf(crit, n - 1, (delta - sesoi) * math.sqrt(n) / sd))

    from scipy import optimize

    hi_bracket = sesoi + 400 * sd / math.sqrt(n)
    detect = float(optimize.brentq(lambda d: p_holds(d) - target, sesoi, hi_bracket))
    return {"p_refuted_at_0": p_ref, "p_holds_at_sesoi": p_holds(sesoi), "detect_holds": detect,
            "detect_direction": detectable_effect(n, sd, level, target)}


def threshold_power(n: int, sd: float, threshold: float, level: float = 0.95, target: float = 0.8) -> dict:
    """A level claim (mean > ``threshold``): the true mean at which ``holds`` (interval above
    the threshold) is reached with probability ``target``, and the probability of reading
    ``refuted`` when the true mean sits exactly at the threshold (``level``'s one-sided
    error)."""
    from scipy import stats

    if n < 2 or not np.isfinite(sd) or sd <= 0:
        return {"detect_holds": float("nan"), "p_refuted_at_threshold": float("nan")}
    return {"detect_holds": threshold + detectable_effect(n, sd, level, target),
            "p_refuted_at_threshold": float(stats.t.cdf(-stats.t.ppf(0.5 + level / 2, n - 1), n - 1))}


def equivalence_power(n: int, sd: float, band: float, level: float = 0.95, draws: int = 200_000,
                      seed: int = 20261126) -> dict:
    """An equality claim (interval inside ``(-band, band)``): the probability of ``holds``
    when the true mean is exactly 0, and of ``refuted`` when it is 0 (the test's error of
    calling a true equality unequal).  Monte Carlo with a fixed seed."""
    if n < 2 or not np.isfinite(sd) or sd <= 0 or not band > 0:
        return {"p_holds_at_0": float("nan"), "p_refuted_at_0": float("nan")}
    lo, hi = _draw_intervals(0.0, sd, n, level, draws, seed)
    return {"p_holds_at_0": float(np.mean((-band < lo) & (hi < band))),
            "p_refuted_at_0": float(np.mean((lo > band) | (hi < -band)))}


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
