"""The book build's execution cache: keyed on each chapter's code AND the package.

The book executes through jupyter-cache (``execute_notebooks: cache`` in ``_config.yml``),
which matches a chapter by its code cells only.  A chapter's outputs also depend on the
package (``src/companion``), its data (``data/``), the kernels' start-up file and the run
size, which jupyter-cache does not see.  :func:`prepare` stores a hash of all of those in
the cache folder and empties the cache when it changes, so a cached output is reused only
when neither the chapter's code nor anything it computes with has changed.

:func:`seed` puts executions made elsewhere into the cache: ``make test`` runs every
chapter under nbval (``--nbval-save-executed``), then seeds the cache with those
executions, so the book build that follows reuses them instead of executing each chapter a
second time.  Only a chapter whose code cells still match is seeded.

    python -m companion.book.site.book_cache prepare [CACHE]
    python -m companion.book.site.book_cache seed EXECUTED_DIR [CACHE]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from ...base.paths import ROOT

__all__ = ["package_key", "prepare", "seed", "DEFAULT_CACHE"]

DEFAULT_CACHE = ROOT / "_build" / ".jupyter_cache"
_KEY_FILE = "companion-key.json"


_KEYED = ("src/companion", "data", "book/_ipython", "pyproject.toml", "_config.yml")


def package_key(root: Path | str = ROOT) -> dict:
    """What chapter outputs depend on besides their code: a content hash
    (:func:`companion.base.tree_digest.tree_digest` of the files git tracks or would track)
    and the run size."""
    import torch

    from ...base.runtime import run_size
    from ...base.tree_digest import tree_digest

    n, digest = tree_digest(Path(root), _KEYED)
    return {"files": n, "sha256": digest, "run_size": run_size(),
            "cuda": bool(torch.cuda.is_available())}


_JUPYTER_CACHE_ENTRIES = frozenset({"global.db", "__version__.txt", "executed", _KEY_FILE})


def _check_is_a_cache(cache: Path) -> None:
    """Refuse to empty ``cache`` unless it is a folder the cache itself made: only its key
    file and what jupyter-cache writes (``global.db`` and its journals, ``__version__.txt``,
    ``executed/``), none of them a link, or an empty folder.  A key file beside anything
    else (a user's folder that happens to hold one) is refused: nothing else is ever deleted."""
    if not cache.exists() and not cache.is_symlink():
        return
    if cache.is_symlink() or not cache.is_dir():
        raise ValueError(f"{cache} is not a folder; give the book's execution cache folder "
                         f"(default {DEFAULT_CACHE}) or a new one.")
    entries = list(cache.iterdir())
    other = sorted(p.name for p in entries if p.is_symlink() or not (
        p.name in _JUPYTER_CACHE_ENTRIES or p.name.startswith("global.db-")))
    if not other and entries and not (cache / _KEY_FILE).is_file() and not _is_jupyter_cache_db(cache / "global.db"):
        # without the key, only jupyter-cache's own database says the folder is a cache: a user's
        # file that merely has one of its names (global.db, __version__.txt) is never deleted
        raise ValueError(f"{cache} holds {sorted(p.name for p in entries)[0]!r} but no execution cache's database "
                         f"(global.db of jupyter-cache), so it is left as it is; give the book's cache folder "
                         f"(default {DEFAULT_CACHE}) or a new folder.")
    if not other:
        return
    raise ValueError(f"{cache} is not an execution cache (it holds {other[0]!r}, which the cache never "
                     "writes), so it is left as it is; give the book's cache folder (default "
                     f"{DEFAULT_CACHE}) or a new folder.")


def _is_jupyter_cache_db(path: Path) -> bool:
    """Whether ``path`` is a plain file holding jupyter-cache's database (SQLite, its table
    ``nbcache``; or still empty, as SQLite first makes it), read without writing anything."""
    import sqlite3
    from urllib.parse import quote

    try:
        if path.is_symlink() or not path.is_file():
            return False
        if path.stat().st_size == 0:
            return True
        with path.open("rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return False
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True)
        try:
            names = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return False
    return "nbcache" in names


def prepare(cache: Path | str = DEFAULT_CACHE, root: Path | str = ROOT) -> bool:
    """Empty ``cache`` when the package key changed; returns whether it was kept.

    Only an execution cache (its key file, or only jupyter-cache's own files) or an empty
    folder is ever emptied; any other folder is refused with a :class:`ValueError`.
    """
    cache = Path(cache)
    _check_is_a_cache(cache)
    key = package_key(root)
    stored = cache / _KEY_FILE
    if stored.is_file():
        try:
            if json.loads(stored.read_text(encoding="utf-8")) == key:
                return True
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass          # a torn or foreign key: the cache cannot be trusted, so it is emptied
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    stored.write_text(json.dumps(key))
    return False


def seed(executed: Path | str, cache: Path | str = DEFAULT_CACHE,
         root: Path | str = ROOT) -> list[str]:
    """Put the executed chapters under ``executed`` into ``cache``; returns their docnames.

    A chapter whose code cells no longer match the executed notebook (edited since) is not
    seeded: the build then executes it itself.
    """
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.read import read_myst_markdown_notebook

    from ...base.paths import regular_file

    prepare(cache, root)
    jc = get_cache(str(cache))
    root = Path(root)
    seeded = []
    for nb_path in sorted(Path(executed).glob("**/*.ipynb")):
        record = nb_path.with_suffix(".json")
        try:
            for path in (record, nb_path):   # a FIFO would block the seeding for ever
                regular_file(path, "an executed chapter's file")
            meta = json.loads(record.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as err:
            raise ValueError(f"{record} cannot be read as the JSON record of an executed chapter ({err}); run "
                             "the chapters again (make test writes them).") from None
        if not isinstance(meta, dict) or not isinstance(meta.get("docname"), str):
            raise ValueError(f"{record} is not the record of an executed chapter (a JSON object with its "
                             "'docname'); run the chapters again (make test writes them).")
        took = meta.get("execution_seconds")
        if isinstance(took, bool) or not isinstance(took, (int, float)) or not 0 <= took < float("inf"):
            raise ValueError(f"{record} gives no 'execution_seconds' (a number of seconds, got {took!r}); run the "
                             "chapters again (make test writes them).")
        source = root / f"{meta['docname']}.md"
        if not source.is_file():
            continue
        try:
            nb = nbformat.read(str(nb_path), as_version=4)
            hashed = jc.create_hashed_notebook(nb)[1]
        except (ValueError, KeyError, TypeError, AttributeError, OSError, nbformat.ValidationError) as err:
            raise ValueError(f"{nb_path} is not a readable executed notebook ({type(err).__name__}: "
                             f"{' '.join(str(err).split())[:120]}); run the chapters again (make test writes "
                             "them).") from None
        chapter = read_myst_markdown_notebook(source.read_text(encoding="utf-8"), path=str(source))
        if hashed != jc.create_hashed_notebook(chapter)[1]:
            continue
        jc.cache_notebook_bundle(
            CacheBundleIn(nb, str(source), data={"execution_seconds": took}),
            check_validity=False, overwrite=True)
        seeded.append(meta["docname"])
    return seeded


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    asks_help = any(a in ("-h", "--help") for a in argv)
    # an option is never taken for a folder: `prepare --help` made a folder named --help
    if (asks_help or not argv or argv[0] not in ("prepare", "seed") or any(a.startswith("-") for a in argv)
            or (argv[0] == "seed" and not 2 <= len(argv) <= 3) or (argv[0] == "prepare" and len(argv) > 2)):
        usage = [line.strip() for line in __doc__.strip().splitlines()[-2:]]
        print(f"usage: {usage[0]}  |  {usage[1]}", file=sys.stdout if asks_help else sys.stderr)
        return 0 if asks_help else 2
    try:
        return _main(argv)
    except (OSError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    if argv[0] == "seed" and not Path(argv[1]).is_dir():
        raise ValueError(f"{argv[1]} is not a folder; give the folder of executed chapters "
                         "(make test writes _build/executed).")
    if argv[0] == "prepare":
        kept = prepare(*(argv[1:2] or [DEFAULT_CACHE]))
        print(f"book cache: {'kept' if kept else 'emptied (the package, its data or the run size changed)'}")
        return 0
    done = seed(argv[1], *(argv[2:3] or [DEFAULT_CACHE]))
    print(f"book cache: seeded {len(done)} chapter(s) executed by nbval: {', '.join(done) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
