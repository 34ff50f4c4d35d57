"""The student edition: the book with no solution anywhere, and notebooks with checked exercises.

::

    python -m companion.book.editions.student          # after `make book`: -> _build/student/{html,notebooks}

Three things carry a chapter's solutions in the instructor's build, and the theme's options
to hide solutions clean only the first: the HTML pages, the page sources offered for
download (``_sources/``), and the notebooks (the executed ones and the Colab ones). So the
student edition is built from *student sources*: a copy of the book in which every
``{solution}`` directive is removed before Sphinx ever reads it. Its code cells are the
instructor's, unchanged, so the build takes every chapter's outputs from the instructor
build's execution cache (jupyter-cache matches a notebook by its code) and executes
nothing again.

Its notebooks (``_build/student/notebooks/<chapter>.ipynb``, and the copies the site links
to) have, after each exercise that asks for code, a code cell with the exercise's starter
code and its ``check(...)`` call (:mod:`companion.book.teaching.exercises`), which passes a correct answer
and fails a wrong one with a hint, offline.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ...base.outputs import write_text_atomic
from .solutions import split_check_cells, strip_solutions

__all__ = ["STUDENT_BRANCH", "INSTRUCTOR_PAGES", "strip_solutions", "split_check_cells", "prepare_sources",
           "build_student", "main"]

STUDENT_BRANCH = "student-notebooks"
"""Branch that holds the student notebooks (the student site's Colab links open them there)."""

def _read_config(path: Path) -> str:
    """The text of the book's ``_config.yml`` or ``_toc.yml``; one that is no regular file (a
    FIFO would block the build) is refused in one line naming it."""
    from ...base.paths import regular_file

    regular_file(path, "the book's configuration")
    return path.read_text(encoding="utf-8")


#: the theme's buttons that open the repository, whose pages hold the instructor's sources
#: (solutions included): off in the student edition, however the book turns them on
_SOURCE_BUTTONS = ("use_repository_button", "use_edit_page_button", "use_issues_button", "use_source_button")
#: launch buttons that start the repository's own sources (Binder, a JupyterHub, Deepnote, Thebe
#: through Binder); Colab's opens the student notebooks (companion.book.sphinxext), so it stays
_SOURCE_LAUNCHERS = ("binderhub_url", "jupyterhub_url", "deepnote_url", "thebe")


def _section(cfg: dict, key: str) -> dict:
    """``cfg[key]`` as a mapping to fill: one left empty in the file (``html:``) is a new one."""
    if not isinstance(cfg.get(key), dict):
        cfg[key] = {}
    return cfg[key]


def _student_config(root: Path, cache: Path) -> str:
    """The book's ``_config.yml`` for the student edition (same book, another edition); no
    button of its pages opens the instructor's sources in the repository."""
    import yaml

    cfg = yaml.safe_load(_read_config(root / "_config.yml"))
    cfg = cfg if isinstance(cfg, dict) else {}
    title = cfg.get("title")
    cfg["title"] = f"{title} (student edition)" if title not in (None, "") else "Student edition"
    _section(cfg, "execute")["cache"] = str(cache)
    sphinx_cfg = _section(_section(cfg, "sphinx"), "config")
    sphinx_cfg["companion_notebook_branch"] = STUDENT_BRANCH
    sphinx_cfg["companion_student_edition"] = True
    html = _section(cfg, "html")
    for button in _SOURCE_BUTTONS[:3]:   # the repository holds the instructor's sources
        html[button] = False
    if "html_theme_options" in sphinx_cfg:   # the theme's options, set directly, win over html:
        theme = _section(sphinx_cfg, "html_theme_options")
        for button in _SOURCE_BUTTONS:
            if button in theme:
                theme[button] = False
    launch = cfg.get("launch_buttons")
    if isinstance(launch, dict):
        for key in _SOURCE_LAUNCHERS:
            launch.pop(key, None)
    text = yaml.safe_dump(cfg, sort_keys=False)
    if _SOLUTION_MARK.search(text.encode("utf-8")):   # a substitution (myst_substitutions) pastes it into pages
        raise ValueError(f"{root / '_config.yml'} holds a solution directive (in a substitution), which the student "
                         "edition cannot remove; write the solution in the page it belongs to")
    return text


_MARK = ".companion-student"
"""A file in every folder this module makes; only such a folder is ever emptied by it.  It
names the folder's resolved path and its identity on the disk (device and inode, which a
folder keeps while it exists and a new folder never shares with a live one): a mark copied
from another folder names another path or identity, and a hand-made one would have to read
the folder's inode to look like the build's.  Nothing is recorded elsewhere, so emptying the
package's cache does not make the build disown its own folder."""

_MARK_HEAD = "made by python -m companion.book.editions.student; replaced by its next build"


def _identity(folder: Path) -> str:
    st = folder.stat()
    return f"{st.st_dev}:{st.st_ino}"


def _read_mark(mark: Path) -> dict:
    """The ``folder`` and ``identity`` lines of a mark (empty when it is not a small plain file)."""
    try:
        if mark.is_symlink() or not mark.is_file() or mark.stat().st_size > 4096:
            return {}
        lines = mark.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    return dict(line.split(": ", 1) for line in lines[1:] if ": " in line)


def _check_ours(folder: Path, entries: frozenset | None = None) -> None:
    """Refuse (``ValueError``, one line) a ``folder`` this module did not make: only a new
    folder, an empty one, or one holding this module's mark for this very folder (its
    resolved path and its identity on the disk) is ever emptied or replaced.  (A folder that
    merely holds names a build also writes, such as a user's own ``work/``, or a mark copied
    from elsewhere or written by hand, is not ours.)"""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ValueError(f"{folder} is not a folder; give a new or empty folder for the student edition")
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    mark = folder / _MARK   # the mark itself, never a link to a file elsewhere
    if not (mark.is_file() and not mark.is_symlink()):
        raise ValueError(f"{folder} is not empty and was not made by the student build, so "
                         "nothing in it is replaced; give a new or empty folder (default "
                         "<root>/_build/student)")
    said = _read_mark(mark)
    if said.get("folder") != str(folder.resolve()) or said.get("identity") != _identity(folder):
        if not said:
            raise ValueError(f"{folder} holds a {_MARK} file that names no folder (a hand-made mark, "
                             "or one an earlier build wrote before marks carried it), so nothing in it is "
                             f"replaced; if it is an earlier student build, remove it yourself (rm -r {folder}), "
                             "else give a new or empty folder")
        raise ValueError(f"{folder} holds a {_MARK} file that the student build did not write for this folder "
                         "(copied from elsewhere or made by hand), so nothing in it is replaced; give a new or "
                         "empty folder, or empty this one yourself")


def _mark(folder: Path) -> None:
    """Make ``folder`` and write its mark: the folder's resolved path and its identity."""
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(f"{_MARK_HEAD}\nfolder: {folder.resolve()}\nidentity: {_identity(folder)}\n",
                      folder / _MARK, what="student edition's mark")


#: pages for the instructor only (the course plan and the teaching notes): not in the student edition
INSTRUCTOR_PAGES = ("book/teaching",)


def _student_toc(root: Path) -> str:
    """The book's ``_toc.yml`` without :data:`INSTRUCTOR_PAGES`, however an entry names them
    (``book/teaching``, ``book/teaching.md``, ``./book/teaching``) and wherever it stands (a
    part's chapter, a chapter, a section); a part left empty is dropped, and a table of contents
    of chapters gets no ``parts`` (the reader refuses one that holds both)."""
    import yaml

    from ...base.toc import strip_suffix

    toc = yaml.safe_load(_read_config(root / "_toc.yml"))
    toc = toc if isinstance(toc, dict) else {}

    def instructor(entry) -> bool:
        name = entry.get("file") if isinstance(entry, dict) else None
        return isinstance(name, str) and strip_suffix(name.strip().removeprefix("./")) in INSTRUCTOR_PAGES

    def keep(entries):
        kept = []
        for e in entries or []:
            if instructor(e):
                continue
            if isinstance(e, dict) and isinstance(e.get("sections"), list):
                e["sections"] = keep(e["sections"])
                if not e["sections"]:
                    del e["sections"]
            kept.append(e)
        return kept

    if isinstance(toc.get("parts"), list):
        for part in toc["parts"]:
            if isinstance(part, dict) and "chapters" in part:
                part["chapters"] = keep(part["chapters"])
        toc["parts"] = [p for p in toc["parts"] if not isinstance(p, dict) or p.get("chapters", True)]
    if isinstance(toc.get("chapters"), list):
        toc["chapters"] = keep(toc["chapters"])
    return yaml.safe_dump(toc, sort_keys=False)


def _local_state(rel: Path) -> bool:
    """Whether ``rel`` (a path under ``book/``) is a kernel's local state, not a source: IPython's
    profile beside the chapters keeps the history of every cell the instructor's build ran
    (solutions included), its logs and its kernels' connection secrets; only its ``startup/``
    scripts are the book's."""
    parts = rel.parts
    return len(parts) > 1 and parts[0] == "_ipython" and not (len(parts) > 2 and parts[2] == "startup")


def prepare_sources(root: Path, dest: Path) -> list[Path]:
    """Write the student sources of the book at ``root`` into ``dest``; return the pages.

    ``dest`` must be new, empty, or a folder an earlier call made (it is then emptied)."""
    root, dest = Path(root).resolve(), Path(dest)
    where = dest.resolve()
    if where == root or where.is_relative_to(root / "book") or root.is_relative_to(where):
        # the copy would land among the pages it copies, and be copied again, folder in folder
        raise ValueError(f"{dest} lies in the book's pages or holds the book itself; give a folder outside "
                         f"{root / 'book'}, such as {root / '_build' / 'student'}")
    _check_ours(dest)
    if dest.exists():
        shutil.rmtree(dest)
    _mark(dest)
    cache = root / "_build" / ".jupyter_cache"
    write_text_atomic(_student_config(root, cache), dest / "_config.yml", what="student configuration")
    write_text_atomic(_student_toc(root), dest / "_toc.yml", what="student table of contents")
    pages = []
    for src in (root / "book").rglob("*"):
        if src.is_dir() or "__pycache__" in src.parts or _local_state(src.relative_to(root / "book")):
            continue
        if src.suffix == ".md" and src.relative_to(root).with_suffix("").as_posix() in INSTRUCTOR_PAGES:
            continue
        _check_source(src, root)
        target = dest / src.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.suffix == ".md":
            from ..site.chapters import read_page

            read_page(src)   # a page that is not UTF-8 is refused, naming it
            write_text_atomic(strip_solutions(src.read_text(encoding="utf-8")), target, what="student page")
            pages.append(target)
        else:
            _no_solution_inside(src)
            shutil.copy2(src, target)
    return pages


#: a solution directive, MyST (``{solution}``, ``{solution-start}``, with a domain) or RST (``.. solution::``)
_SOLUTION_MARK = re.compile(rb"\{\s*(?:[\w.-]+:)?solution(?:-start|-end)?\s*\}|^\s*\.\.\s+(?:[\w.-]+:)?"
                            rb"solution(?:-start|-end)?[ \t]*::", re.I | re.M)


def _no_solution_inside(src: Path) -> None:
    """Refuse (``ValueError``, one line) a file other than a ``.md`` page that holds a solution
    directive: only the pages are stripped of solutions, and a notebook page, an included text
    or an RST page would reach the student sources whole, solution and all."""
    data = src.read_bytes()
    if (_SOLUTION_MARK.search(data) or _SOLUTION_MARK.search(_json_text(data))
            or any(_SOLUTION_MARK.search(text) for text in _wide_texts(data))):
        raise ValueError(f"{src} holds a solution directive, but only the book's .md pages are stripped of "
                         "solutions for the student edition; write it as a MyST .md page, or move the "
                         "solution into one.")


def _wide_texts(data: bytes) -> list[bytes]:
    """``data`` read as UTF-16 and UTF-32 (either byte order), where it holds a zero byte as
    those encodings of Latin text do: an ``{include}`` with ``:encoding: utf-16`` reads such a
    file, whose bytes spell ``{solution}`` with a zero byte between its letters."""
    if b"\x00" not in data:
        return []
    return [data.decode(enc, errors="ignore").encode("utf-8", "surrogatepass")
            for enc in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")]


def _json_text(data: bytes) -> bytes:
    """Every string of ``data`` read as JSON (a notebook's cells), decoded: a JSON file may
    write ``{solution}`` as ``\\u007bsolution\\u007d``, which its raw bytes do not show."""
    import json

    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return b""
    out, todo = [], [doc]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            todo += item
    return "\n".join(out).encode("utf-8", "surrogatepass")


def _check_source(src: Path, root: Path) -> None:
    """Refuse (``ValueError``, one line) a file under ``book/`` that is not a plain file of the
    book: a FIFO, socket or device (copying it would block or fail mid-build), or a link to a
    file outside the repository (its contents would be published on the student site)."""
    import stat

    if src.is_symlink() and not src.resolve().is_relative_to(root):
        raise ValueError(f"{src} is a link to {src.resolve()}, outside the book's repository, whose contents the "
                         "student site would publish; copy the file into the book, or remove the link.")
    try:
        mode = src.stat().st_mode
    except OSError as err:
        raise ValueError(f"{src} cannot be read ({err.strerror or err}); fix or remove it.") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{src} is not a regular file (a FIFO, socket or device), which the student edition "
                         "cannot copy; remove it from book/.")


def build_student(root: Path | str = ".", out: Path | str | None = None, jupyter_book: str | None = None) -> Path:
    """Build the student edition of the book at ``root`` into ``out`` (``_build/student``).

    Needs the instructor build's execution cache (``make book`` first): a chapter found
    there is not executed again.
    """
    from . import notebooks as nbgen

    root = Path(root).resolve()
    out = Path(out) if out is not None else root / "_build" / "student"
    if not (root / "_build" / ".jupyter_cache").is_dir():
        raise FileNotFoundError(f"no execution cache under {root / '_build'}; build the book first (make book), "
                                "so that the student edition reuses its executed chapters")
    resolved = out.resolve()
    if resolved == root or resolved in root.parents or resolved.is_relative_to(root / "book"):
        raise ValueError(f"--out {out} holds the book itself; give a folder of its own, such as "
                         f"{root / '_build' / 'student'}")
    src, work, html = out / "src", out / "work", out / "html"
    for folder in (out, src, work, html):   # every one checked before anything is deleted
        _check_ours(folder)
    _mark(out)
    prepare_sources(root, src)
    if work.exists():
        shutil.rmtree(work)
    _mark(work)
    jb = jupyter_book or str(Path(sys.executable).with_name("jupyter-book"))
    subprocess.run([jb, "build", str(src), "--path-output", str(work), "--warningiserror", "--keep-going"],
                   check=True, cwd=root)
    if html.exists():
        shutil.rmtree(html)
    shutil.copytree(work / "_build" / "html", html)
    _mark(html)
    shutil.rmtree(work)
    # the instructor build's executions (myst-nb's copies, the cache, nbval's): no solution cell is matched
    from ..site.executions import build_sources

    nbgen.write_notebooks(src, out / "notebooks", student=True, executions=build_sources(root / "_build"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m companion.book.editions.student",
                                 description="Build the student edition (no solutions; checked exercises).")
    ap.add_argument("--root", default=".", help="repository root (holds _toc.yml)")
    ap.add_argument("--out", default=None, help="output folder (default <root>/_build/student)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        out = build_student(args.root, args.out)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as err:
        print(f"error: the student build failed ({err}); see the output above", file=sys.stderr)
        return 1
    print(f"student edition: {out / 'html' / 'index.html'} and {out / 'notebooks'} "
          f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
