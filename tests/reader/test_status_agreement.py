"""One answer per claim on every surface of a built book: the site's pages, the student
site, the slides and the generated notebooks state each claim's status as the verdict table
gives it (companion.book.checks.status_check finds the statements; the table is the one the
build's kernels computed, read from the build's verdict cache); and every cell that draws
a figure shows it (companion.book.checks.figure_check over the build's executed chapters)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from companion.book.checks import status_check as sc

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
SURFACES = {"site": SITE, "student site": ROOT / "_build" / "student" / "html",
            "slides": ROOT / "_build" / "slides"}
SKIP = {"genindex.html", "search.html", "py-modindex.html"}


@pytest.fixture(scope="module")
def table():
    from companion.base.paths import VERDICT_CACHE

    os.environ.setdefault("COMPANION_VERDICT_CACHE", str(VERDICT_CACHE))
    from companion.judge import claims

    v = claims.all_verdicts()
    statuses = dict(zip(v["key"], v["status"]))
    for half in ("symmetry", "directionality"):
        statuses[f"survey_encoder_decoder ({half})"] = claims.status_of_half("survey_encoder_decoder", half)
    return statuses, sc.aliases(dict(zip(v["key"], v["claim"])))


def _pages():
    for surface, folder in SURFACES.items():
        if not folder.is_dir():
            continue
        for page in sorted(folder.rglob("*.html")):
            if page.name in SKIP or "_static" in page.parts or "_sources" in page.parts:
                continue
            if page.stem.split(".")[0] in sc.HISTORY_PAGES:   # the one page of earlier versions' readings
                continue
            yield f"{surface}: {page.relative_to(folder)}", page.read_text(encoding="utf-8", errors="replace")
    for nb in sorted((SITE / "notebooks").rglob("*.ipynb")) if (SITE / "notebooks").is_dir() else []:
        if nb.stem in sc.HISTORY_PAGES:
            continue
        yield f"notebook: {nb.relative_to(SITE)}", json.loads(nb.read_text(encoding="utf-8"))["cells"]


def test_every_surface_states_each_claim_with_the_status_of_the_verdict_table(table):
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: build the book first (make book).")
    statuses, names = table
    stated, pages = [], 0
    for where, content in _pages():
        pages += 1
        if where.startswith("notebook"):   # text cells (inline and pipe tables) and code cells' outputs
            stated += sc.notebook_statuses(content, names, where)
        else:
            stated += sc.stated_statuses(sc.html_text(content), names, where) + sc.table_statuses(content, names, where)
    found = sc.disagreements(stated, statuses)
    assert not found, f"{len(found)} statements disagree with the verdict table:\n" + "\n".join(found[:40])
    # the check read the surfaces it names: What survives' table alone states every claim
    keys = {s.key for s in stated if s.where.startswith("site: book/what_survives")}
    assert set(statuses) - {k for k in statuses if "(" in k} <= keys, sorted(set(statuses) - keys)
    print(f"status agreement: {len(stated)} statements on {pages} pages, slides and notebooks agree")


def test_a_claim_is_mathematical_exactly_when_it_has_a_fixed_check(table):
    """``claims.verdict`` checks a key of ``MATH_CHECKS`` alone and reads every other from the
    table: so the table's kinds must split the claims exactly there."""
    from companion.judge import claims

    v = claims.all_verdicts()                        # the fixture's table, kept in this process
    kinds = dict(zip(v["key"], v["kind"]))
    assert {k for k, kind in kinds.items() if kind == "mathematical"} == set(claims.MATH_CHECKS)
    assert set(kinds) == {f.__name__ for f in claims.VERDICTS}


def test_every_drawing_cell_of_the_built_book_shows_its_figure():
    from companion.book.checks.figure_check import cells_without_image

    # the chapters as executed: nbval's copies where make test wrote them (a build served from
    # the execution cache writes its jupyter_execute copies without outputs), else the build's
    by_name = {nb.stem: nb for nb in (ROOT / "_build" / "jupyter_execute" / "book").glob("*.ipynb")}
    by_name.update({nb.stem: nb for nb in (ROOT / "_build" / "executed" / "book").glob("*.ipynb")})
    executed = sorted(by_name.values())
    if not executed:
        pytest.fail("no executed chapters in _build/executed or _build/jupyter_execute: build the book first.")
    pages = {p.stem: p.read_text(encoding="utf-8") for p in (ROOT / "book").glob("*.md")}
    found = [line for nb in executed for line in cells_without_image(nb, pages.get(nb.stem))]
    assert not found, "\n".join(found)
    print(f"figures: every drawing cell of {len(executed)} executed chapters shows an image")
