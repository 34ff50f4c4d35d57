"""Every check a chapter's entry in data/chapters.yaml lists still exists, as an assert, in its chapter.

The registry is the one place where a reader sees which claims the book checks and against
what independent reference.  Each item of a page's ``checks`` names the claim, the kind of
reference (``autograd``, ``transformers``, ``monte-carlo``, ``closed-form``,
``finite-differences``, ``published`` for the paper's printed values, ``measurement`` for data
the package measured itself, ``consistency`` for a check of the code against a rewriting of
itself, which guards against regressions but is no independent evidence) and a string that
identifies the check: it must occur in exactly one executable code cell of that chapter, on a
line that asserts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from companion.book.budgets import chapters_registry as reg
from companion.book.editions import notebooks as nbgen
ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "data" / "chapters.yaml"
KINDS = {"autograd", "transformers", "monte-carlo", "closed-form", "finite-differences", "published",
         "measurement", "consistency"}
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)
#: the checks registered when they moved from data/checks.csv into the chapters' entries
#: (110 rows, 110 assert lines); a chapter may add more, none may be lost
REGISTERED_AT_THE_MOVE = 110


def _cells(docname: str) -> list[str]:
    return CELL.findall((ROOT / f"{docname}.md").read_text(encoding="utf-8"))


def _raw_rows() -> list[dict]:
    """The checks as the YAML file holds them, read without the package's reader."""
    data = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))
    return [{"chapter": f"book/{page}", **c} for page, e in data.items() for c in (e or {}).get("checks", [])]


ROWS = reg.registered_checks()


def test_registry_has_the_expected_fields_and_kinds():
    assert ROWS, "data/chapters.yaml lists no checks"
    assert all(set(r) == {"chapter", "claim", "reference", "check"} for r in ROWS)
    bad = [r["check"] for r in ROWS if r["reference"] not in KINDS]
    assert not bad, f"unknown reference kinds (allowed: {sorted(KINDS)}): {bad}"
    checks = [(r["chapter"], r["check"]) for r in ROWS]
    assert len(checks) == len(set(checks)), "a check is listed twice"


def test_the_reader_returns_every_check_the_file_holds_and_none_was_lost():
    raw = _raw_rows()
    assert ROWS == raw
    # counted from the chapters: each check names its own assert line, none shares one
    lines = set()
    for r in raw:
        for i, cell in enumerate(_cells(r["chapter"])):
            lines |= {(r["chapter"], i, n) for n, line in enumerate(cell.splitlines())
                      if r["check"] in line and line.lstrip().startswith("assert")}
    assert len(lines) == len(raw) >= REGISTERED_AT_THE_MOVE


def test_every_listed_chapter_is_in_the_book():
    chapters = set(nbgen.toc_docnames(ROOT))
    missing = sorted({r["chapter"] for r in ROWS} - chapters)
    assert not missing, f"chapters with checks in data/chapters.yaml but not in _toc.yml: {missing}"


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
    assert not unlisted, (f"chapters with asserts but no checks in their entry of data/chapters.yaml: "
                          f"{unlisted}; add `checks: [{{reference, claim, check}}]` to each")


@pytest.mark.parametrize("item, why", [
    ("[{reference: guess, claim: x, check: assert x}]", "reference must be one of"),
    ("[{reference: closed-form, check: assert x}]", "expected exactly"),
    ("[{reference: closed-form, claim: '', check: assert x}]", "claim must be a non-empty"),
    ("{reference: closed-form}", "checks must be a list"),
])
def test_a_malformed_check_is_refused_in_one_line_naming_the_page(tmp_path, item, why):
    p = tmp_path / "chapters.yaml"
    p.write_text(f"trial: {{checks: {item}}}\n")
    with pytest.raises(ValueError, match=f"trial: .*{why}") as err:
        reg.load_registry(p)
    assert "\n" not in str(err.value)
