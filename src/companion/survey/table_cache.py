"""The survey's cached tables: each CSV written atomically with a checksum file beside it
(``<file>.sha256.json``: sha256 of the bytes, row count, columns), checked before it is used
(:func:`cache_problem`) and read back (:func:`load_survey`)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pandas as pd

from ..base.errors import CompanionError
from ..zoo.catalog import DATA_DIR

__all__ = ["SURVEY_DIR", "checksum_path", "cache_problem", "load_survey"]


#: where ``companion survey`` writes its tables unless ``--out`` says otherwise
SURVEY_DIR = DATA_DIR / "survey"
CACHE_FORMAT = "companion-survey-cache/1"
REQUIRED_COLUMNS = ("key", "hub_id", "component", "role", "layer", "head", "level", "pairing",
                    "symmetry", "directionality")


#: columns that hold names: read as the text written ('NA', 'null' or 'None' are a key, not a missing value)
TEXT_COLUMNS = ("key", "hub_id", "model", "component")


def read_table(source) -> pd.DataFrame:
    """A survey table written by :func:`_write_atomic`, its name columns (:data:`TEXT_COLUMNS`) read as
    text: pandas read a key 'NA' as NaN, so that model's cached table failed its key check on every run
    and was left out of scores.csv while its status said 'scored'."""
    df = pd.read_csv(source, dtype={"revision": str, "fingerprint": str})
    if text := [c for c in TEXT_COLUMNS if c in df.columns]:
        if hasattr(source, "seek"):
            source.seek(0)
        names = pd.read_csv(source, usecols=text, dtype=str, keep_default_na=False)
        for c in text:
            df[c] = names[c]
    return df


def checksum_path(path: Path) -> Path:
    """The checksum file that vouches for a cached table: ``<file>.sha256.json``."""
    return path.with_name(path.name + ".sha256.json")


def _write_atomic(df: pd.DataFrame, path: Path) -> None:
    """Write ``df`` to ``path`` atomically, with its checksum file beside it.

    The CSV goes through a temporary file in the same folder and a rename (a full disk or
    a crash leaves the previous file intact); then ``<file>.sha256.json`` records the
    sha256 of the bytes written, the row count and the columns.
    """
    from ..base.outputs import check_output, write_atomic

    # a link or FIFO at the checksum's name is refused before the table is replaced (a refused
    # write replaced the table first, and left it without a checksum that vouches for it)
    check_output(checksum_path(path), "table's checksum file")
    data = df.to_csv(index=False).encode()
    write_atomic(path, lambda f: f.write(data), mode="wb")
    meta = {"format": CACHE_FORMAT, "sha256": hashlib.sha256(data).hexdigest(),
            "rows": int(len(df)), "columns": [str(c) for c in df.columns]}
    write_atomic(checksum_path(path), lambda f: f.write(json.dumps(meta, indent=1) + "\n"))


def cache_problem(path: Path, required=REQUIRED_COLUMNS, key: str | None = None, hub_id: str | None = None,
                  revision: str | None = None) -> str | None:
    """Why the cached table ``path`` cannot be trusted, or ``None`` when it checks out; with
    ``key``, a table of one model must hold that model's rows only (another model's table and
    checksum copied to its name would pass every other check, and count that model twice); with
    ``hub_id`` (and a pinned ``revision``), the rows must be of that checkpoint: a catalog entry
    pointed at another model or commit was served the old model's scores."""
    from ..base.paths import regular_file

    side = checksum_path(path)
    if not side.exists():
        return f"{side.name} is missing"
    for f, what in ((side, "its checksum file"), (path, "the table")):
        try:   # a FIFO in either place blocked the read for ever
            regular_file(f, what)
        except CompanionError as exc:
            return str(exc).rstrip(".")
    try:
        meta = json.loads(side.read_text())
        data = path.read_bytes()
    except (OSError, ValueError) as exc:
        return f"cannot read it or {side.name} ({exc})"
    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT:
        return f"{side.name} is not a {CACHE_FORMAT} checksum file"
    if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        return "its sha256 differs from the one recorded when it was written (edited or cut short)"
    try:
        df = read_table(io.BytesIO(data))
    except (ValueError, pd.errors.ParserError) as exc:
        return f"it is not a readable CSV ({exc})"
    if len(df) != meta.get("rows") or [str(c) for c in df.columns] != meta.get("columns"):
        return "its rows or columns differ from those recorded"
    missing = [c for c in required if c not in df.columns]
    if missing:
        return f"it lacks the columns {missing}"
    if key is not None and "key" in df.columns:
        other = sorted({str(k) for k in df["key"]} - {key})
        if other:
            return f"it holds rows of {other[0]!r}, not of {key!r} (another model's table under this name)"
    for col, want in (("hub_id", hub_id), ("revision", revision)):
        # every table with the column, provenance recorded or not: a table written without the
        # 'source' column was served for another hub id or commit than its entry names now
        if want is None:
            continue
        if col not in df.columns:   # only a pin reaches here (hub_id is a required column)
            return f"it records no {col}, so nothing says it holds the scores of {want!r}"
        held = sorted({"" if pd.isna(v) else str(v) for v in df[col]} - {want})
        if held:
            return f"it holds the scores of {col} {held[0] or '(none)'!r}, not of {want!r} (the catalog entry changed)"
    return None


def load_survey(path: str | Path | None = None) -> pd.DataFrame:
    """The survey's tidy scores (``scores.csv``); an empty table when nothing was scored."""
    path = Path(path) if path is not None else SURVEY_DIR / "scores.csv"
    if path.is_dir():
        path = path / "scores.csv"
    if not path.exists():
        raise ValueError(f"no survey table at {path}; run `companion survey` first.")
    problem = cache_problem(path)
    if problem:
        raise CompanionError(f"the survey table {path} cannot be trusted: {problem}. "
                             "Run `companion survey` again to rebuild it.")
    return read_table(path)
