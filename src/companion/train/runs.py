"""Reading run directories (``data/runs/<name>/``) into one tidy table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .loop import read_run

__all__ = ["load_runs", "runs_root", "label_of"]


def runs_root() -> Path:
    """``data/runs`` of the source tree this package was imported from."""
    return Path(__file__).resolve().parents[3] / "data" / "runs"


def label_of(config: dict) -> str:
    """A short label: ``encoder / symmetric`` (plus the penalty when one was used)."""
    label = f"{config['mode']} / {config['init']}"
    if config.get("penalty", "none") != "none" and config.get("penalty_coef", 0) > 0:
        label += f" + {config['penalty']} penalty x{config['penalty_coef']:g}"
    return label


def load_runs(names=None, root: str | Path | None = None, pattern: str = "*") -> pd.DataFrame:
    """Histories of the named runs (or all matching ``pattern``) with run metadata columns.

    Adds ``run``, ``mode``, ``init``, ``seed``, ``size``, ``penalty``, ``penalty_coef`` and
    ``label`` to every row.
    """
    root = Path(root) if root is not None else runs_root()
    dirs = [root / n for n in names] if names is not None else sorted(
        p for p in root.glob(pattern) if (p / "history.csv").exists())
    if not dirs:
        raise FileNotFoundError(f"no run directories under {root} (pattern {pattern!r}).")
    frames = []
    for d in dirs:
        hist, meta = read_run(d)
        cfg = meta["config"]
        hist = hist.assign(run=d.name, mode=cfg["mode"], init=cfg["init"], seed=cfg["seed"],
                           size=cfg["size"], penalty=cfg.get("penalty", "none"),
                           penalty_coef=cfg.get("penalty_coef", 0.0), label=label_of(cfg))
        frames.append(hist)
    return pd.concat(frames, ignore_index=True)
