"""The build's execution cache is reused only while the chapter and the package are unchanged."""

import json

import jupytext
import nbformat
import pytest

from companion.book.site import book_cache
from companion.book.editions.notebooks import JUPYTEXT_HEADER

CHAPTER = JUPYTEXT_HEADER + """

# A chapter

```{code-cell} ipython3
x = 1 + 1
x
```
"""


@pytest.fixture
def root(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "ch.md").write_text(CHAPTER)
    (tmp_path / "src" / "companion").mkdir(parents=True)
    (tmp_path / "src" / "companion" / "m.py").write_text("A = 1\n")
    (tmp_path / "data").mkdir()
    return tmp_path


def _executed(root, out, source=CHAPTER):
    nb = jupytext.reads(source, fmt="md:myst")
    nb.cells[-1].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"},
                                                   execution_count=1)]
    (out / "book").mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(out / "book" / "ch.ipynb"))
    (out / "book" / "ch.json").write_text(json.dumps({"docname": "book/ch", "execution_seconds": 1.5}))


def _lookup(root, cache):
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook

    nb = read_myst_markdown_notebook((root / "book" / "ch.md").read_text(), path="ch.md")
    try:
        get_cache(str(cache)).match_cache_notebook(nb)
        return True
    except KeyError:
        return False


def test_seeded_execution_is_found_by_the_builds_reader(root, tmp_path):
    cache = tmp_path / "cache"
    _executed(root, tmp_path / "exe")
    assert book_cache.seed(tmp_path / "exe", cache, root) == ["book/ch"]
    assert _lookup(root, cache)


def test_an_edited_chapter_is_not_seeded(root, tmp_path):
    cache = tmp_path / "cache"
    _executed(root, tmp_path / "exe", CHAPTER.replace("1 + 1", "1 + 2"))
    assert book_cache.seed(tmp_path / "exe", cache, root) == []
    assert not _lookup(root, cache)


def test_a_change_in_the_package_or_its_data_empties_the_cache(root, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_RUN_SIZE", "ci")
    cache = tmp_path / "cache"
    _executed(root, tmp_path / "exe")
    book_cache.seed(tmp_path / "exe", cache, root)
    assert book_cache.prepare(cache, root) is True and _lookup(root, cache)
    (root / "data" / "table.csv").write_text("a,b\n1,2\n")  # new data the chapters may read
    assert book_cache.prepare(cache, root) is False
    assert not _lookup(root, cache)
    book_cache.seed(tmp_path / "exe", cache, root)
    (root / "src" / "companion" / "m.py").write_text("A = 2\n")
    assert book_cache.prepare(cache, root) is False
    book_cache.seed(tmp_path / "exe", cache, root)
    monkeypatch.setenv("COMPANION_RUN_SIZE", "gpu")  # another run size: other outputs
    assert book_cache.prepare(cache, root) is False
