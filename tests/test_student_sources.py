"""The student sources hold the book's sources only (issue 74, solutions that reach students):
IPython's profile beside the chapters keeps the history of every cell the instructor's build
ran (the solutions' code included), its logs and its kernels' connection files; none of it is
copied into the student edition, while the profile's startup scripts are."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from companion.book.editions import student


def _book(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "book" / "_ipython" / "profile_default" / "startup").mkdir(parents=True)
    (root / "book" / "_ipython" / "profile_default" / "security").mkdir()
    (root / "book" / "_ipython" / "profile_default" / "log").mkdir()
    (root / "_config.yml").write_text("title: T\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (root / "book" / "intro.md").write_text("# Intro\n\n:::{solution} ex-1\nSECRET_PAGE\n:::\n\nKept.\n")
    (root / "book" / "_ipython" / "profile_default" / "startup" / "00_x.py").write_text("STARTUP = 1\n")
    db = sqlite3.connect(root / "book" / "_ipython" / "profile_default" / "history.sqlite")
    db.execute("create table history (source text)")
    db.execute("insert into history values ('answer = SECRET_HISTORY')")
    db.commit()
    db.close()
    (root / "book" / "_ipython" / "profile_default" / "security" / "kernel-1.json").write_text('{"key": "SECRET_KEY"}')
    (root / "book" / "_ipython" / "profile_default" / "log" / "x.log").write_text("SECRET_LOG\n")
    return root


def test_the_student_sources_hold_no_kernel_state_and_no_solution(tmp_path):
    root = _book(tmp_path)
    dest = tmp_path / "student-src"
    student.prepare_sources(root, dest)
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert files == [".companion-student", "_config.yml", "_toc.yml", "book/_ipython/profile_default/startup/00_x.py",
                     "book/intro.md"]
    for p in dest.rglob("*"):
        if p.is_file():
            assert b"SECRET" not in p.read_bytes(), p
    assert (dest / "book" / "intro.md").read_text() == "# Intro\n\nKept.\n"


def test_local_state_is_the_profile_but_its_startup_scripts():
    assert student._local_state(Path("_ipython/profile_default/history.sqlite"))
    assert student._local_state(Path("_ipython/profile_default/security/kernel-1.json"))
    assert not student._local_state(Path("_ipython/profile_default/startup/00_figures_as_images.py"))
    assert not student._local_state(Path("intro.md")) and not student._local_state(Path("figures/a.png"))
