"""Corrections to how a rule is read, made after the runs it judges began.

A rule can change without its file changing: the code that reads it is corrected.  When that
happens after a judged body's runs have begun, it is a change to the rule in effect, and the
book shows it as one (the rules-history appendix), beside the rules file's own edits
(:func:`companion.rules.edits.text_edits_after`).

``data/reading_corrections.csv`` records each such correction: the claim, the commit that made
it, what changed, and what the claim read before it (its yardstick ``d`` and its status).  The
"before" is a record, because the code that computed it is gone; what the claim reads now is
computed by the book.  :func:`reading_corrections` loads the record and checks it against the
rules in force; :func:`commit_date` dates a commit from the git history.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path

from ..base.errors import CompanionError
from .sequential import NOT_READ
from .statistics import OUTCOMES

__all__ = ["COLUMNS", "reading_corrections", "commit_date"]

COLUMNS = ("key", "commit", "change", "d_before", "status_before")
#: what a claim read at looks can read: an outcome, or 'not read yet' before its first look
STATUSES = OUTCOMES + (NOT_READ,)


def _default_path() -> Path:
    from ..base.paths import DATA_DIR

    return DATA_DIR / "reading_corrections.csv"


def reading_corrections(path: str | Path | None = None, rules: dict | None = None):
    """The recorded corrections as a table (columns :data:`COLUMNS`; ``d_before`` a float,
    NaN where the claim read no yardstick).  Refused in one line naming the file and the row
    (CompanionError) when a column is missing or extra, a key is not a claim of ``rules`` (the
    rules in force by default), a commit is not 7 to 40 hexadecimal digits, a ``d_before`` is
    not a number, a text field is empty, a ``status_before`` is not one of :data:`STATUSES`
    as written, or a claim's correction by one commit is recorded twice."""
    import pandas as pd

    from .rulebook import load_rules

    path = Path(path) if path is not None else _default_path()
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as err:
        raise CompanionError(f"{path}: cannot be read as the table of reading corrections ({err}); "
                             f"restore it from git (columns {', '.join(COLUMNS)}).") from None
    if tuple(table.columns) != COLUMNS:
        raise CompanionError(f"{path}: its columns are {', '.join(map(str, table.columns))}; "
                             f"the table of reading corrections has exactly {', '.join(COLUMNS)}.")
    claims = (rules if rules is not None else load_rules()).get("claims") or {}
    d_before, seen = [], {}
    for i, row in table.iterrows():
        where = f"{path}, row {i + 2}"
        if row["key"] not in claims:
            raise CompanionError(f"{where}: {row['key']!r} is not a claim of the rules in force; "
                                 f"name one of {', '.join(sorted(claims))}.")
        if not re.fullmatch(r"[0-9a-f]{7,40}", row["commit"]):
            raise CompanionError(f"{where}: commit {row['commit']!r} is not 7 to 40 lower-case hexadecimal "
                                 "digits; give the commit that made the correction (git log --oneline).")
        for field in ("change", "status_before"):
            if not row[field].strip():
                raise CompanionError(f"{where}: {field} is empty; say {'what changed' if field == 'change' else 'what the claim read before'}.")
        if row["status_before"] not in STATUSES:
            # compared with the status now as text: 'Not testable here' read as a status that moved
            raise CompanionError(f"{where}: status_before {row['status_before'][:40]!r} is not a status of a claim "
                                 f"read at looks; write one of {', '.join(STATUSES)}, exactly.")
        if (row["key"], row["commit"]) in seen:   # one correction counted twice on the page
            raise CompanionError(f"{where}: the correction of {row['key']!r} by commit {row['commit']} is recorded "
                                 f"twice (also row {seen[row['key'], row['commit']]}); keep one row.")
        seen[row["key"], row["commit"]] = i + 2
        text = row["d_before"].strip().lower()
        try:
            value = float("nan") if text in ("nan", "") else float(text)
        except ValueError:
            value = None
        if value is None or math.isinf(value) or value <= 0:   # a yardstick is a positive size (NaN: none)
            raise CompanionError(f"{where}: d_before {row['d_before']!r} is not a number above 0; give the "
                                 "yardstick the claim read before, or nan where it read none.")
        d_before.append(value)
    return table.assign(d_before=d_before)


def commit_date(commit: str, root: str | Path | None = None) -> dt.datetime | None:
    """The committer date of ``commit`` (UTC-aware), or None where ``root`` (the source tree by
    default) has no git history or does not hold the commit (a copy made without it).  The commit is
    named by its hash (7 to 64 hexadecimal digits), as the record holds it; anything else is
    refused: a name starting with '-' git would read as an option, a reflog name (``HEAD@{1}``,
    ``main@{yesterday}``) dates where this clone's branch stood, not a commit of the shared history
    (git answers ``@{yesterday}`` with its oldest entry where the reflog is younger), and a range
    (``a..b``) names several commits."""
    import subprocess

    from ..base.paths import ROOT

    if not isinstance(commit, str) or not re.fullmatch(r"[0-9a-fA-F]{7,64}", commit):
        # '--output=FILE' was read by git as an option (it wrote FILE); 'HEAD~2..HEAD' printed two
        # dates (a raw ValueError); 'HEAD@{yesterday}' gave a date of this clone's reflog
        raise CompanionError(f"commit {str(commit)[:60]!r} is not a commit name the record can hold (a hash of 7 to "
                             "64 hexadecimal digits); give its hash (git log --oneline).")
    try:
        out = subprocess.run(["git", "-C", str(root or ROOT), "show", "-s", "--format=%cI", f"{commit}^{{commit}}", "--"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or len(out.stdout.split()) != 1:   # (one commit, one date)
        return None
    return dt.datetime.fromisoformat(out.stdout.strip()).astimezone(dt.timezone.utc)
