"""A tiny stand-in for the repository (one package module, one data file) whose digest keys
the verdict cache: the cache tests edit it to show a changed package or data is never served
from an older table."""

from __future__ import annotations


def package_tree(root):
    """``root`` holding src/companion/m.py and data/t.csv, returned."""
    (root / "src" / "companion").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "src" / "companion" / "m.py").write_text("x = 1\n")
    (root / "data" / "t.csv").write_text("a\n1\n")
    return root
