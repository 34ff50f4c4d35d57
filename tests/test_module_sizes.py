"""No module of ``companion`` is over 600 lines (issue 75), except the ones listed below,
which are being split; the list can only shrink: a listed module that is now short enough
fails the test until it is taken off."""

from __future__ import annotations

from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "companion"
LIMIT = 600

#: modules over the limit when the rule was introduced, each with why it still is (path under
#: src/companion -> reason); remove a line when its module is split
KNOWN_OVER: dict[str, str] = {}


def lines(path: Path) -> int:
    """Lines as ``wc -l`` counts them (newline characters)."""
    return path.read_bytes().count(b"\n")


def sizes(root: Path = SRC) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): lines(p) for p in sorted(root.rglob("*.py"))
            if "__pycache__" not in p.parts}


def size_problems(found: dict[str, int], known: dict[str, str], limit: int = LIMIT) -> list[str]:
    """Why the sizes break the rule: a module over ``limit`` that is not known, a known one
    now within it (take it off the list), a known one that no longer exists."""
    out = [f"{name} has {n} lines (over {limit}): split it by concern"
           for name, n in found.items() if n > limit and name not in known]
    out += [f"{name} has {found[name]} lines, within {limit}: remove it from KNOWN_OVER"
            for name in known if name in found and found[name] <= limit]
    out += [f"{name} is listed in KNOWN_OVER but does not exist: remove it" for name in known if name not in found]
    return out


def test_no_module_is_over_600_lines_but_the_known_ones():
    problems = size_problems(sizes(), KNOWN_OVER)
    assert not problems, "; ".join(problems)


def test_every_known_exception_says_why():
    assert all(isinstance(why, str) and why.strip() and "\n" not in why for why in KNOWN_OVER.values())


@pytest.mark.parametrize("layout, known, expected, fixed", [
    ({"a.py": 601, "b.py": 600}, {}, "a.py has 601 lines (over 600)", {"a.py": "being split"}),
    ({"a.py": 600}, {"a.py": "being split"}, "a.py has 600 lines, within 600: remove it", {}),
    ({"a.py": 3}, {"gone.py": "being split"}, "gone.py is listed in KNOWN_OVER but does not exist", {}),
])
def test_the_check_fails_naming_the_module(tmp_path, layout, known, expected, fixed):
    for name, n in layout.items():
        (tmp_path / name).write_text("x = 1\n" * n)
    problems = size_problems(sizes(tmp_path), known)
    assert len(problems) == 1 and problems[0].startswith(expected), problems
    assert not size_problems(sizes(tmp_path), fixed)   # listed, or taken off the list: passes


#: the most modules a folder of the book's machinery holds (issue 75: book/ by concern)
BOOK_FOLDER_LIMIT = 10


def book_folder_problems(book: Path, limit: int = BOOK_FOLDER_LIMIT) -> list[str]:
    """Why ``book`` (src/companion/book) breaks its folder rule: a folder (the top included)
    with more than ``limit`` modules besides its ``__init__``, or a package folder whose
    ``__init__`` does not say its purpose in a docstring."""
    import ast

    out = []
    for folder in [book, *sorted(p for p in book.iterdir() if p.is_dir() and (p / "__init__.py").is_file())]:
        modules = [p.name for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > limit:
            out.append(f"{folder.relative_to(book.parent)} holds {len(modules)} modules (at most {limit}): "
                       "split it by concern")
        init = folder / "__init__.py"
        if not (ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "").strip():
            out.append(f"{init.relative_to(book.parent)} has no docstring saying the folder's purpose")
    return out


def test_the_books_machinery_is_in_folders_of_at_most_ten_modules_each_saying_its_purpose():
    problems = book_folder_problems(SRC / "book")
    assert not problems, "; ".join(problems)


def test_the_folder_rule_fails_on_a_crowded_or_unexplained_folder(tmp_path):
    book = tmp_path / "book"
    (book / "crowded").mkdir(parents=True)
    (book / "__init__.py").write_text('"""The book."""\n')
    (book / "crowded" / "__init__.py").write_text("")
    for i in range(11):
        (book / "crowded" / f"m{i}.py").write_text("")
    problems = book_folder_problems(book)
    assert any("crowded holds 11 modules" in p for p in problems), problems
    assert any("crowded/__init__.py has no docstring" in p for p in problems), problems
