"""What every rules file shares, and the schema of the earlier ones.

The one rules file in force is ``data/verdict_rules.yaml`` (version 4); versions 1 to 3 are kept
unchanged in ``data/rules_history/``.  :func:`companion.rules.rulebook.load_rules` reads any of
them; this module holds what they share: the YAML reader that refuses a key written twice or
aliases expanding past a bound (:func:`load_unique`), time stamps with a zone
(:func:`rule_written_after`, :func:`rule_commit_time`, :func:`started_before_rule`), and the
schema check of versions 1 and 2 (:func:`check_earlier`).  The statistics that apply a rule are :mod:`companion.rules.statistics` and
:mod:`companion.rules.sequential`.
"""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path

from ..base.errors import CompanionError
from ..base.paths import DATA_DIR

__all__ = ["RULES_PATH", "check_earlier", "rule_written_after", "rule_commit_time", "rule_anchor", "started_before_rule",
           "stamp_spellings"]

RULES_PATH = DATA_DIR / "verdict_rules.yaml"   # the file in force


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


_PARSED: dict = {}   # sha256 of a rules text -> its parsed YAML (a pure function of the text)


def load_unique(text: str, path):
    """Safe YAML that refuses a key written twice in one mapping (the second copy would
    silently win) and aliases expanding past the rules' bound.  A text parsed before in this
    process is handed back from memory as a deep copy (the parse is a function of the text
    alone; one rules load spent half a second in the pure-Python parser, and the studies load
    the same file many times); a text that fails is parsed, and refused, every time."""
    import copy
    import hashlib

    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if digest not in _PARSED:
        if len(_PARSED) >= 64:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[digest] = _parse_unique(text, path)
    return copy.deepcopy(_PARSED[digest])


def _parse_unique(text: str, path):
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
        raise CompanionError(f"{path} is not valid YAML ({' '.join(str(err).split())[:300]}); fix the file.") from None
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
        from .fields import yaml_hint

        raise CompanionError(f"{where} in {path}: {field!r} must be {kind}; got {v!r}{yaml_hint(v)}.")
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


#: the power solver's Monte Carlo draws are bounded (each of its arrays holds one number a draw):
#: 10^10 draws asked numpy for 80 GB; the solvers hold every caller to it (companion.rules.statistics)
from .statistics import MAX_POWER_DRAWS  # noqa: E402


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
    if isinstance(power.get("draws"), int) and power["draws"] > MAX_POWER_DRAWS:
        raise CompanionError(f"framework power in {path}: 'draws' {power['draws']:,} would ask for "
                             f"{power['draws'] * 8 / 1e9:.1f} GB per simulated array; at most {MAX_POWER_DRAWS:,} "
                             "(the files use 200,000): lower it.")
    if "family" not in fw:   # a file without family-wise tests (the verdicts' table then asks for one)
        return
    family = fw["family"]
    if not isinstance(family, dict) or "fwer" not in family:
        raise CompanionError(f"framework in {path}: 'family' must be a mapping with the family-wise error "
                             f"rate 'fwer' (e.g. {{method: holm, fwer: 0.05}}); got {str(family)[:40]!r}.")
    _fraction(family["fwer"], "fwer", "framework family", path)


def _check_gate(gate, path) -> None:
    """Version 2's gate (framework.gate): its three parts, stamps and amendment."""
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
    if "amended_at" in gate:
        gate["amended_at"] = _when(gate["amended_at"], "the gate (framework)", path, field="amended_at")
        if gate["amended_at"] < gate["fixed"] or "amended" not in gate:
            raise CompanionError(f"the gate (framework) in {path}: an 'amended_at' needs an 'amended' saying "
                                 "what changed, and follows 'fixed'.")


def _check_claims_read_once(rules: dict, path, with_gate: bool = True) -> None:
    fw = rules.get("framework")
    if not isinstance(fw, dict):
        raise CompanionError(f"{path}: 'framework' must be a mapping (level, power, family, gate).")
    level = fw.get("level", 0.95)
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise CompanionError(f"framework in {path}: 'level' must lie in (0, 1); got {level!r}.")
    _check_framework_tests(fw, path)
    if with_gate:
        _check_gate(fw.get("gate"), path)
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


def check_earlier(rules, path, gate: bool = True) -> dict:
    """The schema check of a rules file of version 1 or 2 (kept in ``data/rules_history/``),
    parsed already by :func:`companion.rules.rulebook.load_rules`, which reads every version.

    Every problem is one :class:`~companion.base.errors.CompanionError` naming the rule and the
    field: a file that is not a mapping, a rule missing a field, a ``fixed`` without a time
    zone or in the future (version 2), a threshold that is not a number, a ``sesoi`` that is
    neither a positive number nor a named yardstick.
    """
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
        _check_claims_read_once(rules, path, gate)
    return rules


def _as_datetime(d) -> _dt.datetime:
    """A date, a datetime or an ISO string as an aware datetime (a bare date: its midnight UTC);
    anything else (None, NaN from a table's empty cell, text that is no timestamp) is refused in
    one line naming it, for no moment can be compared with a rule's."""
    given = d
    if isinstance(d, str):
        d = d.strip().replace("Z", "+00:00").replace("z", "+00:00")   # as stamp_problem reads a stamp
        try:
            d = _dt.datetime.fromisoformat(d) if "T" in d or " " in d else _dt.date.fromisoformat(d[:10])
        except ValueError:
            d = None
    if not isinstance(d, _dt.date):
        raise CompanionError(f"{given!r} is not a timestamp (ISO 8601 with its zone, e.g. 2026-12-06T14:34:00+00:00); "
                             "a run's start and a rule's stamp must each name a moment to be compared.")
    if not isinstance(d, _dt.datetime):
        d = _dt.datetime(d.year, d.month, d.day)
    return d if d.tzinfo is not None else d.replace(tzinfo=_dt.timezone.utc)


def rule_written_after(r: dict, dates) -> bool:
    """Whether rule ``r`` was written after any of ``dates`` (ISO timestamps, dates) of the
    evidence it judges.  Full timestamps are compared (v2); a bare date of v1 counts as the
    end of its day, so a run made the same day before the rule counts as seen."""
    fixed = r["fixed"]
    # v1: a bare date (or its text); the rule may have come at any time that day.  A timestamp given
    # as text (a rule not passed through the loader) is that moment, not the end of its day
    bare = (not isinstance(fixed, _dt.datetime) and isinstance(fixed, _dt.date)) or (
        isinstance(fixed, str) and "T" not in fixed.strip() and " " not in fixed.strip())
    fixed = _as_datetime(fixed) + (_dt.timedelta(days=1) if bare else _dt.timedelta(0))
    return any(_as_datetime(d) < fixed for d in dates)


_STAMP_TEXT = None   # the pattern of a YAML time stamp (compiled on first use)


def stamp_spellings(text: str, fixed) -> list[str]:
    """Each spelling in ``text`` (a rules file) of the instant ``fixed``, as YAML reads a time
    stamp: ``2026-12-06T09:59:00Z``, ``2026-12-06 09:59:00+00:00`` and
    ``2026-12-06T10:59:00+01:00`` are one instant, and a file holds it in whichever spelling it
    was written (a stamp without a zone is UTC, as YAML reads it)."""
    import re

    global _STAMP_TEXT
    if _STAMP_TEXT is None:
        _STAMP_TEXT = re.compile(r"\d{4}-\d\d?-\d\d?(?:[Tt]|[ \t]+)\d\d?:\d\d:\d\d(?:\.\d*)?"
                                 r"(?:[ \t]*Z|[ \t]*z|[-+]\d\d?(?::\d\d)?)?")
    want = _as_datetime(fixed)
    out = []
    for m in dict.fromkeys(_STAMP_TEXT.findall(text)):
        try:
            import yaml

            when = yaml.safe_load(f"t: {m}")["t"]
        except Exception:   # noqa: BLE001 - text that only looks like a stamp
            continue
        if isinstance(when, _dt.datetime) and _as_datetime(when) == want:
            out.append(m)
    return out


def rule_commit_time(fixed, path: str | Path | None = None) -> _dt.datetime | None:
    """When the rule stamped ``fixed`` entered the repository: the author time of the oldest
    commit whose rules file contains that stamp, in any spelling the file holds it in
    (:func:`stamp_spellings`; ``git log -S``, following the file through a move), or None
    outside a git checkout (no history to read).  The author time is when the commit was first
    made: an amend, a rebase or a cherry-pick keeps it, where the committer time moves to the
    rewrite, and runs made between the two would read as made before the rules.

    A file inside a git checkout whose stamp no commit holds (the stamp edited in the working
    copy, or the file never committed) is refused in one line: its rules are not committed, so
    no run can be shown to have started after them, and reading it as 'no history' would anchor
    the runs at whatever the stamp now says."""
    import subprocess

    path = Path(path) if path is not None else RULES_PATH
    stamp = fixed.isoformat() if isinstance(fixed, _dt.date) else str(fixed)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    try:
        spellings = stamp_spellings(text, fixed) or [stamp]
    except CompanionError:   # a stamp that names no moment: looked up as written
        spellings = [stamp]

    def git(*args):
        return subprocess.run(["git", *args], cwd=path.parent, capture_output=True, text=True, timeout=30)

    found = []
    try:
        for spelled in spellings:
            # --follow keeps the history through a rename; git ignores --reverse with --follow, so
            # the oldest commit is the last line
            out = git("log", "--follow", "--format=%aI", "-S", spelled, "--", path.name)
            lines = [ln for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else []
            if lines:
                found.append(_as_datetime(lines[-1]))
        inside = not found and git("rev-parse", "--is-inside-work-tree").stdout.strip() == "true"
    except (OSError, subprocess.TimeoutExpired):
        return None
    if found:
        return min(found)
    if inside:
        raise CompanionError(f"{path.name} holds the stamp {stamp}, but no commit of its git history does (the "
                             "stamp was edited in the working copy, or the file was never committed), so the "
                             "rules it dates are not committed and no run can be shown to have started after "
                             f"them; commit {path.name} (or restore the stamp as committed) before reading runs "
                             "by it.")
    return None


def rule_anchor(fixed, commit_time=None) -> _dt.datetime:
    """The moment a run must start after to be judged blind by the rule stamped ``fixed``: its
    commit (:func:`rule_commit_time`) where the history is known, and in any case no earlier
    than the stamp (a commit dated before the stamp it holds moves nothing earlier)."""
    anchor = _as_datetime(fixed)
    if commit_time is not None:
        anchor = max(anchor, _as_datetime(commit_time))
    return anchor


def started_before_rule(started, fixed, commit_time=None) -> bool:
    """Whether a run that ``started`` (provenance) began before its rule was fixed: before
    the rule's commit where the history is known (:func:`rule_commit_time`), and in any case
    before its ``fixed`` stamp (a commit dated before the stamp it holds moves nothing earlier):
    :func:`rule_anchor`."""
    return _as_datetime(started) < rule_anchor(fixed, commit_time)


#: names that moved to :mod:`companion.rules.statistics` in 0.2.0
_MOVED_TO_STATISTICS = frozenset([
    "OUTCOMES",
    "OUTCOMES_FIRST",
    "DECIDED",
    "Estimate",
    "paired_t",
    "one_sample_t",
    "directional_outcome",
    "directional_outcome_first",
    "outcome_conditions",
    "threshold_outcome",
    "equivalence_outcome",
    "deciding_p",
    "directional_power",
    "threshold_power",
    "equivalence_power",
    "detectable_effect",
    "p_above",
    "p_below",
    "holm",
    "median_interval"])


#: of those, the power solvers, which then moved on to :mod:`companion.rules.power`
_MOVED_ON_TO_POWER = frozenset(["directional_power", "threshold_power", "equivalence_power", "detectable_effect"])


def __getattr__(name: str):
    if name in _MOVED_TO_STATISTICS:
        import warnings

        from . import power, statistics

        from .. import REMOVED_IN

        home = power if name in _MOVED_ON_TO_POWER else statistics   # the power solvers moved on in 0.3.0
        warnings.warn(f"companion.rules.verdicts.{name} moved to {home.__name__}.{name}; import it "
                      f"from there (the old name goes in release {REMOVED_IN})", DeprecationWarning, stacklevel=2)
        return getattr(home, name)
    raise AttributeError(f"module 'companion.rules.verdicts' has no attribute {name!r}")
