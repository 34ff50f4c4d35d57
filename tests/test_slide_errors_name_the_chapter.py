"""A deck that cannot be made names its chapter and the chapter's file (issue 74: "slide
errors that name neither the file nor the chapter"): a glued value the chapter's execution
lacks, or a solution that cannot be removed, is one line starting with the chapter and its
source, from the library and from the command."""

from __future__ import annotations

import pytest

from companion.book.editions import slides as sl
from test_notebook_answers import _make_test_build, book, deck_tools  # noqa: F401 (fixtures)


@pytest.mark.parametrize("error", [KeyError("glued name 'ratio' is not in the chapter's executed outputs"),
                                   ValueError("a {solution} directive opened on line 3 is never closed with ':::'")])
def test_an_error_inside_a_chapter_names_the_chapter_and_its_file(book, deck_tools, monkeypatch, error):  # noqa: F811
    _make_test_build(book, cache=True)

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(sl, "chapter_slides", fail)
    with pytest.raises(sl.SlideError) as err:
        sl.build_slides(book, book / "slides")
    msg = str(err.value)
    assert msg.startswith(f"chap ({book / 'book' / 'chap.md'}): ") and error.args[0] in msg and "\n" not in msg
    assert not (book / "slides" / "chap.slides.html").exists()


def test_the_command_prints_the_chapter_and_its_file_in_one_line(book, deck_tools, monkeypatch, capsys):  # noqa: F811
    """A real error from the solution stripper, raised where the deck is planned."""
    from companion.book.editions.solutions import strip_solutions

    _make_test_build(book, cache=True)
    monkeypatch.setattr(sl, "chapter_slides", lambda *a, **k: strip_solutions(":::{solution} ex-x\nnever closed\n"))
    assert sl.main(["--root", str(book), "--out", str(book / "slides")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: chap ({book / 'book' / 'chap.md'}): a {{solution}} directive opened on line 1 is "
                          "never closed") and err.count("\n") == 1
