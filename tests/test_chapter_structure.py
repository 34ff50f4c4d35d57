"""Every chapter of the book is a lesson: learning goals first, exercises with hidden solutions last."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from companion.book.editions import notebooks as nbgen
from companion.book.site.chapters import toc_yaml
ROOT = Path(__file__).resolve().parents[1]
PAGES = nbgen.book_chapters(ROOT) if (ROOT / "_toc.yml").is_file() else []
# the root of _toc.yml is the book's front page, not a lesson
FRONT = nbgen.toc_docnames(ROOT)[0] if PAGES else None
# the pages of the "For teaching" part are guides for instructors, and those of the
# "Appendices" part reference pages (how runs were made, how files are read), not lessons
GUIDES = {f for part in (toc_yaml(ROOT / "_toc.yml") or {}).get("parts", [])
          if part.get("caption") in ("For teaching", "Appendices")
          for f in (c["file"] for c in part["chapters"])} if PAGES else set()
CHAPTERS = [c for c in PAGES if c.docname != FRONT and c.docname not in GUIDES]

HEADER = nbgen.JUPYTEXT_HEADER


def _body(chapter) -> str:
    return chapter.source.read_text(encoding="utf-8")


def _ids(chapters):
    return [c.docname for c in chapters]


@pytest.mark.parametrize("chapter", PAGES, ids=_ids(PAGES))
def test_chapter_opens_with_the_jupytext_header_and_a_title(chapter):
    text = _body(chapter)
    assert text.startswith(HEADER), f"{chapter.docname}: the jupytext header differs"
    first = next(line for line in text[len(HEADER):].splitlines() if line.strip())
    assert first.startswith("# "), f"{chapter.docname}: first line after the header: {first!r}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_states_its_learning_goals_before_any_code(chapter):
    text = _body(chapter)
    goals = re.search(r"^:{3,}\{admonition\} Learning goals\s*$", text, re.M)
    assert goals, f"{chapter.docname}: no ':::{{admonition}} Learning goals' block"
    code = re.search(r"^```\{code-cell\}", text, re.M)
    assert code is None or goals.start() < code.start(), (
        f"{chapter.docname}: the learning goals come after the first code cell"
    )


@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_ends_with_exercises_whose_solutions_are_hidden(chapter):
    text = _body(chapter)
    exercises = re.search(r"^##+ Exercises\s*$", text, re.M)
    assert exercises, f"{chapter.docname}: no 'Exercises' section"
    rest = text[exercises.end():]
    assert not re.search(r"^## (?!#|What to remember\s*$)", rest, re.M), (
        f"{chapter.docname}: a section other than 'What to remember' follows the exercises"
    )
    labels = re.findall(r"^:{3,}\{exercise\}\s*\n:label: (\S+)", rest, re.M)
    assert labels, f"{chapter.docname}: no ':::{{exercise}}' directive with a ':label:'"
    prefix = f"ex-{chapter.docname.split('/')[-1].replace('_', '-')}-"
    assert all(lab.startswith(prefix) for lab in labels), (chapter.docname, labels, prefix)
    solved = re.findall(r"^:{3,}\{solution\} (\S+)\s*\n:class: dropdown", rest, re.M)
    assert sorted(solved) == sorted(labels), (
        f"{chapter.docname}: every exercise needs exactly one collapsed solution "
        f"(':::{{solution}} LABEL' with ':class: dropdown'); exercises {labels}, solutions {solved}")
    assert not re.search(r"^:{3,}\{dropdown\} Solution", rest, re.M), (
        f"{chapter.docname}: a solution in a dropdown; use the {{solution}} directive")


# a reference to the paper's numbered statements ("Thm. S1.14", "Eq. 18", "Fig. 3a") is not a number
_PAPER_REF = re.compile(r"\b(?:Eqs?|Thm|Prop|Cor|Figs?|Def|Lemma|Tables?|Remark)\.?\s+S?\d[\w.-]*")


def summary_problems(text: str) -> list[str]:
    """What is wrong with a page's closing 'What to remember' section (empty: nothing)."""
    from test_answer_boxes import glued_names

    m = re.search(r"^## What to remember\s*\n(.*)\Z", text, re.M | re.S)
    if not m:
        return ["no '## What to remember' section"]
    body = m.group(1)
    problems = []
    if re.search(r"^#{1,2} ", body, re.M) or re.search(r"^(`{3,}|:{3,})", body, re.M):
        problems.append("'What to remember' is not the last thing on the page (a section, cell or block follows)")
    bullets = re.findall(r"^- (.+?)(?=^- |\Z)", body, re.M | re.S)
    if not 3 <= len(bullets) <= 5:
        problems.append(f"{len(bullets)} bullets; a summary has 3 to 5")
    plain, prefixes = glued_names(text)
    for b in bullets:
        missing = [n for n in re.findall(r"\{glue:text\}`([A-Za-z0-9_]+)", b)
                   if n not in plain and not any(n.startswith(p) for p in prefixes)]
        if missing:
            problems.append(f"glues names no cell of the page glues: {missing}")
        rest = _PAPER_REF.sub("", re.sub(r"\{[\w:]+\}`[^`]*`", "", b))
        if re.search(r"\d", rest):
            problems.append(f"a number typed by hand (glue it instead): {' '.join(b.split())[:120]!r}")
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_closes_with_what_to_remember(chapter):
    assert summary_problems(_body(chapter)) == [], chapter.docname


def test_the_summary_rules_catch_a_typed_number_a_missing_glue_and_too_few_bullets():
    page = ("```{code-cell} ipython3\nglue(\"known\", 1)\n```\n\n## What to remember\n\n"
            "- Thm. S1.14 holds at {glue:text}`known:.2f` here.\n- It moved by 0.3 nats.\n"
            "- See {glue:text}`unknown`.\n")
    problems = summary_problems(page)
    assert any("typed by hand" in p and "0.3" in p for p in problems)
    assert any("unknown" in p for p in problems)
    assert not any("S1.14" in p for p in problems)
    assert summary_problems(page.replace("- See", "- One more.\n- See")) != []
    assert any("bullets" in p for p in summary_problems("## What to remember\n\n- only one\n"))
    assert summary_problems("# T\n") == ["no '## What to remember' section"]
