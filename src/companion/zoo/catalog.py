"""The catalog of surveyed checkpoints and the paper's Tables S2/S3 as published.

Two data files drive the survey (Sec. 3, Fig. 2, Figs. S1-S2, Tables S2-S3):

``data/catalog.csv``
    one line per checkpoint: hub id, family, modality, role, parameter count, the names it
    is printed under and its known problems (see ``data/README.md``);
``data/published/``
    Tables S2 and S3 exactly as printed, and ``printed_rows.csv`` which maps every printed
    row to one catalog entry.

:func:`load_catalog` and :func:`published_scores` read and validate them; every problem in
the files is reported as a ``ValueError`` that names the file, the line and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from ..base.paths import DATA_DIR, is_hub_id

__all__ = [
    "DATA_DIR",
    "KNOWN_PROBLEMS",
    "MODALITIES",
    "CATALOG_ROLES",
    "load_catalog",
    "load_published_table",
    "published_scores",
    "parse_attention",
    "validate_catalog",
]

#: Repository ``data/`` folder (the package is used from a checkout or an editable install).

MODALITIES = ("text", "vision", "audio")
CATALOG_ROLES = ("encoder", "decoder", "encoder-decoder")
SOURCES = ("S2", "S3", "Fig2", "Fig2-heatmap", "FigS1", "FigS2", "offline")
N_PARAMS_SOURCES = ("config", "card", "name", "unknown")

#: Problems a catalog entry or a printed row can carry, with what each means.
KNOWN_PROBLEMS = {
    "random_init": "a printed row was scored on randomly initialised weights",
    "gqa_modulo_pairing": "grouped-query attention scored with query head h paired with "
                          "key head h % n_kv instead of h // (n_heads / n_kv)",
    "fused_layout": "a fused q/k/v weight was split in the wrong layout",
    "duplicate_row": "the model is printed in more than one row",
    "duplicate_values_differ": "repeated rows of the model print different values",
    "misprinted_name": "a row is printed under a name that does not exist",
    "shared_layer": "all layers share one attention matrix (IQR 0 by construction)",
    "missing_row": "the model is in Table S2 but not in Table S3",
    "modality_mismatch": "a vision model printed in the language-model tables",
    "ambiguous_id": "the printed name fits several checkpoints",
    "partial_layers": "only some of the layers were scored",
    "wrong_component": "another attention block was scored than the one named",
}

CATALOG_COLUMNS = [
    "key", "printed_names", "hub_id", "revision", "family", "modality", "role",
    "components", "attention", "d_model", "n_params", "n_params_source", "layout", "sources",
    "membership_inferred", "id_inferred", "known_problems", "local", "notes",
]

_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]*/)?[A-Za-z0-9][A-Za-z0-9_.-]*$")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")   # whole-string (fullmatch): "$" lets a final newline through
_REVISION = re.compile(r"^[0-9a-f]{40}$")
_ATTENTION = re.compile(r"^(mha|gqa) (\d+)/(\d+)$")
_SCORE_OF_TABLE = {"S2": "symmetry", "S3": "directionality"}


def _split(value) -> list[str]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return [p for p in re.split(r"[;|]", str(value)) if p]


def _number(value) -> float | None:
    """A cell as a finite number, or ``None`` (empty, text, NaN, infinite): a cell that is no
    number is one of the problems listed, never a raw error from the comparison with it."""
    import math
    import numbers

    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, numbers.Real) or not math.isfinite(value):
        return None
    return float(value)


def parse_attention(text: str) -> tuple[int, int]:
    """``"gqa 9/3"`` -> ``(9, 3)``: query heads and key/value heads."""
    m = _ATTENTION.match(str(text))
    if not m:
        raise ValueError(f"attention must read 'mha H/H' or 'gqa H/KV', got {text!r}.")
    kind, h, kv = m.group(1), int(m.group(2)), int(m.group(3))
    if h < 1 or kv < 1:   # 'gqa 4/0' divided by zero, 'mha 0/0' read as no heads
        raise ValueError(f"attention {text!r} counts no heads; each count must be at least 1.")
    if kind == "mha" and h != kv or kind == "gqa" and (kv >= h or h % kv):
        raise ValueError(f"inconsistent attention description {text!r}.")
    return h, kv


def validate_catalog(cat: pd.DataFrame, where: str = "catalog") -> pd.DataFrame:
    """Check a catalog table; raise ``ValueError`` naming the bad line and the fix."""
    missing = [c for c in CATALOG_COLUMNS if c not in cat.columns]
    if missing:
        raise ValueError(f"{where}: missing columns {missing}; expected {CATALOG_COLUMNS}.")
    problems: list[str] = []

    def bad(i, msg):
        problems.append(f"line {i + 2} ({cat.at[i, 'key']!r}): {msg}")

    for col in ("key", "hub_id"):
        dup = cat[col][cat[col].duplicated()].tolist()
        if dup:
            problems.append(f"duplicated {col}: {dup}; one entry per checkpoint.")
    names = [n for v in cat["printed_names"] for n in _split(v)]
    dup_names = sorted({n for n in names if names.count(n) > 1})
    if dup_names:
        problems.append(f"printed names in more than one entry: {dup_names}.")
    for i, row in cat.iterrows():
        if not _PLAIN_KEY.fullmatch(str(row["key"])):
            bad(i, f"key {row['key']!r} is not a plain name (letters, digits, '.', '_', '-', not starting "
                   "with '.'); it names the output file models/<key>.csv, which must stay inside --out.")
        if not _HUB_ID.match(str(row["hub_id"])) or not is_hub_id(str(row["hub_id"])):   # the rule the hub reader applies
            bad(i, f"hub_id {row['hub_id']!r} is not of the form 'owner/name' or 'name'.")
        rev = row["revision"]
        if isinstance(rev, str) and rev and not _REVISION.match(rev):
            bad(i, f"revision {rev!r} must be a 40-hex-digit commit (or empty).")
        if row["modality"] not in MODALITIES:
            bad(i, f"modality {row['modality']!r} not in {MODALITIES}.")
        if row["role"] not in CATALOG_ROLES:
            bad(i, f"role {row['role']!r} not in {CATALOG_ROLES}.")
        comps = _split(row["components"])
        if row["role"] == "encoder-decoder" and len(comps) != 2:
            bad(i, "an encoder-decoder entry needs two components, e.g. 'encoder;decoder'.")
        if row["role"] != "encoder-decoder" and comps != [row["role"]]:
            bad(i, f"components {comps} should be ['{row['role']}'].")
        try:
            parse_attention(row["attention"])
        except ValueError as e:
            bad(i, str(e))
        width = _number(row["d_model"])
        if width is None or not float(width).is_integer() or width < 2 or width > 1 << 20:
            bad(i, f"d_model {row['d_model']!r} must be a whole number >= 2 (the width the query/key "
                   "projections read).")
        if row["n_params_source"] not in N_PARAMS_SOURCES:
            bad(i, f"n_params_source {row['n_params_source']!r} not in {N_PARAMS_SOURCES}.")
        n = row["n_params"]
        if row["n_params_source"] == "unknown":
            if not pd.isna(n):
                bad(i, "n_params must be empty when its source is 'unknown'.")
        elif _number(n) is None or _number(n) <= 0:
            bad(i, f"n_params {n!r} must be a positive count (or mark the source 'unknown').")
        for s in _split(row["sources"]):
            if s not in SOURCES:
                bad(i, f"source {s!r} not in {SOURCES}.")
        if not _split(row["sources"]):
            bad(i, "no source: say where the model appears (S2, S3, Fig2, ...).")
        for p in _split(row["known_problems"]):
            if p not in KNOWN_PROBLEMS:
                bad(i, f"known problem {p!r} not in {sorted(KNOWN_PROBLEMS)}.")
        if row["family"] == "" or pd.isna(row["family"]):
            bad(i, "family is empty.")
    if problems:
        raise ValueError(f"{where} is invalid:\n  " + "\n  ".join(problems))
    return cat


def load_catalog(path: str | Path | None = None) -> pd.DataFrame:
    """Read and validate ``data/catalog.csv``; adds ``n_heads`` and ``n_kv_heads``."""
    path = Path(path) if path is not None else DATA_DIR / "catalog.csv"
    if not path.exists():
        raise ValueError(f"no catalog at {path}; pass the path of a catalog CSV.")
    from ..base.paths import regular_file

    regular_file(path, "the catalog")   # a FIFO would block, a device never end
    try:
        cat = pd.read_csv(path, dtype={"revision": str, "local": str, "notes": str,
                                       "known_problems": str, "printed_names": str})
        if "key" in cat.columns:   # a key is a name as written: 'NA' or 'null' is not a missing value
            cat["key"] = pd.read_csv(path, usecols=["key"], dtype=str, keep_default_na=False)["key"]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        first = " ".join(str(exc).split())[:120]
        raise ValueError(f"{path} is not a catalog CSV ({first}); pass the path of a catalog CSV "
                         "(default: data/catalog.csv).") from None
    for col in ("revision", "local", "notes", "known_problems", "printed_names"):
        if col in cat.columns:
            cat[col] = cat[col].fillna("")
    for col in ("membership_inferred", "id_inferred"):
        if col in cat.columns:
            flags = cat[col].astype(str).str.strip().str.lower().map({"true": True, "false": False})
            if flags.isna().any():   # 'yes', '1' or an empty cell read NaN: a flag neither set nor unset
                i = int(np.flatnonzero(flags.isna().to_numpy())[0])
                raise ValueError(f"{path}: {col} of {cat['key'].iloc[i] if 'key' in cat.columns else f'row {i + 1}'!r} "
                                 f"is {cat[col].iloc[i]!r}; write true or false.")
            cat[col] = flags.astype(bool)
    cat = validate_catalog(cat, where=str(path))
    heads = cat["attention"].map(parse_attention)
    cat["n_heads"] = [h for h, _ in heads]
    cat["n_kv_heads"] = [kv for _, kv in heads]
    return cat


def load_published_table(table: str, data_dir: str | Path | None = None) -> pd.DataFrame:
    """Table ``"S2"`` (symmetry) or ``"S3"`` (directionality) exactly as printed."""
    if table not in _SCORE_OF_TABLE:
        raise ValueError(f"table must be 'S2' or 'S3', got {table!r}.")
    data_dir = Path(data_dir) if data_dir is not None else DATA_DIR
    name = {"S2": "table_S2_symmetry.csv", "S3": "table_S3_directionality.csv"}[table]
    df = pd.read_csv(data_dir / "published" / name)
    df.insert(0, "table", table)
    return df


def published_scores(data_dir: str | Path | None = None,
                     catalog: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tables S2 and S3 as one tidy table, each printed row joined with its catalog entry.

    Columns: ``table, row, column, printed_name, key, score, median, q25, q75,
    iqr_below, iqr_above, row_note, problems`` plus the catalog's ``hub_id, family,
    modality, role, n_params, d_model, n_heads, n_kv_heads``.  ``problems`` (``;``-separated)
    joins the row's own note with what the data show: ``duplicate_row`` for a model
    printed more than once in the same table, ``duplicate_values_differ`` where those
    repeats print different numbers, and the entry's problems that affect every row
    (GQA pairing, fused layout, shared layer, modality mismatch).
    """
    data_dir = Path(data_dir) if data_dir is not None else DATA_DIR
    cat = catalog if catalog is not None else load_catalog(data_dir / "catalog.csv")
    rows = pd.read_csv(data_dir / "published" / "printed_rows.csv", dtype={"row_note": str})
    rows["row_note"] = rows["row_note"].fillna("")
    unknown = sorted(set(rows["key"]) - set(cat["key"]))
    if unknown:
        raise ValueError(f"printed_rows.csv maps rows to keys missing from the catalog: {unknown}.")
    tables = pd.concat([load_published_table(t, data_dir) for t in ("S2", "S3")])
    df = tables.merge(rows, on=["table", "row", "column"], how="left", validate="one_to_one")
    if df["key"].isna().any():
        lost = df.loc[df["key"].isna(), ["table", "row", "column", "model"]]
        raise ValueError(f"printed rows without a catalog key:\n{lost}")
    if (df["model"] != df["printed_name"]).any():
        raise ValueError("printed_rows.csv names disagree with the published tables.")
    df = df.drop(columns="model")
    df["score"] = df["table"].map(_SCORE_OF_TABLE)
    df["q25"] = df["median"] - df["iqr_below"]
    df["q75"] = df["median"] + df["iqr_above"]

    every_row = {"gqa_modulo_pairing", "fused_layout", "shared_layer", "modality_mismatch"}
    cat_idx = cat.set_index("key")
    problems = []
    for _, r in df.iterrows():
        p = [r["row_note"]] if r["row_note"] else []
        same = df[(df["table"] == r["table"]) & (df["key"] == r["key"])]
        if len(same) > 1:
            p.append("duplicate_row")
            vals = same[["median", "iqr_below", "iqr_above"]].drop_duplicates()
            if len(vals) > 1:
                p.append("duplicate_values_differ")
        p += [q for q in _split(cat_idx.at[r["key"], "known_problems"]) if q in every_row]
        problems.append(";".join(dict.fromkeys(p)))
    df["problems"] = problems
    keep = ["hub_id", "family", "modality", "role", "n_params", "d_model", "n_heads",
            "n_kv_heads"]
    df = df.merge(cat[["key"] + keep], on="key", how="left")
    order = ["table", "row", "column", "printed_name", "key", "score", "median", "q25",
             "q75", "iqr_below", "iqr_above", "row_note", "problems"] + keep
    return df[order].reset_index(drop=True)
