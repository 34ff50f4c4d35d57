"""What changed since the last release: the verdict rules' history and the verdicts' outcomes.

Two sources, both in the repository:

- the rules: version 1 is kept verbatim in ``data/rules_history/verdict_rules_v1.yaml``, the current
  version in ``data/verdict_rules.yaml``; :func:`rules_changes` lists, per claim, the fields
  that differ, and the framework's and the bodies' changes;
- the verdicts: :func:`companion.judge.claims.all_verdicts` gives every empirical claim's outcome
  under the rules in force (``status``), :func:`companion.judge.history.earlier_readings` the
  first rules' (``status_first``);
  :func:`verdict_changes` keeps the claims whose outcome differs.

The Sphinx extension's ``release-changes`` directive (on the page "How the rules changed") renders
both; ``CHANGELOG.md`` records the same per release.  The verdicts are computed once per
state of the package and its data (``companion.book.site.book_cache.package_key``) and kept in the
cache, so rebuilding the site does not compute them again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from ...base.paths import ROOT

__all__ = ["RULES_FIRST", "RULES_CURRENT", "load_rules", "rules_changes", "verdict_changes",
           "current_verdicts", "verdicts_with_first"]

RULES_FIRST = ROOT / "data" / "rules_history" / "verdict_rules_v1.yaml"
RULES_CURRENT = ROOT / "data" / "verdict_rules.yaml"


def load_rules(path: Path | str) -> dict:
    """One version of the rules file, as a dict, for comparing versions (no checks of its
    content beyond its having claims: :func:`companion.rules.verdicts.load_rules` checks
    the current one whole).  An unreadable file, one that is not YAML, or one whose aliases
    expand past :data:`~companion.base.bounded_yaml.MAX_NODES` nodes is one
    :class:`~companion.base.errors.CompanionError` naming it."""
    import yaml

    from ...base.bounded_yaml import TooDeep, load_bounded
    from ...base.errors import CompanionError

    from ...base.paths import regular_file

    try:
        regular_file(path, "the rules file")   # a FIFO would block, a device never end
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CompanionError(f"{path}: cannot read the rules file ({type(err).__name__}: "
                             f"{err}); check the path.") from None
    try:
        data = load_bounded(text)
    except TooDeep as err:
        raise CompanionError(f"{path}: {err}; write the rules file out plainly.") from None
    except OverflowError as err:
        raise CompanionError(f"{path}: {err} once its aliases are expanded; write the rules "
                             "file out plainly.") from None
    except yaml.YAMLError as err:
        raise CompanionError(f"{path} is not valid YAML ({' '.join(str(err).split())[:300]}); fix the file.") from None
    if not isinstance(data, dict) or "claims" not in data:
        raise CompanionError(f"{path} is not a verdict rules file (no 'claims')")
    ev = data.get("evidence")
    if isinstance(ev, dict) and isinstance(ev.get("claims"), dict):   # version 4: the claims read once too
        data = {**data, "claims": {**(data["claims"] or {}), **ev["claims"]}}
    claims = data["claims"] or {}
    if not isinstance(claims, dict) or not all(isinstance(c, dict) or c is None for c in claims.values()):
        bad = claims if not isinstance(claims, dict) else next(k for k, c in claims.items()
                                                              if not (isinstance(c, dict) or c is None))
        raise CompanionError(f"{path}: 'claims' must map each claim's key to its fields ({_short(bad, 60)!r} is "
                             "not such an entry); fix the file.")
    for part in ("framework", "bodies"):
        if not isinstance(data.get(part) or {}, dict):
            raise CompanionError(f"{path}: '{part}' must be a mapping of names to fields; fix the file.")
    return data


def _short(value, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown_pair(a, b, limit: int = 90) -> tuple[str, str]:
    """Two values of a changed field, each shortened to ``limit`` characters around where they
    first differ, so the change is shown: cut at the same place from the start, two values that
    differ only past it would read the same."""
    ta, tb = (" ".join(str(v if isinstance(v, str) else json.dumps(v, default=str, sort_keys=True)).split())
              for v in (a, b))
    if len(ta) <= limit and len(tb) <= limit:
        return ta, tb
    first = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
    start = max(0, min(first - limit // 3, max(len(ta), len(tb)) - limit + 1))   # room for the leading "…"

    def cut(text: str) -> str:
        part = text[start:]
        head = "…" if start else ""
        return head + (part if len(part) <= limit - len(head) else part[: limit - len(head) - 1] + "…")

    return cut(ta), cut(tb)


def rules_changes(old: dict, new: dict) -> dict:
    """The differences between two versions of the rules.

    Returns ``{"versions": (old, new), "framework": [field, ...], "bodies_added": [...],
    "bodies_removed": [...], "claims": [{"claim": key, "change": "changed" | "added" |
    "removed", "fields": [{"field", "old", "new"}, ...]}, ...]}`` (claims in the new file's
    order, then the removed ones).
    """
    def fields(a: dict, b: dict):
        out = []
        for f in list(dict.fromkeys([*a, *b])):
            if f == "history":
                continue  # the record of earlier wordings, not a change of the rule
            if a.get(f) != b.get(f):
                old_text, new_text = _shown_pair(a[f] if f in a else None, b[f] if f in b else None)
                out.append({"field": f, "old": old_text if f in a else "(none)",
                            "new": new_text if f in b else "(removed)"})
        return out

    old_claims, new_claims = old.get("claims", {}) or {}, new.get("claims", {}) or {}
    claims = []
    for key in new_claims:
        if key not in old_claims:
            claims.append({"claim": key, "change": "added", "fields": []})
        else:
            diff = fields(old_claims[key] or {}, new_claims[key] or {})
            if diff:
                claims.append({"claim": key, "change": "changed", "fields": diff})
    claims += [{"claim": k, "change": "removed", "fields": []} for k in old_claims if k not in new_claims]
    old_fw, new_fw = old.get("framework", {}) or {}, new.get("framework", {}) or {}
    return {
        "versions": (old.get("version"), new.get("version")),
        "framework": [d["field"] for d in fields(old_fw, new_fw)],
        "bodies_added": [b for b in new.get("bodies", {}) or {} if b not in (old.get("bodies") or {})],
        "bodies_removed": [b for b in old.get("bodies", {}) or {} if b not in (new.get("bodies") or {})],
        "claims": claims,
    }


def verdict_changes(verdicts) -> list[dict]:
    """The claims whose outcome under the current rules differs from version 1's.

    ``verdicts``: records (or a DataFrame) with ``key``, ``claim``, ``status`` and
    ``status_first``; a claim without a v1 outcome (``status_first`` empty, None or NaN) was not
    judged by a rule in version 1 and is left out.
    """
    rows = verdicts.to_dict("records") if hasattr(verdicts, "to_dict") else list(verdicts)
    out = []
    for r in rows:
        v1, now = _outcome(r.get("status_first")), _outcome(r.get("status"))
        if v1 and v1 != now:
            out.append({"key": r["key"], "claim": r.get("claim", r["key"]), "v1": v1, "now": now})
    return out


def _outcome(value) -> str:
    """An outcome as text: a missing one (``None``, a NaN or ``pd.NA`` of a DataFrame) as ``""``."""
    if isinstance(value, str):
        return value.strip()
    try:
        import pandas as pd

        if value is None or bool(pd.isna(value)):
            return ""
    except (TypeError, ValueError):   # a list or an array: no missing value
        pass
    return str(value).strip()


def _verdicts_path(cache: Path | None = None) -> Path:
    from .book_cache import package_key
    from ...base.cache import cache_dir, ensure_dir

    key = hashlib.sha256(json.dumps(package_key(ROOT), sort_keys=True).encode()).hexdigest()[:16]
    folder = ensure_dir(cache) if cache is not None else cache_dir("release-changes")
    return folder / f"verdicts-{key}.json"


_VERDICT_FIELDS = ("key", "claim", "kind", "status", "status_first")


def _rows_digest(rows) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode("utf-8")).hexdigest()


def store_verdicts(df, cache: Path | None = None, path: Path | None = None) -> Path:
    """Keep ``key, claim, kind, status, status_first`` of computed verdicts for this state of the
    package, so the build's release-changes section reads them instead of computing them
    again (What survives computes them anyway and calls this).  The file carries the digest
    of its rows, so that a cut-off or edited copy is noticed (:func:`current_verdicts`)."""
    cols = [c for c in _VERDICT_FIELDS if c in df.columns]
    rows = json.loads(df[cols].fillna("").to_json(orient="records"))
    path = _verdicts_path(cache) if path is None else path
    from ...base.outputs import write_text_atomic

    write_text_atomic(json.dumps({"sha256": _rows_digest(rows), "verdicts": rows}, indent=1), path,
                      what="kept verdicts")
    return path


def _stored_verdicts(path: Path) -> list[dict] | None:
    """The rows of a verdicts file, or None (with a one-line warning naming it) when it is
    cut off, not such a file, or its rows do not match the digest it was written with."""
    import warnings

    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        why = f"cannot be read ({type(err).__name__})"
    else:
        rows = stored.get("verdicts") if isinstance(stored, dict) else None
        if not (isinstance(rows, list) and all(
                isinstance(r, dict) and isinstance(r.get("key"), str)
                and all(isinstance(r.get(f, ""), str) for f in _VERDICT_FIELDS) for r in rows)):
            why = "is not a file of stored verdicts"
        elif stored.get("sha256") != _rows_digest(rows):
            why = "was changed after it was written (its rows do not match their digest)"
        else:
            return rows
    warnings.warn(f"{path} {why}; the verdicts are computed again and the file replaced.", stacklevel=3)
    return None


def verdicts_with_first():
    """:func:`companion.judge.claims.all_verdicts` with ``status_first``, the first rules' outcome
    of each empirical claim (:func:`companion.judge.history.earlier_readings`)."""
    from ...judge.claims import all_verdicts
    from ...judge.history import earlier_readings

    first = earlier_readings().set_index("key")["version 1"]
    v = all_verdicts()
    return v.assign(status_first=[first.get(k, "") for k in v["key"]])


def current_verdicts(cache: Path | None = None) -> list[dict]:
    """``key, claim, kind, status, status_first`` of every verdict (:func:`claims.all_verdicts`),
    computed once per state of the package, its data and the run size, then read back (a
    cut-off or edited copy is computed again, never trusted)."""
    path = _verdicts_path(cache)
    if path.is_file():
        rows = _stored_verdicts(path)
        if rows is not None:
            return rows
    store_verdicts(verdicts_with_first(), path=path)     # under the key read above, not a later one
    rows = _stored_verdicts(path)
    if rows is None:   # pragma: no cover - written just now
        raise RuntimeError(f"{path} could not be read back after it was written.")
    return rows
