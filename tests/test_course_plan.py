"""The course plan adds up: reading and core exercises computed from the book, each lecture
within its stated time, every chapter with exercises taught once, every exercise named linked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from companion.book.teaching import course_plan as cp
from companion.book.editions import notebooks as nbgen
from companion.book.teaching.exercise_labels import book_exercise_labels, load_exercise_labels

ROOT = Path(__file__).resolve().parents[1]
HEADER = "---\njupytext:\n  x: 1\n---\n"


def test_prose_words_leave_out_code_solutions_exercises_labels_and_options():
    page = (HEADER + "(sec-a)=\n# One two\n\n% a comment of nine words that nobody ever reads here\n"
            "Three four five.\n\n```{code-cell} ipython3\n:tags: [hide-input]\nimport numpy as np\n```\n\n"
            ":::{exercise}\n:label: ex-a-1\nmany words in the exercise\n:::\n\n"
            ":::{solution} ex-a-1\n:class: dropdown\nthe secret answer\n:::\n\n"
            ":::{admonition} Six seven\n:class: tip\nThe value {glue:text}`some_name:.2f` and $x^\\top M y$.\n:::\n")
    # one two | three four five | six seven | the value ROLE and FORMULA
    assert cp.prose_words(page) == 2 + 3 + 2 + 5


def test_words_grow_with_prose_and_not_with_code():
    base = HEADER + "# T\n\nSome prose here.\n"
    more_code = base + "```{code-cell} ipython3\n" + "x = 1\n" * 50 + "```\n"
    assert cp.prose_words(more_code) == cp.prose_words(base) == 4
    assert cp.prose_words(base + "\nand ten more words " * 3) == 4 + 12


def _book(tmp_path, words_a=400, words_b=100):
    book = tmp_path / "book"
    book.mkdir()
    (book / "a.md").write_text(HEADER + "# A\n\n" + "word " * words_a +
                               "\n\n:::{exercise}\n:label: ex-a-1\nx\n:::\n\n:::{exercise}\n:label: ex-a-2\ny\n:::\n")
    (book / "b.md").write_text(HEADER + "# B\n\n" + "word " * words_b + "\n\n:::{exercise}\n:label: ex-b-1\nz\n:::\n")
    labels = {"ex-a-1": {"difficulty": 1, "importance": "core", "minutes": 20},
              "ex-a-2": {"difficulty": 2, "importance": "optional", "minutes": 30},
              "ex-b-1": {"difficulty": 1, "importance": "core", "minutes": 5}}
    return book, labels


def test_a_lecture_sums_its_core_reading_and_core_exercises_only(tmp_path):
    book, labels = _book(tmp_path, words_a=401)
    lec = cp.Lecture("L", 60, ("a",), optional=("b",))
    s = cp.lecture_sums(lec, cp.chapter_words(book), labels, book_exercise_labels(book))
    # 402 words (title and prose) at 200 a minute: 3 minutes, rounded up; only ex-a-1 is core
    assert s["words"] == 402 and s["reading minutes"] == 3
    assert s["core exercises"] == ["ex-a-1"] and s["core exercise minutes"] == 20 and s["core minutes"] == 23
    assert s["other exercises"] == ["ex-a-2", "ex-b-1"] and s["other exercise minutes"] == 35


def test_a_lecture_over_its_time_is_named(tmp_path):
    book, labels = _book(tmp_path, words_a=1999)     # with the title 2,000 words: 10 min + 20 min
    fits = (cp.Lecture("Fits", 30, ("a",)), cp.Lecture("Second", 10, ("b",)))
    assert cp.plan_problems(fits, book, labels, toc=["a", "b"]) == []
    over = (cp.Lecture("Too much", 29, ("a",)), cp.Lecture("Second", 10, ("b",)))
    problems = cp.plan_problems(over, book, labels, toc=["a", "b"])
    assert len(problems) == 1 and "'Too much'" in problems[0] and "over its stated 29 min" in problems[0]


def test_a_chapter_twice_untaught_or_unknown_is_named(tmp_path):
    book, labels = _book(tmp_path)
    twice = (cp.Lecture("One", 90, ("a",)), cp.Lecture("Two", 90, ("b",), optional=("a",)))
    assert any("chapter a is in two lectures" in p for p in cp.plan_problems(twice, book, labels))
    untaught = (cp.Lecture("One", 90, ("a",)),)
    assert cp.plan_problems(untaught, book, labels, toc=["a", "b"]) == \
        ["chapter b has exercises but no lecture teaches it"]
    unknown = (cp.Lecture("One", 90, ("a", "nowhere")), cp.Lecture("Two", 90, ("b",)))
    assert any("nowhere" in p for p in cp.plan_problems(unknown, book, labels))


def test_the_books_course_fits_every_lecture_and_teaches_every_chapter_with_exercises():
    toc = [Path(d).name for d in nbgen.toc_docnames(ROOT)]
    assert cp.plan_problems(toc=toc) == []
    table = cp.plan_table()
    assert (table["core total (min)"] <= table["stated (min)"]).all()
    assert (table["core total (min)"] == table["reading (min)"] + table["core exercises (min)"]).all()


def test_the_plan_links_each_lecture_s_exercises_chapters_and_slides():
    text = cp.plan_markdown()
    labels = load_exercise_labels()
    exercises = book_exercise_labels()
    named = re.findall(r"\{ref\}`([^`]+)`", text)
    assert sorted(named) == sorted(k for lec in cp.COURSE for c in lec.chapters + lec.optional
                                   for k in exercises.get(c, [])), "every exercise of a lecture is linked once"
    assert set(named) <= set(labels)
    for lec in cp.COURSE:
        for c in lec.chapters:
            assert f"{{doc}}`{c}`" in text and f'href="../slides/{c}.slides.html"' in text
    # a page without code (the glossary) has no deck, so no link to one
    assert "glossary" in [c for lec in cp.COURSE for c in lec.optional]
    assert "glossary.slides.html" not in text


def test_the_guide_shows_the_computed_plan_and_names_only_existing_exercises():
    guide = (ROOT / "book" / "teaching.md").read_text(encoding="utf-8")
    assert "plan_markdown()" in guide and "plan_problems(" in guide and "markdown_format: myst" in guide
    exercises = {k for ks in book_exercise_labels().values() for k in ks}
    named = set(re.findall(r"`(ex-[a-z0-9-]+)`", guide))
    assert named <= exercises, f"the guide names exercises no chapter has: {sorted(named - exercises)}"


# --------------------------------------------------------------------------- recounted from a build
from test_notebook_answers import CHAPTER, _executed, book  # noqa: E402,F401 (fixture)

SENTENCE = "holds in each of the five bodies of runs"


def _built(book, values):  # noqa: F811
    import nbformat

    folder = book / "_build" / "executed" / "book"
    folder.mkdir(parents=True)
    nbformat.write(_executed(values=values), folder / "chap.ipynb")
    return book / "_build"


def test_rendered_words_count_a_glued_sentence_by_its_words(book):  # noqa: F811
    build = _built(book, {"verdict": {"text/plain": repr(SENTENCE)}, "ratio": {"text/plain": "0.123456"}})
    # the page as a reader sees it, pasted by hand: the sentence and the two formatted numbers
    by_hand = (CHAPTER.replace("{glue:text}`verdict`", SENTENCE).replace("{glue:text}`ratio:.2f`", "0.12")
               .replace("{glue:text}`ratio:.3f`", "0.123"))
    words = cp.rendered_words(build, book)
    assert words == {"chap": cp.prose_words(by_hand)}
    # the source counts each use as one word; the sentence is used twice ("0.12" reads as two words)
    assert words["chap"] == cp.prose_words(CHAPTER) + 2 * (len(SENTENCE.split()) - 1) + 2


def test_a_glued_value_no_execution_holds_is_named_with_its_chapter(book):  # noqa: F811
    build = _built(book, {"ratio": {"text/plain": "0.123456"}})
    with pytest.raises(KeyError, match=r"chap: no execution under .* holds the glued value 'verdict'"):
        cp.rendered_words(build, book)


def test_deck_slides_counts_each_deck_s_sections(tmp_path):
    from companion.book.editions.slides import deck_html

    (tmp_path / "a.slides.html").write_text(deck_html("A", ["<h2>1</h2>", "<h2>2</h2>", "<h2>3</h2>"]))
    (tmp_path / "b.slides.html").write_text(deck_html("B", ["<h2>1</h2>"]))
    (tmp_path / "notes.html").write_text("<section></section>")
    assert cp.deck_slides(tmp_path) == {"a": 3, "b": 1}


def test_a_lecture_with_more_slides_than_its_cap_is_named(tmp_path):
    book, labels = _book(tmp_path, words_a=10, words_b=10)
    course = (cp.Lecture("Slides", 30, ("a",), optional=("b",)),)
    cap = int(30 * cp.SLIDES_PER_MINUTE)
    assert cp.plan_problems(course, book, labels, slides={"a": cap, "b": 500}) == []   # optional decks not counted
    problems = cp.plan_problems(course, book, labels, slides={"a": cap + 1})
    assert problems == [f"lecture 'Slides': its decks hold {cap + 1} slides, over the cap of {cap} "
                        f"({cp.SLIDES_PER_MINUTE} a minute of its stated 30 min)"]


def test_rendered_words_replace_the_source_count_in_the_sums(tmp_path):
    book, labels = _book(tmp_path, words_a=401)
    course = (cp.Lecture("L", 30, ("a",), optional=("b",)),)
    assert cp.plan_problems(course, book, labels) == []                       # 402 words: 3 + 20 min
    over = cp.plan_problems(course, book, labels, words={"a": 2001})           # 11 + 20 min
    assert len(over) == 1 and "takes 31 min (11 reading 2,001 words, 20 core exercises)" in over[0]
