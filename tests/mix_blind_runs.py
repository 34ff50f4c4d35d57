"""Three committed runs of the English-mix blind body (seeds 20-22, encoder/standard), copied
into a folder of their own and served as the runs root: what the body-reader tests edit."""

from __future__ import annotations

import shutil
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "runs"
RUNS = [f"mixblind-bert-mini-encoder-standard-s{s}" for s in (20, 21, 22)]
BODY = {"label": "test body", "pattern": "mixblind-bert-mini-*", "seeds": [20, 21, 22], "steps": 10000, "lr": 0.001}


def runs_in(folder: Path, monkeypatch) -> Path:
    """Copies of :data:`RUNS` in ``folder``, which ``runs_root()`` returns for the test."""
    import companion.train.runner.runs as runs

    for r in RUNS:
        shutil.copytree(DATA / r, folder / r)
    monkeypatch.setattr(runs, "runs_root", lambda: folder)
    return folder
