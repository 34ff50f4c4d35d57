"""The one registry of the book's pages (``data/chapters.yaml``) and its limits (``data/limits.yaml``).

A chapter is added in three places: its file ``book/<name>.md``, its ``- file: book/<name>``
line in ``_toc.yml`` and its entry in ``data/chapters.yaml``.  The entry names the lecture
that reads the page (:data:`companion.book.teaching.course_plan.COURSE` takes its chapters
from here) and, for a chapter with code and no row in the measured Colab budget, its
dominant cost and expected time (:func:`budgets`).  Everything else is derived: the
exercises from the chapter's ``:label:`` lines, its checks from ``data/checks.csv``.

:func:`limits` reads the limits every page keeps (rendered words, answer-box words, a
chapter's time on an H100 and on a T4), which the tests and the reader checks read.
"""

from __future__ import annotations

from pathlib import Path

from ...base.paths import ROOT

__all__ = ["REGISTRY_FILE", "LIMITS_FILE", "READINGS", "COSTS", "LIMIT_KEYS", "toc_pages",
           "load_registry", "check_registry", "lecture_chapters", "budgets", "limits"]

REGISTRY_FILE = ROOT / "data" / "chapters.yaml"
LIMITS_FILE = ROOT / "data" / "limits.yaml"
READINGS = ("core", "optional")
COSTS = ("flops", "host_bound", "memory", "io")   # as companion.book.budgets.colab_budget.COSTS
_KEYS = {"lecture", "reading", "budget"}
_BUDGET_KEYS = {"cost", "reason", "cpu_s"}
LIMIT_KEYS = ("page_words", "page_height_px", "answer_box_words", "h100_chapter_s", "t4_chapter_s")


def _yaml(path: Path):
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; it is part of the repository (restore it with git)")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def toc_pages(toc: Path | str = ROOT / "_toc.yml") -> list[str]:
    """Every page of ``_toc.yml`` (root first), as the file name under ``book/`` without ``.md``."""
    data = _yaml(Path(toc))
    files = [data["root"]] + [c["file"] for p in data.get("parts", []) for c in p["chapters"]]
    return [Path(f).name for f in files]


def load_registry(path: Path | str = REGISTRY_FILE) -> dict[str, dict]:
    """``{page: entry}`` from ``data/chapters.yaml``, each entry validated (an error names the
    page and the fix); ``reading`` is filled in (``core`` by default) for a page with a lecture."""
    data = _yaml(Path(path)) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of page names to entries")
    out = {}
    for page, entry in data.items():
        entry = {} if entry is None else entry
        if not isinstance(entry, dict) or not set(entry) <= _KEYS:
            raise ValueError(f"{path}: {page}: an entry holds only {sorted(_KEYS)} "
                             f"(got {entry!r}); write {{}} for a page with none")
        entry = dict(entry)
        if "reading" in entry and "lecture" not in entry:
            raise ValueError(f"{path}: {page}: 'reading' without a 'lecture'; name the lecture or drop it")
        if "lecture" in entry:
            entry.setdefault("reading", "core")
            if entry["reading"] not in READINGS:
                raise ValueError(f"{path}: {page}: reading must be one of {READINGS}")
        if "budget" in entry:
            b = entry["budget"]
            if not isinstance(b, dict) or set(b) != _BUDGET_KEYS:
                raise ValueError(f"{path}: {page}: budget needs exactly {sorted(_BUDGET_KEYS)}")
            if b["cost"] not in COSTS:
                raise ValueError(f"{path}: {page}: budget cost must be one of {COSTS}")
            if not isinstance(b["reason"], str) or len(b["reason"].strip()) <= 20:
                raise ValueError(f"{path}: {page}: budget reason must say why in more than 20 characters")
            s = b["cpu_s"]
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not s > 0:
                raise ValueError(f"{path}: {page}: budget cpu_s must be a positive number of seconds")
        out[str(page)] = entry
    return out


def check_registry(pages: list[str] | None = None, registry: dict | None = None) -> None:
    """Refuse a page of ``_toc.yml`` with no entry, or an entry naming no page of ``_toc.yml``."""
    pages = toc_pages() if pages is None else pages
    registry = load_registry() if registry is None else registry
    missing = [p for p in pages if p not in registry]
    stale = [p for p in registry if p not in pages]
    if missing:
        raise ValueError(f"{REGISTRY_FILE.name} has no entry for {missing} of _toc.yml; add "
                         "'<name>: {}' (with its lecture and budget where it has them)")
    if stale:
        raise ValueError(f"{REGISTRY_FILE.name} names {stale}, which _toc.yml does not list; "
                         "remove the entry or add the page to _toc.yml")


def lecture_chapters(title: str, reading: str = "core", registry: dict | None = None,
                     pages: list[str] | None = None) -> tuple[str, ...]:
    """The pages a lecture reads (``reading``: core or optional), in the order of ``_toc.yml``."""
    registry = load_registry() if registry is None else registry
    pages = toc_pages() if pages is None else pages
    order = {p: i for i, p in enumerate(pages)}
    found = [p for p, e in registry.items() if e.get("lecture") == title and e["reading"] == reading]
    return tuple(sorted(found, key=lambda p: order.get(p, len(order))))


def budgets(registry: dict | None = None) -> dict[str, dict]:
    """``{chapter: {cost, reason, cpu_s}}`` for the chapters whose budget is in the registry
    (new chapters not yet in ``data/chapter_times/colab_budget.csv``)."""
    registry = load_registry() if registry is None else registry
    return {p: dict(e["budget"]) for p, e in registry.items() if "budget" in e}


def limits(path: Path | str = LIMITS_FILE) -> dict[str, int]:
    """``{name: limit}`` from ``data/limits.yaml``: exactly :data:`LIMIT_KEYS`, each a positive
    whole number (an error names the key and the fix)."""
    data = _yaml(Path(path)) or {}
    if not isinstance(data, dict) or set(data) != set(LIMIT_KEYS):
        got = sorted(data) if isinstance(data, dict) else data
        raise ValueError(f"{path}: expected exactly the keys {list(LIMIT_KEYS)} (got {got})")
    for k, v in data.items():
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{path}: {k} must be a positive whole number (got {v!r})")
    return dict(data)
