"""The one registry of the book's pages (``data/chapters.yaml``) and its limits (``data/limits.yaml``).

A chapter is added in three places: its file ``book/<name>.md``, its ``- file: book/<name>``
line in ``_toc.yml`` and its entry in ``data/chapters.yaml``.  The entry names the lecture
that reads the page (:data:`companion.book.teaching.course_plan.COURSE` takes its chapters
from here) and, for a chapter with code and no row in the measured Colab budget, its
dominant cost and expected time (:func:`budgets`), its exercises (each one's difficulty,
importance and minutes, and for an exercise checked by code the data of its check:
:func:`exercises`) and the claims its ``assert`` lines check (:func:`registered_checks`).
Everything else is derived from these.

:func:`limits` reads the limits every page keeps (rendered words, answer-box words, a
chapter's time on an H100 and on a T4), which the tests and the reader checks read.
"""

from __future__ import annotations

from pathlib import Path

from ...base.paths import ROOT

__all__ = ["REGISTRY_FILE", "LIMITS_FILE", "READINGS", "COSTS", "LIMIT_KEYS", "IMPORTANCE", "DIFFICULTY",
           "REFERENCES", "toc_pages", "load_registry", "check_registry", "lecture_chapters", "budgets",
           "exercises", "check_exercises", "registered_checks", "limits"]

REGISTRY_FILE = ROOT / "data" / "chapters.yaml"
LIMITS_FILE = ROOT / "data" / "limits.yaml"
READINGS = ("core", "optional")
COSTS = ("flops", "host_bound", "memory", "io")   # as companion.book.budgets.colab_budget.COSTS
_KEYS = {"lecture", "reading", "budget", "exercises", "checks"}
_BUDGET_KEYS = {"cost", "reason", "cpu_s"}
IMPORTANCE = ("core", "recommended", "optional")
DIFFICULTY = {1: "routine", 2: "moderate", 3: "challenging"}
_LABEL_KEYS = {"difficulty", "importance", "minutes"}
#: the kinds of independent reference a registered check compares with (``consistency``: the
#: code against a rewriting of itself, which guards against regressions but is no evidence)
REFERENCES = ("autograd", "transformers", "monte-carlo", "closed-form", "finite-differences", "published",
              "measurement", "consistency")
_CHECK_KEYS = {"reference", "claim", "check"}
LIMIT_KEYS = ("page_words", "page_height_px", "answer_box_words", "h100_chapter_s", "t4_chapter_s")


def _yaml(path: Path):
    """The YAML of ``path``; a file that is missing, no regular file (a FIFO is never opened),
    no UTF-8 text, no YAML, or holding a key twice (the second would silently win) is refused
    in one line naming it."""
    import yaml

    from ...base.bounded_yaml import load_bounded

    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(f"{path} is missing; it is part of the repository (restore it with git)")
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file; replace it with the repository's file (restore it with git)")
    try:
        return load_bounded(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; restore it with git or save it as UTF-8") from None
    except (yaml.YAMLError, OverflowError) as err:
        why = " ".join(str(err).split())[:200]
        raise ValueError(f"{path} is not valid YAML ({why}); fix the file") from None


def toc_pages(toc: Path | str = ROOT / "_toc.yml") -> list[str]:
    """Every page of ``_toc.yml`` (root first, then each ``file:`` entry in reading order, the
    ``sections:`` of a chapter included), as the file name under ``book/`` without ``.md``:
    the pages the book builds, as :func:`companion.book.site.chapters.toc_docnames` reads them
    (an entry written with its suffix counts; a ``url:`` entry is no page; a ``glob:`` entry
    or a ``file:`` that is no path is refused in one line)."""
    from ...base.toc import toc_entries

    toc = Path(toc)
    return list(dict.fromkeys(Path(n).name for n in toc_entries(_yaml(toc) or {}, toc)))


def load_registry(path: Path | str = REGISTRY_FILE) -> dict[str, dict]:
    """``{page: entry}`` from ``data/chapters.yaml``, each entry validated (an error names the
    page and the fix); ``reading`` is filled in (``core`` by default) for a page with a lecture."""
    data = _yaml(Path(path)) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of page names to entries")
    out = {}
    for page, entry in data.items():
        if isinstance(page, bool) or not isinstance(page, (str, int)) or not str(page).strip():
            raise ValueError(f"{path}: {page!r} is no page's name; key each entry by its file name under book/ "
                             "without .md")
        entry = {} if entry is None else entry
        if not isinstance(entry, dict) or not set(entry) <= _KEYS:
            raise ValueError(f"{path}: {page}: an entry holds only {sorted(_KEYS)} "
                             f"(got {entry!r}); write {{}} for a page with none")
        entry = dict(entry)
        if "reading" in entry and "lecture" not in entry:
            raise ValueError(f"{path}: {page}: 'reading' without a 'lecture'; name the lecture or drop it")
        if "lecture" in entry:
            if not isinstance(entry["lecture"], str) or not entry["lecture"].strip():
                raise ValueError(f"{path}: {page}: lecture must be a lecture's title (got {entry['lecture']!r})")
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
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < float("inf"):
                raise ValueError(f"{path}: {page}: budget cpu_s must be a positive number of seconds, and finite")
        if not isinstance(entry.get("exercises", {}), dict):
            raise ValueError(f"{path}: {page}: exercises must map each exercise's :label: to its entry")
        for label, ex in (entry.get("exercises") or {}).items():
            _check_exercise(path, page, label, ex)
        checks = entry.get("checks", [])
        if not isinstance(checks, list):
            raise ValueError(f"{path}: {page}: checks must be a list of {{reference, claim, check}} items")
        for i, c in enumerate(checks, 1):
            _check_check(path, page, i, c)
        out[str(page)] = entry
    return out


def _check_exercise(path, page, label, ex) -> None:
    """Refuse a malformed exercise entry, naming the page, the label and the fix."""
    at = f"{path}: {page}: exercise {label}"
    if not isinstance(label, str) or not label.strip():
        raise ValueError(f"{path}: {page}: {label!r} is no exercise label; key each exercise by its :label:")
    if not isinstance(ex, dict) or not _LABEL_KEYS <= set(ex) <= _LABEL_KEYS | {"check"}:
        raise ValueError(f"{at}: expected exactly difficulty, importance, minutes (and a check where "
                         f"code checks the answer); got {ex!r}")
    if type(ex["difficulty"]) is not int or ex["difficulty"] not in DIFFICULTY:   # True and 1.0 equal 1
        raise ValueError(f"{at}: difficulty must be one of {sorted(DIFFICULTY)}")
    if ex["importance"] not in IMPORTANCE:
        raise ValueError(f"{at}: importance must be one of {IMPORTANCE}")
    m = ex["minutes"]
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= 600:
        raise ValueError(f"{at}: minutes must be a whole number from 1 to 600")
    if "check" in ex and not isinstance(ex["check"], dict):
        raise ValueError(f"{at}: check must be a mapping (see companion.book.teaching.exercise_engine)")


def _check_check(path, page, i, c) -> None:
    """Refuse a malformed registered check, naming the page, its position and the fix."""
    at = f"{path}: {page}: check {i}"
    if not isinstance(c, dict) or set(c) != _CHECK_KEYS:
        raise ValueError(f"{at}: expected exactly {{reference, claim, check}}; got {c!r}")
    if c["reference"] not in REFERENCES:
        raise ValueError(f"{at}: reference must be one of {', '.join(REFERENCES)} (got {c['reference']!r})")
    for k in ("claim", "check"):
        if not isinstance(c[k], str) or not c[k].strip():
            raise ValueError(f"{at}: {k} must be a non-empty line of text")


def exercises(registry: dict | None = None) -> dict[str, dict]:
    """``{label: entry}`` of every exercise of the registry, each entry with its ``chapter``
    added; a label under two pages is refused, naming both."""
    registry = load_registry() if registry is None else registry
    out: dict[str, dict] = {}
    for page, e in registry.items():
        for label, ex in (e.get("exercises") or {}).items():
            if label in out:
                raise ValueError(f"{REGISTRY_FILE.name}: exercise {label} is listed under both "
                                 f"{out[label]['chapter']} and {page}; keep it under the page that holds it")
            out[label] = {**ex, "chapter": page}
    return out


def check_exercises(book: Path | str = ROOT / "book", registry: dict | None = None) -> None:
    """Refuse a page whose ``{exercise}`` labels differ from its entry's ``exercises`` (one
    line naming the page, the labels and the fix)."""
    import re

    registry = load_registry() if registry is None else registry
    for page, entry in registry.items():
        source = Path(book) / f"{page}.md"
        text = source.read_text(encoding="utf-8") if source.is_file() else ""
        found = re.findall(r"^:{3,}\{exercise\}[^\n]*\n:label: (\S+)", text, re.M)
        listed = list((entry.get("exercises") or {}))
        if found != listed:
            missing, stale = [k for k in found if k not in listed], [k for k in listed if k not in found]
            raise ValueError(
                f"{REGISTRY_FILE.name}: {page}: the exercises of book/{page}.md are {found}, its entry lists "
                f"{listed}; " + (f"add {missing} under its exercises: with difficulty, importance, minutes; "
                                 if missing else "") + (f"remove {stale}; " if stale else "")
                + "keep them in the chapter's order")


def registered_checks(registry: dict | None = None) -> list[dict]:
    """``[{chapter, reference, claim, check}]``: every check of every page, in registry order
    (``chapter`` as ``book/<page>``, the docname the notebooks use)."""
    registry = load_registry() if registry is None else registry
    return [{"chapter": f"book/{page}", **c} for page, e in registry.items() for c in e.get("checks", [])]


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
