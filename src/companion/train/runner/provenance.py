"""What a finished run folder holds: ``provenance.json`` (what made the run) and
``history.csv`` (its tidy history), written atomically and read back with checks."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import pandas as pd
import torch

from ...base.errors import CompanionError
from ..text.data import TokenData
from .config import TrainConfig

__all__ = ["provenance", "write_run", "read_run", "HISTORY_COLUMNS"]


def provenance(cfg: TrainConfig, command: str, seconds: float, data: TokenData | None = None) -> dict:
    """What made a run: command, hardware, duration, versions, date, seed and configuration."""
    import transformers

    from ... import __version__
    from ...base.runtime import describe_device

    dev = torch.device(cfg.device) if cfg.device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return {
        "command": command,
        "hardware": {"device": describe_device(dev), "machine": platform.machine(),
                     "processor": platform.processor() or platform.machine(),
                     "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "duration_s": round(seconds, 1),
        "versions": {"companion": __version__, "torch": torch.__version__,
                     "transformers": transformers.__version__, "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seed": cfg.seed,
        "config": cfg.to_dict(),
        "model_size": cfg.model_size.to_dict(),
        "data": data.summary() if data is not None else None,
    }


def write_run(out_dir: str | Path, history: pd.DataFrame, meta: dict) -> Path:
    """Write ``provenance.json`` and then ``history.csv`` into ``out_dir``, each atomically.

    ``history.csv`` is what marks a run as finished (:func:`read_run`,
    :func:`companion.train.runner.runs.load_runs`), so it is renamed into place last: an
    interrupted run never leaves a folder that reads as a finished one.
    """
    from ...base.cache import atomic_path

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "provenance.json") as tmp:
        tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n")
    with atomic_path(out / "history.csv") as tmp:
        history.to_csv(tmp, index=False, float_format="%.6g")
    return out


def read_run(run_dir: str | Path) -> tuple[pd.DataFrame, dict]:
    """``(history, provenance)`` of a run written by :func:`write_run`."""
    run = Path(run_dir)
    if not (run / "history.csv").exists():
        raise FileNotFoundError(f"{run} holds no history.csv; is it a run directory?")
    try:
        provenance = json.loads((run / "provenance.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompanionError(f"run {run.name} has a history but no provenance.json, so its settings (corpus, "
                             "learning rate, device) cannot be checked; copy the provenance from its work "
                             f"folder, or move {run} away.") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise CompanionError(f"run {run.name}: its provenance.json cannot be read ({str(err).splitlines()[0][:120]}); "
                             f"copy it again from the run's work folder, or move {run} away.") from None
    if not isinstance(provenance, dict) or not isinstance(provenance.get("config"), dict):
        raise CompanionError(f"run {run.name}: its provenance.json holds no config object, so it was not written "
                             f"by `companion train`; make the run again, or move {run} away.")
    return _read_history(run), provenance


#: the columns of a run's history.csv, as :func:`write_run` writes them
HISTORY_COLUMNS = ("step", "quantity", "layer", "head", "value")


def _read_history(run: Path) -> pd.DataFrame:
    """A run's ``history.csv``, refused in one line naming the run when it is not a table of
    the five columns with whole steps and numeric values (a hand edit, a cut-off copy)."""
    import csv

    try:
        hist = pd.read_csv(run / "history.csv")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, csv.Error, ValueError) as err:
        raise CompanionError(f"run {run.name}: its history.csv is not a table this package wrote "
                             f"({str(err).strip().splitlines()[0][:100]}); copy it again from the run's work folder, "
                             f"or move {run} away.") from None
    missing = [c for c in HISTORY_COLUMNS if c not in hist.columns]
    if missing:
        raise CompanionError(f"run {run.name}: its history.csv lacks the columns {missing}; copy it again from the "
                             f"run's work folder, or move {run} away.")
    for col in ("step", "layer", "head", "value"):
        if not pd.api.types.is_numeric_dtype(hist[col]):
            bad = hist.index[pd.to_numeric(hist[col], errors="coerce").isna() & hist[col].notna()]
            line = int(bad[0]) + 2 if len(bad) else "?"
            raise CompanionError(f"run {run.name}: its history.csv has a {col} that is not a number (line {line}); "
                                 f"copy it again from the run's work folder, or move {run} away.")
    return hist
