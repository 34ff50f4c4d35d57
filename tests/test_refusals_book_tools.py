"""The book's build tools: the student edition (``--out`` never deletes what it did not
make), the book's execution cache (``book_cache``), the slides and their glue stores, the
explorer's embedded data, ``chapter_times`` and the release-changes cache; hostile or
careless arguments and files are refused in one line naming them (or read correctly), and
nothing the user made is changed."""

from __future__ import annotations

import json
import os

import pytest


# ---------------------------------------------------------------- the student edition


def _fake_book(root):
    (root / "_build" / ".jupyter_cache").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "keep.py").write_text("A = 1\n")
    (root / "book").mkdir()
    (root / "book" / "ch.md").write_text("# A chapter\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/ch\n")
    (root / "_config.yml").write_text("title: A book\n")
    return root


def test_student_out_at_the_repository_root_deletes_nothing(tmp_path, capsys):
    from companion.book.editions.student import main

    root = _fake_book(tmp_path)
    assert main(["--root", str(root), "--out", str(root)]) == 2
    assert "holds the book itself" in capsys.readouterr().err
    assert (root / "src" / "keep.py").read_text() == "A = 1\n" and (root / "book" / "ch.md").exists()


def test_student_out_that_holds_other_files_is_refused_and_kept(tmp_path, capsys):
    from companion.book.editions.student import main

    root = _fake_book(tmp_path / "repo")
    mine = tmp_path / "mine"
    (mine / "src").mkdir(parents=True)
    (mine / "src" / "thesis.tex").write_text("years of work")
    (mine / "notes.txt").write_text("notes")
    assert main(["--root", str(root), "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "was not made by the student build" in err and len(err.strip().splitlines()) == 1
    assert (mine / "src" / "thesis.tex").read_text() == "years of work" and (mine / "notes.txt").exists()


def test_student_sources_replace_only_a_folder_they_made(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = _fake_book(tmp_path / "repo")
    dest = tmp_path / "dest"
    assert prepare_sources(root, dest) == [dest / "book" / "ch.md"]
    assert prepare_sources(root, dest) == [dest / "book" / "ch.md"]     # its own folder: rebuilt
    other = tmp_path / "other"
    other.mkdir()
    (other / "precious.txt").write_text("keep")
    with pytest.raises(ValueError, match="not made by the student build"):
        prepare_sources(root, other)
    assert (other / "precious.txt").read_text() == "keep"


@pytest.mark.parametrize("name", ["work", "html"])
def test_student_out_holding_only_a_name_the_build_uses_is_not_deleted(tmp_path, capsys, name):
    """A folder whose only entry is a user's own ``work/`` (or ``html/``) used to pass as the
    build's and was deleted before jupyter-book started."""
    from companion.book.editions.student import main

    root = _fake_book(tmp_path / "repo")
    mine = tmp_path / "mine"
    (mine / name).mkdir(parents=True)
    (mine / name / "thesis.tex").write_text("years of work")
    assert main(["--root", str(root), "--out", str(mine)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "was not made by the student build" in err[0]
    assert (mine / name / "thesis.tex").read_text() == "years of work"


def test_a_users_folder_inside_the_builds_own_out_is_not_replaced(tmp_path, capsys):
    from companion.book.editions.student import _mark, main

    root = _fake_book(tmp_path / "repo")
    out = tmp_path / "out"
    _mark(out)                                   # the build's own folder ...
    (out / "html").mkdir()
    (out / "html" / "index.html").write_text("my own site")   # ... holding a user's html/
    assert main(["--root", str(root), "--out", str(out)]) == 2
    assert "html" in capsys.readouterr().err
    assert (out / "html" / "index.html").read_text() == "my own site"



# ---------------------------------------------------------------- the book cache


def test_book_cache_prepare_refuses_a_folder_without_its_key_and_deletes_nothing(tmp_path, capsys):
    from companion.book.site import book_cache
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "report.md").write_text("mine")
    assert book_cache.main(["prepare", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "not an execution cache" in err and len(err.strip().splitlines()) == 1
    assert (folder / "report.md").read_text() == "mine"
    with pytest.raises(ValueError, match="not an execution cache"):
        book_cache.prepare(folder, tmp_path)


def test_book_cache_prepare_still_empties_a_cache_jupyter_cache_made(tmp_path):
    from companion.book.site import book_cache
    (tmp_path / "src").mkdir()
    cache = tmp_path / "cache"
    (cache / "executed" / "abc").mkdir(parents=True)
    (cache / "global.db").write_bytes(b"")
    (cache / "__version__.txt").write_text("1.0")
    assert book_cache.prepare(cache, tmp_path) is False
    assert sorted(p.name for p in cache.iterdir()) == ["companion-key.json"]


@pytest.mark.parametrize("argv", [["prepare", "a", "b"], ["seed", "missing-folder", "cache"]])
def test_book_cache_odd_arguments_are_refused_before_anything_is_made(tmp_path, monkeypatch, capsys, argv):
    from companion.book.site import book_cache
    monkeypatch.chdir(tmp_path)
    assert book_cache.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv", [["prepare", "--help"], ["prepare", "-h"], ["seed", "-x", "cache"]])
def test_book_cache_options_are_not_taken_for_folders(tmp_path, monkeypatch, capsys, argv):
    from companion.book.site import book_cache

    monkeypatch.chdir(tmp_path)
    code = book_cache.main(argv)
    err = capsys.readouterr()
    assert "usage" in (err.out + err.err) and code in (0, 2)
    assert os.listdir(tmp_path) == []


def test_book_cache_seed_with_a_malformed_chapter_record_is_one_line(tmp_path, monkeypatch, capsys):
    from companion.book.site import book_cache

    monkeypatch.setattr(book_cache, "prepare", lambda cache, root=None: True)
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / "ch.ipynb").write_text("{}")
    (executed / "ch.json").write_text("[1, 2]")
    assert book_cache.main(["seed", str(executed), str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "ch.json" in err



# ---------------------------------------------------------------- slides


def test_slides_into_an_out_that_is_a_file_is_one_line_and_keeps_the_file(tmp_path, capsys):
    from companion.book.editions import slides

    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    out = tmp_path / "notes.txt"
    out.write_text("mine")
    assert slides.main(["--root", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "--out" in err
    assert out.read_text() == "mine"


def test_slides_of_a_root_that_is_not_a_book_is_one_line(tmp_path, capsys):
    from companion.book.editions import slides

    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    assert slides.main(["--root", str(tmp_path), "--out", str(tmp_path / "deck")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "_toc.yml" in err
    assert not (tmp_path / "deck").exists()


def test_slides_of_a_book_whose_toc_is_not_yaml_is_one_line(tmp_path, capsys):
    from companion.book.editions import slides

    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: [intro\n")
    assert slides.main(["--root", str(tmp_path), "--out", str(tmp_path / "deck")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "not valid YAML" in err
    assert not (tmp_path / "deck").exists()


def test_slides_with_an_empty_out_writes_nothing_into_the_current_folder(tmp_path, monkeypatch, capsys):
    from companion.book.editions import slides

    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        slides.main(["--root", str(tmp_path), "--out", ""])
    assert exc.value.code == 2 and "--out is empty" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["_build"]


@pytest.mark.parametrize("store, words", [
    ('{"x": {"data": {"text/plain": "1', "cut off or not JSON"),
    (b"\xff\xfe{}", "cut off or not JSON"),
    ('["x"]', "not a glue store"),
    ('{"x": "0.5"}', "not a glue store"),
    ('{"x": {"data": {"image/png": 7}}}', "not a glue store"),
])
def test_a_cut_off_glue_store_is_refused_naming_it(tmp_path, store, words):
    from companion.base.errors import CompanionError
    from companion.book.editions.slides import _read_glue

    path = tmp_path / "chapter.glue.json"
    path.write_bytes(store if isinstance(store, bytes) else store.encode())
    with pytest.raises(CompanionError, match=words) as err:
        _read_glue(path)
    assert str(path) in str(err.value) and "make book" in str(err.value)



# ---------------------------------------------------------------- the explorer's embedded data


def test_data_embedded_in_the_explorer_cannot_close_its_script(tmp_path):
    from companion.book.explorer import embed_json

    hostile = {"key": "</script><script>alert(1)</script>", "line": "\u2028", "amp": "<!--"}
    text = embed_json(hostile)
    assert "</script" not in text.lower() and "<!--" not in text and "\u2028" not in text
    assert json.loads(text) == hostile           # still the same data for the page's script



# ---------------------------------------------------------------- chapter_times


@pytest.mark.parametrize("budget", ["nan", "1e300", "inf"])
def test_chapter_times_refuses_a_budget_that_is_not_a_sane_number_of_seconds(monkeypatch, capsys, budget):
    from companion.book.budgets import chapter_times
    def never(*a, **k):
        raise AssertionError("a chapter was started")

    monkeypatch.setattr(chapter_times, "time_chapters", never)
    monkeypatch.setattr(chapter_times, "time_chapter", never)
    with pytest.raises(SystemExit) as exc:
        chapter_times.main(["--budget", budget, chapter_times.book_chapters()[0]])
    assert exc.value.code == 2 and "--budget" in capsys.readouterr().err


def _no_chapter_may_run(monkeypatch):
    from companion.book.budgets import chapter_times

    def never(*a, **k):
        raise AssertionError("a chapter was started")

    monkeypatch.setattr(chapter_times, "time_chapters", never)
    monkeypatch.setattr(chapter_times, "time_chapter", never)
    return chapter_times


@pytest.mark.parametrize("kind, words", [
    ("folder", "is a folder"),
    ("foreign", "not a CSV of chapter times (no column chapter"),
    ("binary", "not a CSV of chapter times"),
    ("under a file", "lies under a file"),
])
def test_chapter_times_out_that_cannot_be_recorded_into_is_refused_before_a_chapter_runs(
        tmp_path, monkeypatch, capsys, kind, words):
    chapter_times = _no_chapter_may_run(monkeypatch)
    out = tmp_path / "times.csv"
    if kind == "folder":
        out.mkdir()
    elif kind == "foreign":
        out.write_text("name,grade\nada,1\n")
    elif kind == "binary":
        out.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    else:
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "times.csv"
    before = out.read_bytes() if out.is_file() else None
    assert chapter_times.main([chapter_times.book_chapters()[0], "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and str(out) in err[0], err
    assert before is None or out.read_bytes() == before


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), -1.0, "soon"])
def test_time_chapter_refuses_a_budget_that_is_not_a_number_of_seconds(tmp_path, budget):
    from companion.base.errors import CompanionError
    from companion.book.budgets.chapter_times import time_chapter

    (tmp_path / "ch.md").write_text("# ch\n")
    with pytest.raises(CompanionError, match="budget"):
        time_chapter("ch", "ci", budget, book=tmp_path)


def test_chapter_times_with_a_foreign_file_among_the_recorded_is_one_line(tmp_path, monkeypatch, capsys):
    chapter_times = _no_chapter_may_run(monkeypatch)
    (tmp_path / "odd.csv").write_text("a,b\n1,2\n")
    import functools
    monkeypatch.setattr(chapter_times, "load_times", functools.partial(chapter_times.load_times, tmp_path))
    assert chapter_times.main([chapter_times.book_chapters()[0], "--recorded-under", "60"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "odd.csv" in err[0], err



# ---------------------------------------------------------------- the release-changes cache


@pytest.mark.parametrize("damage", ["cut off", "edited status", "a list of old", "not rows", "empty"])
def test_a_cut_off_or_edited_release_changes_cache_is_computed_again_naming_it(tmp_path, monkeypatch, damage):
    import json
    import warnings

    import pandas as pd

    from companion.book.site import book_cache, changes

    calls = []
    truth = [{"key": "a", "claim": "A", "kind": "empirical", "status": "holds", "status_first": "inconclusive"}]
    monkeypatch.setattr(changes, "verdicts_with_first", lambda: calls.append(1) or pd.DataFrame(truth))
    monkeypatch.setattr(book_cache, "package_key", lambda root=None: {"sha256": "damaged"})
    path = changes.store_verdicts(pd.DataFrame(truth), tmp_path)
    text = path.read_text()
    path.write_text({"cut off": text[: len(text) // 2],
                     "edited status": text.replace('"holds"', '"fails"'),
                     "a list of old": json.dumps([dict(truth[0], status="fails")]),
                     "not rows": json.dumps({"verdicts": [1, 2]}),
                     "empty": ""}[damage])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert changes.current_verdicts(tmp_path) == truth
    assert calls == [1] and any(path.name in str(w.message) for w in seen)
    assert changes.current_verdicts(tmp_path) == truth and calls == [1]      # the file was replaced
