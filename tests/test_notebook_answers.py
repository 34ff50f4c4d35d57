"""The notebooks and slides carry the build's answers whatever the build path: values and
outputs are read from every execution a build leaves (myst-nb's copies, the execution cache,
nbval's executions); a glue name no execution answers fails the build naming the notebook and
the name; the check the reader checks run fails on a notebook made the old way."""

from __future__ import annotations

import base64
import json
import textwrap
from pathlib import Path

import nbformat
import pytest

from companion.book.site import executions as exs
from companion.book.editions import notebooks as nbgen
from companion.book.editions import slides as sl

REPO = "https://github.com/owner/companion"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 64).decode()

CHAPTER = nbgen.JUPYTEXT_HEADER + textwrap.dedent("""\
    # A chapter

    :::{admonition} The answer
    :class: tip

    **Question.** Does it hold?

    - Claim A: **{glue:text}`verdict`**; estimate {glue:text}`ratio:.2f`.
    :::

    ```{code-cell} ipython3
    from companion.book.paste import glue_figure, glue_number, glue_text
    glue_text("verdict", "holds")
    glue_number("ratio", 0.123456)
    ```

    ## A section

    The ratio is {glue:text}`ratio:.3f` and the verdict {glue:text}`verdict`.

    ```{code-cell} ipython3
    plot()
    ```

    ```{glue:figure} fig_x
    :name: fig-x

    The caption of the figure.
    ```

    :::{exercise}
    :label: ex-a-1

    Say why.
    :::

    :::{solution} ex-a-1
    Because {glue:text}`only_in_solution`.
    :::
    """)


def _output(name, value):
    """A value glued with ``display=False``, as the kernel records it."""
    data = {exs.GLUE_PREFIX + k: v for k, v in value.items()}
    return nbformat.v4.new_output("display_data", data=data, metadata={
        "scrapbook": {"name": name, "mime_prefix": exs.GLUE_PREFIX}})


def _executed(with_outputs=True, values=None):
    """The chapter as nbval saves it (code cells only matter), with its outputs."""
    import jupytext

    nb = jupytext.reads(CHAPTER, fmt="md:myst")
    if not with_outputs:
        return nb
    values = values if values is not None else {
        "verdict": {"text/plain": "holds"}, "ratio": {"text/plain": "0.123456"},
        "fig_x": {"text/plain": "<Figure size 640x480 with 1 Axes>", "image/png": PNG},
        "only_in_solution": {"text/plain": "it does"}}
    code = [c for c in nb.cells if c.cell_type == "code"]
    code[0].outputs = [_output(k, v) for k, v in values.items()]
    code[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
                                              metadata={"image/png": {"alt": "a plot"}})]
    return nb


@pytest.fixture
def book(tmp_path):
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/chap\n")
    (tmp_path / "_config.yml").write_text(f"repository:\n  url: {REPO}\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "chap.md").write_text(CHAPTER)
    return tmp_path


def _make_test_build(book: Path, *, cache: bool):
    """A build as ``make test`` leaves it: myst-nb's copy without outputs (the chapter was
    served from the cache) but with its glue store, and the execution in nbval's folder or
    in the execution cache."""
    build = book / "_build"
    je = build / "jupyter_execute" / "book"
    je.mkdir(parents=True)
    nbformat.write(_executed(with_outputs=False), je / "chap.ipynb")
    ex = _executed()
    store = exs.glue_records(ex)
    (je / "chap.glue.json").write_text(json.dumps({k: {"data": v["data"]} for k, v in store.items()}))
    if cache:
        from jupyter_cache import get_cache
        from jupyter_cache.base import CacheBundleIn
        from myst_nb.core.read import read_myst_markdown_notebook

        source = book / "book" / "chap.md"
        as_built = read_myst_markdown_notebook(CHAPTER, path=str(source))
        for mine, done in zip([c for c in as_built.cells if c.cell_type == "code"],
                              [c for c in ex.cells if c.cell_type == "code"]):
            mine.outputs = done.outputs
        get_cache(str(build / ".jupyter_cache")).cache_notebook_bundle(
            CacheBundleIn(as_built, str(source)), check_validity=False, overwrite=True)
    else:
        (build / "executed" / "book").mkdir(parents=True)
        nbformat.write(ex, build / "executed" / "book" / "chap.ipynb")
    return build


@pytest.mark.parametrize("cache", [False, True], ids=["nbval executions", "execution cache"])
def test_the_make_test_build_gives_outputs_and_values(book, cache):
    build = _make_test_build(book, cache=cache)
    found = exs.find(nbgen.book_chapters(book), exs.build_sources(build))["book/chap"]
    assert found.notebook is not None and found.origins[0].endswith(".jupyter_cache" if cache else "executed")
    assert found.values["verdict"] == "holds" and found.figure("fig_x")[0] == PNG
    nb = nbgen.chapter_notebook(nbgen.book_chapters(book)[0], REPO, "v1", executed=found)
    got = exs.report(nb)
    assert got["placeholders"] == 0 and got["raw_glue"] == 0
    assert got["cells_with_output"] == 2 and got["setup_lines"] <= 10
    assert exs.check_notebook(nb, found) == []
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "Claim A: **holds**; estimate 0.12." in text and "The ratio is 0.123 and the verdict holds." in text
    assert f"](data:image/png;base64,{PNG})" in text and "*Figure.* The caption of the figure." in text
    shown = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
             if "companion_glued" in o.get("metadata", {})]
    assert [o["data"]["text/plain"] for o in shown] == ["verdict = holds", "ratio = 0.123456", "only_in_solution = it does"]


def test_a_make_book_build_that_executed_the_chapter_itself_gives_outputs_and_values(book):
    """``make book`` with an empty cache: myst-nb's copy holds the outputs, the glued values
    moved out of the cells into its glue store."""
    ex = _executed()
    store = exs.glue_records(ex)
    for cell in ex.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if "scrapbook" not in o.get("metadata", {})]
    je = book / "_build" / "jupyter_execute" / "book"
    je.mkdir(parents=True)
    nbformat.write(ex, je / "chap.ipynb")
    (je / "chap.glue.json").write_text(json.dumps({k: {"data": v["data"]} for k, v in store.items()}))
    found = exs.find(nbgen.book_chapters(book), exs.build_sources(book / "_build"))["book/chap"]
    assert found.origins == [str(book / "_build" / "jupyter_execute")]
    nb = nbgen.chapter_notebook(nbgen.book_chapters(book)[0], REPO, "v1", executed=found)
    assert exs.check_notebook(nb, found) == [] and exs.report(nb)["cells_with_output"] == 1


def test_the_written_notebooks_of_a_make_test_build_carry_the_answers(book):
    _make_test_build(book, cache=True)
    out = book / "out"
    for student in (False, True):
        [path] = nbgen.write_notebooks(book, out / str(student), ref="v1", student=student)
        nb = nbformat.read(path, as_version=4)
        assert exs.check_notebook(nb) == [] and exs.report(nb)["cells_with_output"] == 2
        assert nb.metadata["companion"]["values"] == 4
    chapters = nbgen.book_chapters(book)
    problems, summary = exs.check_notebooks(chapters, book / "_build", out / "False")
    assert problems == [] and summary.startswith("1 notebooks, 0 placeholders, 2 of ")
    # the same check on notebooks written without the build's values (what the old path wrote)
    nbgen.write_notebooks(book, out / "old", ref="v1", executions=None)
    problems, summary = exs.check_notebooks(chapters, book / "_build", out / "old")
    assert len(problems) == 2 and "5 placeholders, 0 of " in summary
    student = nbformat.read(out / "True" / "book" / "chap.ipynb", as_version=4)
    text = "\n".join(c.source for c in student.cells)
    assert "Because" not in text and "it does" not in "\n".join(c.source for c in student.cells if c.cell_type == "markdown")


def test_the_check_fails_on_a_notebook_made_the_old_way(book):
    """The old path: only ``_build/jupyter_execute`` was read, and on ``make test``'s build it
    holds no outputs (nor the glued values, which live in its glue store): every value was a
    placeholder, no cell had an output, and the set-up cell was the whole installer."""
    chapter = nbgen.book_chapters(book)[0]
    execution = exs.find([chapter], exs.build_sources(_make_test_build(book, cache=False)))["book/chap"]
    old = nbgen.chapter_notebook(chapter, REPO, "v1", executed=None)       # no values, no outputs
    old.cells[nbgen.setup_index(old)].source = "# @title Set-up\n" + "pass\n" * 141
    problems = exs.check_notebook(old, execution)
    assert exs.report(old)["placeholders"] == 5 and exs.report(old)["cells_with_output"] == 0
    assert any("5 glued value(s) left" in p for p in problems)
    assert any("2 of the 2 code cells" in p for p in problems)
    assert any("set-up cell of 141 lines" in p for p in problems)


def test_a_glue_name_no_execution_answers_fails_naming_the_notebook_and_the_name(book):
    chapter = nbgen.book_chapters(book)[0]
    ex = exs.Execution("book/chap", _executed(values={"verdict": {"text/plain": "holds"}}),
                       {"verdict": {"data": {"text/plain": "holds"}}}, ["here"])
    with pytest.raises(exs.GlueMissing, match=r"notebook book/chap\.ipynb: .* a value for ratio, only_in_solution, fig_x"):
        nbgen.chapter_notebook(chapter, REPO, "v1", executed=ex)
    # the old path's input (myst-nb's copy without outputs or values) is such a failure now
    je = book / "_build" / "jupyter_execute" / "book"
    je.mkdir(parents=True)
    nbformat.write(_executed(with_outputs=False), je / "chap.ipynb")
    with pytest.raises(exs.GlueMissing, match="no execution of book/chap"):
        nbgen.write_notebooks(book, book / "out", ref="v1")
    # a glue reference inside a solution needs no value in the student notebook
    del ex.glue["verdict"]
    ex.glue.update({k: {"data": v} for k, v in {"verdict": {"text/plain": "holds"}, "ratio": {"text/plain": "1"},
                                                   "fig_x": {"image/png": PNG}}.items()})
    nbgen.chapter_notebook(chapter, REPO, "v1", executed=ex, student=True)
    with pytest.raises(exs.GlueMissing, match="only_in_solution"):
        nbgen.chapter_notebook(chapter, REPO, "v1", executed=ex)


def test_an_execution_of_another_version_of_the_chapter_is_not_used(book):
    build = _make_test_build(book, cache=False)
    nb = _executed()
    nb.cells[[i for i, c in enumerate(nb.cells) if c.cell_type == "code"][1]].source = "plot(2)"
    nbformat.write(nb, build / "executed" / "book" / "chap.ipynb")
    found = exs.find(nbgen.book_chapters(book), exs.build_sources(build))["book/chap"]
    assert found.notebook is None                      # myst-nb's copy has no outputs, nbval's is stale
    assert found.values["verdict"] == "holds"          # the glue store of this build's copy still answers


@pytest.mark.parametrize("raw, spec", [("0.123456", ".2f"), ("1234", ","), ("holds", ""), ("'quoted'", ""),
                                       ("0.5", ".0%"), ("12", "d"), ("3", ".1f"), ("np.float64(0.5)", "")])
def test_values_are_formatted_as_the_page_formats_them(raw, spec):
    from myst_nb.core.variables import format_plain_text

    assert exs.text(raw, spec) == format_plain_text(raw, spec)
    assert nbgen.glue_text("x", spec, {"x": raw}) == format_plain_text(raw, spec)


def test_references_and_missing_names():
    md = "a {glue:text}`x:.2f` b {glue}`y` c\n```{glue:figure} z\n:name: f\n\nCap.\n```\n"
    assert exs.references(md) == ["x", "y", "z"]
    ex = exs.Execution("c", None, {"x": {"data": {"text/plain": "1"}}, "z": {"data": {"text/plain": "<Figure>"}}})
    assert exs.missing(md, ex) == ["y", "z"]                 # a figure needs an image


# --------------------------------------------------------------------------- a re-run shows fresh values
def test_the_glue_helpers_show_their_values_once_the_set_up_turns_it_on(monkeypatch):
    import IPython.display

    from companion.book import paste

    monkeypatch.setattr(paste, "_SHOW", False)
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append((a, k)))
    monkeypatch.setattr("myst_nb.glue", lambda *a, **k: None)
    paste.glue_text("verdict", "holds")
    assert shown == []                                        # the book's build: nothing shown
    paste.show_values()
    paste.glue_text("verdict", "holds")
    paste.glue_number("ratio", __import__("numpy").float64(0.25))
    assert [a[0]["text/plain"] for a, k in shown] == ["verdict = holds", "ratio = 0.25"]
    assert shown[0][1]["metadata"] == {paste.SHOWN_KEY: "verdict"}
    # what a notebook carries from the build is what a re-run shows
    assert paste.shown("verdict", "holds") == ({"text/plain": "verdict = holds"}, {paste.SHOWN_KEY: "verdict"})


def test_the_set_up_in_a_checkout_installs_nothing_and_turns_the_display_on(monkeypatch, capsys):
    import subprocess

    from companion.book.editions import colab

    from companion.book import paste

    monkeypatch.setattr(paste, "_SHOW", False)
    monkeypatch.setenv("COMPANION_RUN_SIZE", "ci")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
    monkeypatch.setattr("companion.book.kernel.use_book_defaults", lambda: None)
    assert colab.setup() is None          # the cell's last line: no value shown after it
    assert __import__("os").environ["COMPANION_RUN_SIZE"] == "ci"
    assert paste._SHOW is True
    assert "run size 'ci'" in capsys.readouterr().out
    assert colab.package_root() == Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- slides
def test_an_answer_point_over_the_budget_keeps_its_verdict_on_the_slide():
    aside = "(" + " ".join(["word"] * 70) + ")"
    point = f"Fig. 3a: **holds**; encoder minus decoder +0.1 {aside}."
    slides = sl.pack_answer([point])
    assert slides[0].body == "- Fig. 3a: **holds**; encoder minus decoder +0.1." and point in slides[0].notes
    # no aside to drop: trimmed at words, never to the bare label
    long = "Fig. S5b: **inconclusive**; " + " ".join(["more"] * 80) + "."
    kept, _ = sl.trim(long)
    assert kept.startswith("Fig. S5b: **inconclusive**;")


def test_an_answer_slide_without_its_verdict_is_refused_naming_chapter_and_slide():
    glue = {"st": {"data": {"text/plain": "holds"}}}
    verdicts = sl.answer_verdicts(CHAPTER.replace("verdict", "st"))
    assert verdicts == [(0, "Claim A: **{glue:text}`st`**")]
    ok = [sl.Slide("Title"), sl.Slide("The answer", "- Claim A: **holds**; estimate 0.12.")]
    sl.check_answer_slides("chap", ok, verdicts, glue)
    bare = [sl.Slide("Title"), sl.Slide("The answer", "- Claim A:")]
    with pytest.raises(sl.SlideError, match=r"chap: slide 2 \('The answer'\) states 'Claim A:' with nothing"):
        sl.check_answer_slides("chap", bare, verdicts, glue)
    other = [sl.Slide("Title"), sl.Slide("The answer", "- Claim A: estimate 0.12, see the notes.")]
    with pytest.raises(sl.SlideError, match=r"chap: slide 2 \('The answer'\) does not state the verdict 'Claim A: \*\*holds\*\*'"):
        sl.check_answer_slides("chap", other, verdicts, glue)
    with pytest.raises(sl.SlideError, match="no execution of the chapter glued"):
        sl.check_answer_slides("chap", ok, verdicts, {})


@pytest.fixture
def deck_tools(monkeypatch, tmp_path):
    for name in ("reveal", "mathjax"):
        (tmp_path / "vendor-src" / name).mkdir(parents=True)
    monkeypatch.setattr(sl, "vendor_reveal", lambda: tmp_path / "vendor-src" / "reveal")
    monkeypatch.setattr(sl, "_mathjax_dir", lambda: tmp_path / "vendor-src" / "mathjax")


def test_slides_of_a_make_test_build_state_the_verdict_and_show_the_figures(book, deck_tools):
    _make_test_build(book, cache=True)
    [deck] = sl.build_slides(book, book / "slides")
    page = deck.read_text()
    answer = page[page.index("<h2>The answer</h2>"):].split("</section>")[0]
    assert "Claim A: <strong>holds</strong>; estimate 0.12." in answer
    assert page.count("<img ") == 2 and f"base64,{PNG}" in page


def test_a_deck_that_shows_none_of_its_chapters_figures_is_refused(book, deck_tools):
    build = _make_test_build(book, cache=False)
    # the figure sits where no slide is made (the closing summary), and nothing is glued as a figure
    text = CHAPTER.replace("## A section", "## What to remember").replace(
        "```{glue:figure} fig_x\n:name: fig-x\n\nThe caption of the figure.\n```\n", "")
    (book / "book" / "chap.md").write_text(text)
    import jupytext

    ex = _executed()
    fresh = jupytext.reads(text, fmt="md:myst")
    for mine, done in zip([c for c in fresh.cells if c.cell_type == "code"], [c for c in ex.cells if c.cell_type == "code"]):
        mine.outputs = done.outputs
    nbformat.write(fresh, build / "executed" / "book" / "chap.ipynb")
    (build / "jupyter_execute").rename(build / "old_copy")       # its code no longer matches anyway
    with pytest.raises(sl.SlideError, match=r"chap: the chapter shows 1 figure\(s\) and its deck \(chap\.slides\.html\) none"):
        sl.build_slides(book, book / "slides")


def test_slides_need_an_execution_with_outputs(book, deck_tools):
    je = book / "_build" / "jupyter_execute" / "book"
    je.mkdir(parents=True)
    nbformat.write(_executed(with_outputs=False), je / "chap.ipynb")
    with pytest.raises(FileNotFoundError, match="book/chap: no execution of it with outputs"):
        sl.build_slides(book, book / "slides")


def test_a_re_run_shows_fresh_values_where_the_notebook_carries_the_builds(book):
    """Run in a kernel, a chapter's glue cell after the set-up's switch shows the line the
    notebook carries from the build, with the value of this run."""
    from nbclient import NotebookClient

    build = _make_test_build(book, cache=False)
    found = exs.find(nbgen.book_chapters(book), exs.build_sources(build))["book/chap"]
    written = nbgen.chapter_notebook(nbgen.book_chapters(book)[0], REPO, "v1", executed=found)
    glue_cell = next(c for c in written.cells if c.cell_type == "code" and "glue_text(" in c.source)
    carried = [o["data"]["text/plain"] for o in glue_cell.outputs]
    run = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from companion.book import paste\npaste.show_values()"),
        nbformat.v4.new_code_cell(glue_cell.source.replace("0.123456", "0.5"))])   # a re-run computing anew
    run.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(run, timeout=120, kernel_name="python3").execute()
    shown = [o for o in run.cells[1].outputs if "companion_glued" in o.get("metadata", {})]
    assert carried[:2] == ["verdict = holds", "ratio = 0.123456"]
    assert [o["data"]["text/plain"] for o in shown] == ["verdict = holds", "ratio = 0.5"]
    assert [o["metadata"]["companion_glued"] for o in shown] == ["verdict", "ratio"]
    # the values are still glued for the book (myst-nb's records, not shown)
    assert {o["metadata"]["scrapbook"]["name"] for o in run.cells[1].outputs if "scrapbook" in o["metadata"]} == {
        "verdict", "ratio"}


def test_the_book_build_reads_its_cache_its_copies_and_nbvals_executions(tmp_path):
    """The Sphinx extension hands the notebook writer the folders of the build it runs in: the
    main book's relative cache path, and the student edition's cache (the instructor's)."""
    from types import SimpleNamespace as App

    from companion.book.sphinxext import _execution_sources

    book = App(outdir=str(tmp_path / "_build" / "html"), srcdir=str(tmp_path),
               config=App(nb_execution_cache_path="_build/.jupyter_cache"))
    build = (tmp_path / "_build").resolve()
    assert _execution_sources(book) == [build / ".jupyter_cache", build / "jupyter_execute", build / "executed"]
    student = App(outdir=str(tmp_path / "_build" / "student" / "work" / "_build" / "html"),
                  srcdir=str(tmp_path / "_build" / "student" / "src"),
                  config=App(nb_execution_cache_path=str(build / ".jupyter_cache")))
    got = _execution_sources(student)
    assert got[:3] == [build / ".jupyter_cache", build / "student" / "work" / "_build" / "jupyter_execute",
                       build / "executed"]
