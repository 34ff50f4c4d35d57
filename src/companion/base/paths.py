"""Where the repository's files are: its root and the ``data/`` folder the package reads
(the paper's tables, the shipped null draws, the rules file, the recorded runs)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = ROOT / "data"
