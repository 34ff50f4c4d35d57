"""Where the repository's files are: its root and the ``data/`` folder the package reads
(the paper's tables, the shipped null draws, the rules file, the recorded runs)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = ROOT / "data"
#: the book build's shared verdict tables (``COMPANION_VERDICT_CACHE`` in its kernels)
VERDICT_CACHE = ROOT / "_build" / ".verdict_cache"
