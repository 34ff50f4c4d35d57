"""Test helper: the smallest book the student edition builds (one chapter, a repository URL)."""

from __future__ import annotations

from pathlib import Path


def tiny_book(tmp_path: Path) -> Path:
    """``<tmp_path>/root`` holding ``_config.yml``, ``_toc.yml`` and ``book/intro.md``."""
    root = tmp_path / "root"
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text("title: t\nrepository:\n  url: https://github.com/o/r\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    return root
