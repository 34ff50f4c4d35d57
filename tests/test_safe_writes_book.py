"""The student edition and the notebooks write through the one safe write too (issue 74, one
safe-write helper): a symbolic link at a name they write is refused, never followed out of the
output folder (the student edition's mark in a folder an earlier build made was written
through a link to wherever it pointed), and a FIFO there is refused without being opened."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from companion.base.errors import CompanionError
from test_safe_writes import _plain_writes

SRC = Path(__file__).resolve().parents[1] / "src" / "companion"


@pytest.mark.parametrize("module", ["book/editions/student.py", "book/editions/notebooks.py", "book/editions/solutions.py"])
def test_the_book_s_writers_use_only_the_safe_write(module):
    text = (SRC / module).read_text(encoding="utf-8")
    assert not _plain_writes(SRC / module) and "nbformat.write(" not in text


def _fifo_opened_within(path: Path, action, seconds: float = 10.0):
    """Run ``action``; fail (instead of hanging) if it blocks on the FIFO at ``path``."""
    outcome = {}

    def run():
        try:
            action()
            outcome["ok"] = True
        except BaseException as err:   # noqa: BLE001 - reported below
            outcome["error"] = err

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():   # unblock the writer by opening the other end, then fail
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail(f"blocked on the FIFO at {path}")
    return outcome


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_the_student_mark_is_never_written_through_a_link_or_into_a_fifo(tmp_path, kind):
    from companion.book.editions import student

    folder, victim = tmp_path / "out", tmp_path / "elsewhere.txt"
    folder.mkdir()
    victim.write_text("the user's file\n")
    mark = folder / student._MARK
    if kind == "link":
        mark.symlink_to(victim)
    else:
        os.mkfifo(mark)
    outcome = _fifo_opened_within(mark, lambda: student._mark(folder))
    assert isinstance(outcome.get("error"), CompanionError), outcome
    assert "\n" not in str(outcome["error"]) and str(mark) in str(outcome["error"])
    assert victim.read_text() == "the user's file\n"


def test_a_folder_whose_mark_is_a_link_is_not_taken_for_one_the_build_made(tmp_path):
    from companion.book.editions import student

    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "mine.txt").write_text("keep\n")
    (tmp_path / "marker").write_text("x")
    (folder / student._MARK).symlink_to(tmp_path / "marker")
    with pytest.raises(ValueError, match="not empty and was not made by the student build"):
        student._check_ours(folder)
    assert (folder / "mine.txt").read_text() == "keep\n"


def test_the_mark_of_a_folder_the_build_made_is_replaced(tmp_path):
    from companion.book.editions import student

    folder = tmp_path / "out"
    student._mark(folder)
    student._mark(folder)
    mark = folder / student._MARK
    assert mark.is_file() and not mark.is_symlink() and "made by python -m companion.book.editions.student" in mark.read_text()
    student._check_ours(folder)   # ours: no error


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_student_page_is_never_written_through_a_link_or_into_a_fifo(tmp_path, monkeypatch, kind):
    """prepare_sources writes each page with the safe write: made to meet a link or FIFO at a
    page's name (as a race with another process could), it refuses."""
    from companion.book.editions import student

    victim = tmp_path / "elsewhere.md"
    victim.write_text("the user's page\n")
    target = tmp_path / "page.md"
    if kind == "link":
        target.symlink_to(victim)
    else:
        os.mkfifo(target)
    outcome = _fifo_opened_within(target, lambda: student.write_text_atomic("x", target, what="student page"))
    assert isinstance(outcome.get("error"), CompanionError), outcome
    assert victim.read_text() == "the user's page\n"
