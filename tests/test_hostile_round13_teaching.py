"""Hostile round 13 (issue 74): what a teacher and a reader of the site meet.

The student edition's sources (solutions in forms the earlier rounds did not try), the
exercises and the course plan counted from the pages, the citation and the changes page built
from a hostile ``CITATION.cff``, ``CHANGELOG.md`` or rules file, the glossary links, the page
tables, the book's execution cache, the build status and the vendored front-end files.

Each case states the right behaviour computed apart from the code under test: words and
labels counted by hand from the text a reader sees, BibTeX authors split as BibTeX splits them
(``and`` at brace depth 0), HTML read as a browser reads it (:class:`html.parser.HTMLParser`),
and bad input refused in one line that names it.
"""

from __future__ import annotations

import json
import os
import re
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

SECRET = "SECRETANSWER"


# ============================================================ helpers computed apart from the code
def _one_line_error(err: BaseException, *names: str) -> str:
    text = str(err)
    assert "\n" not in text.strip(), text
    for name in names:
        assert name in text, (name, text)
    return text


def _bibtex_fields(entry: str) -> dict[str, str]:
    """``{field: value}`` of one BibTeX entry, read brace by brace (a value may span lines)."""
    body = entry[entry.index(",") + 1:entry.rstrip().rindex("}")]
    fields, i = {}, 0
    while True:
        m = re.compile(r"\s*([A-Za-z]+)\s*=\s*\{").match(body, i)
        if not m:
            break
        depth, j = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(body[j], 0)
            j += 1
        fields[m.group(1)] = body[m.end():j - 1]
        i = j + 1 if j < len(body) and body[j] == "," else j
    return fields


def _bibtex_names(author: str) -> list[str]:
    """The names of a BibTeX author field: split at ``and`` between spaces, at brace depth 0
    (BibTeX's own rule)."""
    names, depth, start, i = [], 0, 0, 0
    while i < len(author):
        c = author[i]
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth == 0 and re.match(r"\s+and\s+", author[i:], re.I) and author[i].isspace():
            m = re.match(r"\s+and\s+", author[i:], re.I)
            names.append(author[start:i])
            i += m.end()
            start = i
            continue
        i += 1
    names.append(author[start:])
    return [n.strip() for n in names]


class _Browser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def _read_html(text: str) -> _Browser:
    b = _Browser()
    b.feed(text)
    b.close()
    return b


def _blocks_reading(fn, *args, timeout=3.0, fifo: Path | None = None):
    """Run ``fn(*args)`` in a thread; return ``(finished, result or exception)``.  A read left
    blocked on ``fifo`` is released by opening its other end."""
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as err:   # noqa: BLE001 - reported to the test
            out["value"] = err

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    blocked = t.is_alive()
    if blocked and fifo is not None:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(2)
    return not blocked, out.get("value")


# ============================================================ (a) the student edition's sources
def _strip(text):
    from companion.book.editions.solutions import strip_solutions

    return strip_solutions(text)


NESTED = {
    "in a tab of a tab set": "::::{tab-set}\n:::{tab-item} A\n```{solution} ex-1\nSECRETANSWER\n```\n:::\n::::\n",
    "in a dropdown": "::::{dropdown} Show\n:::{solution} ex-1\nSECRETANSWER\n:::\n::::\n",
    "in an HTML details block": "<details>\n\n:::{solution} ex-1\nSECRETANSWER\n:::\n\n</details>\n",
    "in a list table": "```{list-table}\n* - a\n  - :::{solution} ex-1\n    SECRETANSWER\n    :::\n```\n",
    "in a list item": "1. item\n\n   :::{solution} ex-1\n   SECRETANSWER\n   :::\n",
    "with a tilde fence": "~~~{solution} ex-1\nSECRETANSWER\n~~~\n",
}


@pytest.mark.parametrize("name", list(NESTED), ids=list(NESTED))
def test_a_nested_solution_never_reaches_the_student_page(name):
    out = _strip("Before.\n\n" + NESTED[name] + "\nAfter.\n")
    assert SECRET not in out
    assert "Before." in out and "After." in out


@pytest.mark.parametrize("page, line", [
    ("::::{solution} ex-1\nSECRETANSWER\n:::\n\nAfter.\n", "line 1"),      # a shorter closer closes nothing
    (":::{solution} ex-1\nSECRETANSWER\n::::\n\nAfter.\n", "line 1"),      # a longer one closes it, as MyST reads it
    ("````{solution} ex-1\nSECRETANSWER\n```\n\nAfter.\n", "line 1"),
])
def test_a_solution_whose_closer_differs_from_its_opener_is_refused_naming_its_line(page, line):
    try:
        out = _strip(page)
    except ValueError as err:
        _one_line_error(err, line)
        return
    assert SECRET not in out and "After." in out   # where it is not refused, nothing of it is left


def _refused_or_gone(text):
    """The student page of ``text``: either a one-line refusal, or a page without the secret."""
    try:
        out = _strip(text)
    except ValueError as err:
        return _one_line_error(err)
    assert SECRET not in out, out
    return out


def test_a_solution_in_a_front_matter_substitution_never_reaches_the_student_page():
    # MyST pastes a block substitution as Markdown, directives included: {{ answer }} renders
    # the solution wherever it stands, though the page's body holds no {solution}
    page = ("---\nmyst:\n  substitutions:\n    answer: |\n      ```{solution} ex-1\n      SECRETANSWER\n"
            "      ```\n---\n# A page\n\n{{ answer }}\n")
    _refused_or_gone(page)


def test_an_rst_solution_written_with_a_space_before_its_colons_never_reaches_the_student_page():
    # docutils reads ".. solution ::" as the directive (the space before "::" is allowed)
    from docutils.core import publish_doctree

    assert "<note>" in publish_doctree(".. note ::\n\n   x\n", settings_overrides={"report_level": 5}).pformat()
    _refused_or_gone("```{eval-rst}\n.. solution ::  ex-1\n\n   SECRETANSWER\n```\n")


def _book(tmp_path: Path, config: str = "title: T\n") -> Path:
    root = tmp_path / "root"
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text(config)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    return root


def test_a_solution_in_the_book_configuration_never_reaches_the_student_edition(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = _book(tmp_path, "title: T\nparse:\n  myst_substitutions:\n    answer: |\n      ```{solution} ex-1\n"
                           "      SECRETANSWER\n      ```\n")
    try:
        prepare_sources(root, tmp_path / "student")
    except ValueError as err:
        _one_line_error(err, "_config.yml")
        return
    assert SECRET not in (tmp_path / "student" / "_config.yml").read_text()


def test_a_notebook_page_whose_solution_is_json_escaped_is_refused(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = _book(tmp_path)
    cell = {"cell_type": "markdown", "metadata": {}, "source": ":::{solution} ex-1\nSECRETANSWER\n:::\n"}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb, indent=1).replace("{solution}", "\\u007bsolution\\u007d")
    assert json.loads(text)["cells"][0]["source"].startswith(":::{solution}")   # the same notebook
    (root / "book" / "answers.ipynb").write_text(text)
    with pytest.raises(ValueError) as err:
        prepare_sources(root, tmp_path / "student")
    _one_line_error(err.value, "answers.ipynb")


# ============================================================ (b) exercises and the course plan
EXERCISE_PAGE = ("# A\n\n```{exercise} A titled exercise\n:label: ex-a\nQuestion one.\n```\n\n"
                 ":::{exercise}\n:class: dropdown\n:label: ex-b\nQuestion two.\n:::\n\n"
                 "The syntax, shown as code:\n\n```text\n:::{exercise}\n:label: ex-fake\n:::\n```\n")


def test_the_exercises_of_a_page_are_the_ones_it_renders(tmp_path):
    from companion.book.teaching.exercise_labels import book_exercise_labels

    (tmp_path / "a.md").write_text(EXERCISE_PAGE)
    # by hand: two exercises render (a backtick fence with a title; :label: after :class:),
    # the third is a code block
    assert book_exercise_labels(tmp_path) == {"a": ["ex-a", "ex-b"]}


def test_the_exercise_table_numbers_the_exercises_the_page_renders(tmp_path):
    from companion.book.site.chapters import JUPYTEXT_HEADER
    from companion.book.teaching.exercises import book_exercises

    root = tmp_path
    (root / "book").mkdir()
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/a\n")
    (root / "book" / "a.md").write_text(JUPYTEXT_HEADER + EXERCISE_PAGE)
    table = book_exercises(root)
    assert list(table["label"]) == ["ex-a", "ex-b"]
    assert list(table["number"]) == [1, 2]


WORDS = {   # each page's reader-visible prose is "One two three." (3 words)
    "a gated solution": "One two three.\n\n```{solution-start} ex-1\n```\nsecret answer words\n```{solution-end}\n```\n",
    "a solution named in capitals": "One two three.\n\n:::{Solution} ex-1\nsecret answer words\n:::\n",
    "an exercise closed by a longer fence": "One two three.\n\n:::{exercise}\n:label: ex-1\nsecret answer words\n::::\n",
}


@pytest.mark.parametrize("name", list(WORDS), ids=list(WORDS))
def test_the_reading_counts_only_the_prose_a_reader_reads(name):
    from companion.book.teaching.course_plan import prose_words

    assert prose_words(WORDS[name]) == 3


LABELS = {"ex-a": {"difficulty": 1, "importance": "core", "minutes": 10},
          "ex-b": {"difficulty": 1, "importance": "core", "minutes": 7}}


def test_a_chapter_listed_twice_in_a_lecture_is_refused_not_counted_twice(tmp_path):
    from companion.book.teaching.course_plan import Lecture, lecture_sums, plan_problems

    twice = Lecture("Lecture one", 90, ("a", "a"))
    with pytest.raises(ValueError) as err:
        lecture_sums(twice, {"a": 100}, LABELS, {"a": ["ex-a"]})
    _one_line_error(err.value, "'a'", "Lecture one")
    problems = plan_problems((twice,), tmp_path, labels=LABELS, exercises={"a": ["ex-a"]}, words={"a": 100})
    assert len(problems) == 1 and "'a'" in problems[0] and "Lecture one" in problems[0], problems
    assert "two lectures" not in problems[0], problems    # one lecture, not two


def test_an_exercise_label_on_two_pages_is_a_problem_of_the_plan(tmp_path):
    from companion.book.teaching.course_plan import Lecture, plan_problems

    lec = Lecture("L", 90, ("a", "b"))
    exercises = {"a": ["ex-a"], "b": ["ex-a"]}
    # by hand: one exercise of 10 minutes, shown once (the build refuses a duplicate label)
    problems = plan_problems((lec,), tmp_path, labels=LABELS, exercises=exercises, words={"a": 1, "b": 1})
    assert any("ex-a" in p for p in problems), problems


def test_a_lecture_chapter_missing_from_the_table_of_contents_is_named(tmp_path):
    from companion.book.teaching.course_plan import Lecture, plan_problems

    lec = Lecture("L", 90, ("a", "orphan"))
    problems = plan_problems((lec,), tmp_path, labels=LABELS, exercises={}, words={"a": 1, "orphan": 1},
                             toc=["a"])
    assert any("orphan" in p and "table of contents" in p for p in problems), problems


# ============================================================ (c) the citation
def _cff(tmp_path: Path, text: str) -> Path:
    (tmp_path / "CITATION.cff").write_text(text)
    return tmp_path


def _version():
    from companion.book.site.citation import Version

    return Version("0.1.0", "abcdef1", "4")


def test_an_author_whose_family_name_holds_and_stays_one_author(tmp_path):
    from companion.book.site.citation import book_bibtex

    root = _cff(tmp_path, 'title: "T"\ndate-released: "2025-03-01"\nauthors:\n  - family-names: "Smith and Jones"\n'
                          "    given-names: Ann\n  - family-names: Doe\n    given-names: Bo\n")
    names = _bibtex_names(_bibtex_fields(book_bibtex(_version(), root))["author"])
    assert len(names) == 2, names


def test_a_title_that_breaks_its_line_stays_inside_the_citation_field_and_the_colab_fence(tmp_path, monkeypatch):
    from markdown_it import MarkdownIt

    from companion.book.editions import notebook_cells
    from companion.book.site import citation

    hostile = {"title": "T\n```\n<img src=x onerror=alert(1)>", "authors": [{"name": "A"}],
               "date-released": "2025-03-01"}
    monkeypatch.setattr(citation, "load_citation", lambda root=None: dict(hostile))
    fields = _bibtex_fields(citation.book_bibtex(_version()))
    assert all("\n" not in v for v in fields.values()), fields
    page = MarkdownIt("commonmark").render("\n".join(notebook_cells._cite_this()))
    seen = _read_html(page)
    assert not any(tag == "img" or any(a.startswith("on") for a, _ in attrs) for tag, attrs in seen.tags), page


def test_a_release_date_that_is_no_date_is_refused_not_cut_into_a_year(tmp_path):
    from companion.book.site.citation import book_bibtex

    root = _cff(tmp_path, 'title: "T"\nauthors: [{name: A}]\ndate-released: "01/02/2025"\n')
    try:
        fields = _bibtex_fields(book_bibtex(_version(), root))
    except ValueError as err:
        _one_line_error(err, "date-released")
        return
    assert fields["year"] == "2025", fields


@pytest.mark.parametrize("authors", ["Jane Doe", "[Jane Doe]", "[{name: A}, 7]"])
def test_authors_that_are_no_list_of_people_are_refused_in_one_line(tmp_path, authors):
    from companion.book.site.citation import book_bibtex

    root = _cff(tmp_path, f'title: "T"\ndate-released: "2025-03-01"\nauthors: {authors}\n')
    with pytest.raises(ValueError) as err:
        book_bibtex(_version(), root)
    _one_line_error(err.value, "CITATION.cff", "authors")


@pytest.mark.parametrize("name", ["CITATION.cff", "references.bib"])
def test_a_citation_file_that_is_a_fifo_is_refused_without_blocking(tmp_path, name):
    from companion.book.site.citation import bib_entry, load_citation

    fifo = tmp_path / name
    os.mkfifo(fifo)
    fn, arg = (load_citation, tmp_path) if name == "CITATION.cff" else (bib_entry, "key")
    args = (arg,) if name == "CITATION.cff" else ("key", fifo)
    finished, value = _blocks_reading(fn, *args, fifo=fifo)
    assert finished, f"reading the FIFO {name} blocked"
    assert isinstance(value, ValueError), value
    _one_line_error(value, name)


# ============================================================ (d) the changes page
@pytest.mark.parametrize("text, release", [
    ("# Changelog\n\n##  [0.3.0] - 2026-01-01\n", "0.3.0"),            # two spaces after ## is a heading
    ("# Changelog\n\n## 0.3.0 - 2026-01-01\n", "0.3.0"),                # a release heading without brackets
    ("# Changelog\n\n```\n## [9.9.9]\n```\n\n## [0.1.0]\n", "0.1.0"),   # an example in a code block is no release
    ("# Changelog\n\n## [Unreleased]\n\n## [0.3.0\n\nnot closed]\n", None),   # a heading ends at its line
])
def test_the_last_release_is_the_first_release_heading_of_the_changelog(tmp_path, text, release):
    from companion.book.sphinxext import _last_release

    (tmp_path / "CHANGELOG.md").write_text(text)
    assert _last_release(tmp_path / "CHANGELOG.md") == release


def test_a_changelog_that_is_not_text_is_named_in_one_line(tmp_path):
    from companion.book.sphinxext import _last_release

    (tmp_path / "CHANGELOG.md").write_bytes(b"# Changelog\n\n## [0.1.0]\xff\n")
    with pytest.raises(ValueError) as err:
        _last_release(tmp_path / "CHANGELOG.md")
    _one_line_error(err.value, "CHANGELOG.md")


@pytest.mark.parametrize("claims", ["[a, b]", "{a: just text}"])
def test_a_rules_file_whose_claims_are_no_mapping_is_refused_in_one_line(tmp_path, claims):
    from companion.book.site.changes import load_rules, rules_changes

    path = tmp_path / "rules.yaml"
    path.write_text(f"version: 2\nclaims: {claims}\n")
    with pytest.raises(ValueError) as err:
        rules_changes(load_rules(path), load_rules(path))
    _one_line_error(err.value, "rules.yaml")


# ============================================================ (e) the execution cache
@pytest.fixture
def keyed(monkeypatch):
    from companion.book.site import book_cache

    monkeypatch.setattr(book_cache, "package_key", lambda root=None: {"k": 1})
    return book_cache


def test_a_folder_holding_a_users_own_global_db_is_never_emptied(tmp_path, keyed):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "global.db").write_text("my notes, not a database\n")
    with pytest.raises(ValueError) as err:
        keyed.prepare(mine, tmp_path)
    _one_line_error(err.value, str(mine))
    assert (mine / "global.db").read_text() == "my notes, not a database\n"


@pytest.mark.parametrize("notebook", ['{"cells": [', "{}"])
def test_a_cut_off_executed_notebook_is_named_when_seeding(tmp_path, keyed, notebook):
    root, executed = tmp_path / "root", tmp_path / "executed"
    (root / "book").mkdir(parents=True)
    (executed / "book").mkdir(parents=True)
    (root / "book" / "c.md").write_text("# c\n")
    (executed / "book" / "c.ipynb").write_text(notebook)
    (executed / "book" / "c.json").write_text(json.dumps({"docname": "book/c", "execution_seconds": 1}))
    with pytest.raises(ValueError) as err:
        keyed.seed(executed, tmp_path / "cache", root)
    _one_line_error(err.value, "c.ipynb")


# ============================================================ (f) build status, glossary, tables, vendor
@pytest.mark.parametrize("device, kind", [
    ("ARM Cortex-A72", "CPU"), ("Cortex-A53 (4 cores)", "CPU"), ("Arm Cortex-A76", "CPU"),
    ("NVIDIA A100-SXM4-40GB", "GPU"), ("Tesla T4", "GPU"), ("NVIDIA H100 80GB HBM3", "GPU"),
])
def test_a_processor_named_with_a_letter_and_digits_is_no_gpu(device, kind):
    from companion.book.site.build_status import device_kind

    assert device_kind(device) == kind


def _linked(*body):
    from docutils import nodes

    from companion.book.site.glossary_links import link_first_uses

    doc = nodes.document(None, None)
    doc.extend(body)
    linked = link_first_uses(doc, {"gate": ("book/glossary", "term-gate")}, lambda d, a: f"glossary.html#{a}")
    return linked, doc


def test_a_glossary_word_in_code_or_a_tab_label_is_not_linked():
    from docutils import nodes
    from sphinx_design.tabs import sd_tab_label

    for node in (nodes.doctest_block("", ">>> gate = 1"), sd_tab_label("", "the gate")):
        linked, doc = _linked(node)
        assert linked == [] and not list(doc.findall(nodes.reference)), doc.pformat()
    linked, doc = _linked(nodes.paragraph("", "the gate opens"))     # running text is linked
    assert linked == ["gate"] and len(list(doc.findall(nodes.reference))) == 1


def _table_html(heads, rows) -> str:
    from docutils.core import publish_from_doctree
    from docutils.utils import new_document

    from companion.book.site.page_tables import table

    doc = new_document("page")
    doc += table(heads, rows, "t")
    return publish_from_doctree(doc, writer_name="html5").decode()


def test_a_hostile_table_cell_reaches_the_page_as_its_text():
    cell = '<script>alert(1)</script><img src=x onerror=alert(1)>'
    seen = _read_html(_table_html(["a", "b"], [["1", cell]]))
    assert not any(t in ("script", "img") for t, _ in seen.tags)
    assert cell in "".join(seen.text)


def test_a_table_row_with_a_cell_missing_is_refused():
    with pytest.raises(ValueError) as err:
        _table_html(["a", "b", "c"], [["1", "2"]])
    _one_line_error(err.value)


def test_npm_writing_no_tarball_is_one_line(tmp_path, monkeypatch):
    from companion.book.site import vendor

    monkeypatch.setattr(vendor.subprocess, "run", lambda *a, **k: None)
    with pytest.raises(RuntimeError) as err:
        vendor.npm_package("axe-core", "4.10.3", "sha512-x", "", "axe.min.js", cache=tmp_path)
    _one_line_error(err.value, "axe-core")


# ============================================================ (g) a FIFO where a page or record is read
def _fifo_in(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / name)
    return folder / name


def _student_config_fifo(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = tmp_path / "root"
    (root / "book").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    return _fifo_in(root, "_config.yml"), prepare_sources, (root, tmp_path / "student")


def _seed_record_fifo(tmp_path):
    import jupyter_cache  # noqa: F401 - imported before the clock starts
    import myst_nb.core.read  # noqa: F401

    from companion.book.site import book_cache

    executed = tmp_path / "executed" / "book"
    executed.mkdir(parents=True)
    (executed / "c.ipynb").write_text("{}")
    return _fifo_in(executed, "c.json"), book_cache.seed, (executed.parent, tmp_path / "cache", tmp_path)


def _chapter_words_fifo(tmp_path):
    from companion.book.teaching.course_plan import chapter_words

    return _fifo_in(tmp_path / "book", "x.md"), chapter_words, (tmp_path / "book",)


def _exercise_labels_fifo(tmp_path):
    from companion.book.teaching.exercise_labels import book_exercise_labels

    return _fifo_in(tmp_path / "book", "x.md"), book_exercise_labels, (tmp_path / "book",)


def _deck_slides_fifo(tmp_path):
    from companion.book.teaching.course_plan import deck_slides

    return _fifo_in(tmp_path / "slides", "x.slides.html"), deck_slides, (tmp_path / "slides",)


def _labels_fifo(tmp_path):
    from companion.book.teaching.exercise_labels import load_exercise_labels

    return _fifo_in(tmp_path, "labels.yaml"), load_exercise_labels, (tmp_path / "labels.yaml",)


FIFOS = {"the exercise labels": _labels_fifo, "the student edition's _config.yml": _student_config_fifo, "an executed chapter's record": _seed_record_fifo,
         "a page the plan counts": _chapter_words_fifo, "a page whose exercises are listed": _exercise_labels_fifo,
         "a deck the plan counts": _deck_slides_fifo}


@pytest.mark.parametrize("name", list(FIFOS), ids=list(FIFOS))
def test_a_fifo_where_a_page_or_a_record_is_read_is_refused_without_blocking(tmp_path, keyed, name):
    fifo, fn, args = FIFOS[name](tmp_path)
    finished, value = _blocks_reading(fn, *args, timeout=1.5, fifo=fifo)
    assert finished, f"reading the FIFO {fifo.name} blocked"
    assert isinstance(value, ValueError), value
    _one_line_error(value, fifo.name)


def test_the_student_sources_are_never_written_among_the_pages_they_copy(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = _book(tmp_path)
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    with pytest.raises(ValueError) as err:
        prepare_sources(root, root / "book" / "student")
    _one_line_error(err.value, "book")
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


# ============================================================ (h) the references the checks compare with
@pytest.fixture
def bounded_power(monkeypatch):
    """``t_test_power`` that stops the test after 200 calls (a search that would never end)."""
    from companion.book.teaching import exercise_references as refs

    calls, real = [0], refs.t_test_power

    def counted(n, ncp, level=0.95):
        calls[0] += 1
        if calls[0] > 200:
            raise RuntimeError("seeds_needed searched more than 200 sizes")
        return real(n, ncp, level)

    monkeypatch.setattr(refs, "t_test_power", counted)
    return refs


@pytest.mark.parametrize("args", [(3, 0.05, 0.0), (3, 0.05, -0.02), (3, 0.05, float("nan")), (1, 0.05, 0.02),
                                  (3, 0.0, 0.02)])
def test_seeds_needed_for_an_effect_that_is_no_effect_is_refused_at_once(bounded_power, args):
    with pytest.raises(ValueError) as err:
        bounded_power.seeds_needed(*args)
    _one_line_error(err.value, "seeds_needed")


def test_seeds_needed_is_the_smallest_count_by_the_noncentral_t(bounded_power):
    from scipy import optimize, stats

    def power(n, ncp):   # the one-sided reading of a two-sided test of level 0.95, as the exercise states it
        df = n - 1
        return 1 - stats.nct.cdf(stats.t.ppf(0.975, df), df, ncp)

    for seeds, detected, wanted in ((3, 0.05, 0.02), (10, 0.2, 0.3)):
        ncp = optimize.brentq(lambda c: power(seeds, c) - 0.8, 0.0, 20.0, xtol=1e-12)
        sd = detected * seeds ** 0.5 / ncp
        want = next(n for n in range(2, 10**4) if power(n, wanted * n ** 0.5 / sd) > 0.8)
        assert bounded_power.seeds_needed(seeds, detected, wanted) == want


# ============================================================ (i) the book's table of contents and configuration
@pytest.mark.parametrize("toc, what", [
    ("format: jb-book\nroot: [book/a]\n", "root"),                         # read as no page at all
    ("format: jb-book\nroot: book/a\nparts: book/b\n", "parts"),           # its letters were walked, b was lost
    ("format: jb-book\nroot: book/a\nchapters:\n- glob: book/*\n", "glob"),  # the build's pages, none of them listed
])
def test_a_table_of_contents_the_tools_would_read_short_is_refused(tmp_path, toc, what):
    from companion.book.site.chapters import toc_docnames

    (tmp_path / "_toc.yml").write_text(toc)
    with pytest.raises(ValueError) as err:
        toc_docnames(tmp_path)
    _one_line_error(err.value, "_toc.yml", what)


@pytest.mark.parametrize("config", ["repository: https://github.com/o/r\n", "repository:\n  url: [x]\n",
                                    "repository:\n  url: 'https://github.com/o/r\n    evil'\n"])
def test_a_repository_setting_that_is_no_address_is_refused_in_one_line(tmp_path, config):
    from companion.book.site.chapters import repository_url

    (tmp_path / "_config.yml").write_text(config)
    with pytest.raises(ValueError) as err:
        repository_url(tmp_path)
    _one_line_error(err.value, "_config.yml", "repository")


# ============================================================ (j) the student notebook's check cells
STARTER = 'from companion.book.teaching.exercises import check\n\nx = ...\ncheck("ex-a-1", x)'


@pytest.mark.parametrize("opening, closing", [("```{exercise} A title", "```"), ("::::{exercise}", ":::::"),
                                              (":::{exercise}", ":::")])
def test_the_starter_code_of_an_exercise_in_any_fence_moves_into_its_own_cell(opening, closing):
    from companion.book.editions.solutions import _split_markdown

    inner = "~~~python" if opening.startswith("`") else "```python"
    text = f"{opening}\n:label: ex-a-1\n\nProve it.\n\n{inner}\n{STARTER}\n{inner[:3]}\n{closing}\n\nText after.\n"
    pieces = _split_markdown(text)
    # by hand: the exercise's text (its code replaced by a pointer), the code, the text after
    assert [k for k, _ in pieces] == ["markdown", "code", "markdown"], pieces
    assert pieces[1][1] == STARTER
    assert pieces[0][1].endswith(closing) and "check(" not in pieces[0][1] and "Text after." in pieces[2][1]


def test_the_changes_section_names_an_unreadable_changelog_as_a_directive_error(tmp_path):
    from types import SimpleNamespace

    from docutils.parsers.rst import DirectiveError

    from companion.book.sphinxext import ReleaseChanges

    (tmp_path / "CHANGELOG.md").write_bytes(b"# Changelog\n\n## [0.1.0]\xff\n")
    env = SimpleNamespace(note_reread=lambda: None, note_dependency=lambda p: None,
                          app=SimpleNamespace(srcdir=str(tmp_path)))
    state = SimpleNamespace(document=SimpleNamespace(settings=SimpleNamespace(env=env)))
    directive = ReleaseChanges("release-changes", [], {}, [], 1, 0, "", state, SimpleNamespace(reporter=None))
    with pytest.raises(DirectiveError) as err:   # Sphinx shows it as one line naming the page
        directive.run()
    _one_line_error(err.value.msg, "CHANGELOG.md", "release-changes")
