"""The student edition's sources and notebooks: no solution survives, every checked
exercise gets its own code cell, and a malformed page is refused, not truncated."""

import re
from pathlib import Path

import pytest

from companion.book.teaching.exercises import checked_labels
from companion.book.editions.notebooks import book_chapters, chapter_notebook
from companion.book.editions.solutions import _split_markdown, split_check_cells, strip_solutions
from companion.book.editions.student import prepare_sources

ROOT = Path(__file__).resolve().parents[1]

PAGE = """\
# A chapter

:::{exercise}
:label: ex-a-1

Prove it.

```python
from companion.book.teaching.exercises import check

x = ...
check("ex-a-1", x)
```
:::

::::{solution} ex-a-1
:class: dropdown

The secret argument.

:::{note}
nested, with a shorter fence (MyST: the outer fence is the longer)
:::

```python
x = 42
```
::::

Text after.
"""


def test_solutions_are_removed_with_everything_inside_them():
    out = strip_solutions(PAGE)
    assert "secret argument" not in out and "x = 42" not in out and "nested" not in out
    assert "Prove it." in out and "Text after." in out and ":label: ex-a-1" in out


def test_a_solution_nested_the_wrong_way_round_is_an_error_not_a_leak():
    """MyST ends ':::' at '::::': the code after it would be outside the solution on the page."""
    page = ":::{solution} ex-a-1\nsecret\n\n::::{note}\nnested\n::::\n\n```python\nx = 42\n```\n:::\n"
    with pytest.raises(ValueError, match="closed on line 6 by '::::'.*fewer marks"):
        strip_solutions(page)


def test_an_unclosed_solution_is_an_error_not_a_truncated_page():
    with pytest.raises(ValueError, match="never closed"):
        strip_solutions(":::{solution} ex-a-1\nsecret\n")


def test_the_starter_code_moves_into_a_code_cell_after_its_exercise():
    pieces = _split_markdown(strip_solutions(PAGE))
    kinds = [k for k, _ in pieces]
    assert kinds == ["markdown", "code", "markdown"]
    assert pieces[1][1].endswith('check("ex-a-1", x)')
    assert pieces[0][1].rstrip().endswith(":::") and "```python" not in pieces[0][1]
    assert "Text after." in pieces[2][1]


def test_a_code_block_without_a_check_stays_in_the_text():
    text = ":::{exercise}\n:label: ex-b-1\n\n```python\nprint(1)\n```\n:::\n"
    assert _split_markdown(text) == [("markdown", text.rstrip("\n"))]


@pytest.mark.parametrize("chapter", book_chapters(ROOT), ids=lambda c: c.docname)
def test_student_notebooks_hold_no_solution_and_a_cell_per_checked_exercise(chapter):
    nb = chapter_notebook(chapter, ".", "main", student=True)
    text = "\n".join(c.source for c in nb.cells)
    assert "{solution}" not in text and "Solution" not in text
    source = chapter.source.read_text()
    own = [lab for lab in checked_labels() if f":label: {lab}\n" in source]
    cells = [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
    assert sorted(re.search(r'check\("(ex-[^"]+)"', c.source).group(1) for c in cells) == sorted(own)


def test_the_instructor_notebooks_keep_their_solutions_collapsed():
    ch = next(c for c in book_chapters(ROOT) if c.docname.endswith("measuring"))
    nb = chapter_notebook(ch, ".", "main")
    text = "\n".join(c.source for c in nb.cells)
    assert "<details><summary>Solution</summary>" in text


def test_prepared_sources_have_no_solution_and_a_student_config(tmp_path):
    pages = prepare_sources(ROOT, tmp_path / "src")
    assert len(pages) >= 10
    for page in pages:
        assert "{solution}" not in page.read_text()
    cfg = (tmp_path / "src" / "_config.yml").read_text()
    assert "companion_student_edition: true" in cfg and "student-notebooks" in cfg
    assert str(ROOT / "_build" / ".jupyter_cache") in cfg   # the instructor build's executions


@pytest.mark.parametrize("chapter", book_chapters(ROOT), ids=lambda c: c.docname)
def test_stripping_solutions_leaves_every_code_cell_byte_for_byte(chapter):
    """The student build reuses the instructor build's executions only if the code matches."""
    import jupytext

    text = chapter.source.read_text()
    code = lambda t: [c.source for c in jupytext.reads(t, fmt="md:myst").cells if c.cell_type == "code"]
    assert code(strip_solutions(text)) == code(text)


def test_code_with_blank_lines_survives_stripping():
    page = "```{code-cell} ipython3\na = 1\n\n\nb = 2\n```\n\n:::{solution} ex-a-1\nsecret\n:::\n\nafter\n"
    out = strip_solutions(page)
    assert "a = 1\n\n\nb = 2" in out and "secret" not in out and "\n\n\n\nafter" not in out


def test_the_student_edition_leaves_out_the_instructors_pages_and_keeps_every_other(tmp_path):
    import yaml

    from companion.book.site.chapters import toc_docnames
    from companion.book.editions.student import INSTRUCTOR_PAGES

    root = Path(__file__).resolve().parents[1]
    pages = prepare_sources(root, tmp_path / "src")
    names = {p.relative_to(tmp_path / "src").with_suffix("").as_posix() for p in pages}
    assert "book/teaching" in INSTRUCTOR_PAGES and not names & set(INSTRUCTOR_PAGES)
    student_toc = toc_docnames(tmp_path / "src")
    assert set(student_toc) == set(toc_docnames(root)) - set(INSTRUCTOR_PAGES)
    assert yaml.safe_load((tmp_path / "src" / "_toc.yml").read_text())["root"] == "book/intro"
