"""The built student edition (make student) holds no solution in any file, and the same
search finds the solutions in the instructor's site (so the search can fail)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
STUDENT = ROOT / "_build" / "student"
INSTRUCTOR = ROOT / "_build" / "html"


def _norm(text: str) -> str:
    """Letters and digits only, lower case: survives HTML tags, entities, JSON escapes and
    the way the site rewrites math delimiters."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _solution_snippets() -> dict[str, list[str]]:
    """Per solution, its lines that say something (>= 30 letters and digits) and occur
    nowhere else in the book's pages."""
    pages = {p: p.read_text() for p in (ROOT / "book").glob("*.md")}
    sol = re.compile(r"^:::\{solution\} (\S+)\n(.*?)\n:::\n", re.M | re.S)
    outside = _norm("\n".join(sol.sub("", t) for t in pages.values()))
    out = {}
    for text in pages.values():
        for label, body in sol.findall(text):
            lines = [_norm(ln) for ln in body.splitlines()]
            out[label] = [ln for ln in lines if len(ln) >= 30 and ln not in outside]
    return out


def _leaks(folder: Path, snippets: dict[str, list[str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in folder.rglob("*"):
        if not f.is_file() or f.suffix in {".png", ".jpg", ".svg", ".woff", ".woff2", ".ttf", ".eot", ".ico",
                                           ".pickle", ".doctree", ".gif"}:
            continue
        text = _norm(f.read_bytes().decode("utf-8", errors="ignore"))
        for label, lines in snippets.items():
            if any(ln in text for ln in lines):
                found.setdefault(label, []).append(str(f.relative_to(folder)))
    return found


@pytest.fixture(scope="module")
def snippets():
    s = _solution_snippets()
    assert len(s) >= 20 and sum(map(len, s.values())) >= 20, "too few solution snippets to search for"
    return s


def test_the_search_finds_the_solutions_in_the_instructor_site(snippets):
    if not (INSTRUCTOR / "index.html").is_file():
        pytest.fail(f"no instructor site at {INSTRUCTOR}: make book first")
    found = _leaks(INSTRUCTOR, snippets)
    searchable = {k for k, v in snippets.items() if v}
    assert set(found) == searchable, sorted(searchable - set(found))


def test_no_file_of_the_student_edition_holds_a_solution(snippets):
    if not (STUDENT / "html" / "index.html").is_file():
        pytest.fail(f"no student edition at {STUDENT}: make student first")
    leaks = _leaks(STUDENT, snippets)
    assert not leaks, f"solutions found in the student edition: {leaks}"


def test_the_student_notebooks_carry_a_check_cell_per_checked_exercise():
    from companion.book.teaching.exercises import checked_labels

    cells = []
    for nb_path in (STUDENT / "notebooks").rglob("*.ipynb"):
        nb = nbformat.read(nb_path, as_version=4)
        cells += [c.source for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
    called = sorted(re.search(r'check\("(ex-[^"]+)"', c).group(1) for c in cells)
    assert called == sorted(checked_labels())
    # the site offers the same notebooks for download
    site_nbs = list((STUDENT / "html" / "notebooks").rglob("*.ipynb"))
    assert site_nbs and all(json.loads(p.read_text())["cells"] for p in site_nbs)


def test_the_student_notebooks_carry_the_builds_values_and_outputs_and_no_solution_output():
    from companion.book.site.executions import check_notebooks
    from companion.book.site.chapters import book_chapters
    from companion.book.editions.student import INSTRUCTOR_PAGES

    for folder in (STUDENT / "notebooks", STUDENT / "html" / "notebooks"):
        if not folder.is_dir():
            pytest.fail(f"no student notebooks at {folder}: make student first")
        chapters = [c for c in book_chapters(ROOT) if c.docname not in INSTRUCTOR_PAGES]
        problems, summary = check_notebooks(chapters, ROOT / "_build", folder)
        print(f"student notebooks ({folder.relative_to(STUDENT)}): {summary}")
        assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def student_url(serve):
    if not (STUDENT / "html" / "index.html").is_file():
        pytest.fail(f"no student edition at {STUDENT}: make student first")
    return serve(STUDENT / "html")


@pytest.mark.parametrize("page", sorted(p.relative_to(ROOT).with_suffix("").as_posix()
                                        for p in (ROOT / "book").glob("*.md")))
def test_every_student_page_loads_without_outside_requests(browser, student_url, outside_requests, audit, page):
    if not (STUDENT / "html" / f"{page}.html").is_file():
        pytest.skip(f"{page} is not in the table of contents")
    outside_requests(browser)
    browser.get(f"{student_url}/{page}.html")
    browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const m = (window.MathJax && MathJax.startup && MathJax.startup.promise) || Promise.resolve();
        m.then(() => done(true), () => done(false));""")
    assert "Traceback (most recent call last)" not in browser.page_source
    assert not outside_requests(browser), f"{page} asked for outside resources"
    audit(browser, f"student edition: {page}.html")  # no serious or critical violation
