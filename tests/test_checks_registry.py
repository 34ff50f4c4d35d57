"""Every check listed in data/checks.csv still exists, as an assert, in its chapter.

The registry is the one place where a reader sees which claims the book checks and against
what independent reference.  Each row names a chapter, the claim, the kind of reference
(``autograd``, ``transformers``, ``monte-carlo``, ``closed-form``, ``finite-differences``,
``published`` for the paper's printed values, ``measurement`` for data the package measured
itself, ``consistency`` for a check of the code against a rewriting of itself, which guards
against regressions but is no independent evidence) and a
string that identifies the check: it must occur in exactly one executable code cell of
that chapter, on a line that asserts.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from companion.book.editions import notebooks as nbgen
ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "data" / "checks.csv"
KINDS = {"autograd", "transformers", "monte-carlo", "closed-form", "finite-differences", "published",
         "measurement", "consistency"}
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)


def _rows() -> list[dict]:
    with REGISTRY.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _cells(docname: str) -> list[str]:
    return CELL.findall((ROOT / f"{docname}.md").read_text(encoding="utf-8"))


ROWS = _rows()


def test_registry_has_the_expected_columns_and_kinds():
    assert ROWS, "data/checks.csv lists no checks"
    assert set(ROWS[0]) == {"chapter", "claim", "reference", "check"}
    bad = [r["check"] for r in ROWS if r["reference"] not in KINDS]
    assert not bad, f"unknown reference kinds (allowed: {sorted(KINDS)}): {bad}"
    checks = [(r["chapter"], r["check"]) for r in ROWS]
    assert len(checks) == len(set(checks)), "a check is listed twice"


def test_every_listed_chapter_is_in_the_book():
    chapters = set(nbgen.toc_docnames(ROOT))
    missing = sorted({r["chapter"] for r in ROWS} - chapters)
    assert not missing, f"chapters in data/checks.csv but not in _toc.yml: {missing}"


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['chapter']}:{r['claim'][:40]}" for r in ROWS])
def test_listed_check_is_an_assert_in_one_code_cell(row):
    cells = [c for c in _cells(row["chapter"]) if row["check"] in c]
    assert cells, f"{row['chapter']}: no code cell contains the check {row['check']!r}"
    assert len(cells) == 1, f"{row['chapter']}: the check {row['check']!r} is not unique"
    lines = [line for line in cells[0].splitlines() if row["check"] in line]
    assert any(line.lstrip().startswith("assert") for line in lines), (
        f"{row['chapter']}: {row['check']!r} is not on an assert line")


def test_every_chapter_with_asserts_is_in_the_registry():
    listed = {r["chapter"] for r in ROWS}
    unlisted = [d for d in nbgen.toc_docnames(ROOT)
                if (ROOT / f"{d}.md").is_file() and d not in listed
                and any(re.search(r"^\s*assert ", c, re.M) for c in _cells(d))]
    assert not unlisted, f"chapters with asserts but no row in data/checks.csv: {unlisted}"
