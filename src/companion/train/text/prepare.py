"""``companion corpus prepare``: what the book and the tests make from the corpora, made once.

A chapter or a test that needs a corpus's tokens finds them in the cache, or makes them on
first use: the archive fetched, ``english-mix``'s WordPiece vocabulary fitted (minutes), each
corpus tokenized into the token cache (:mod:`companion.train.text.tokens`).  Several
processes that need the same thing at once (pytest-xdist workers, two chapters) then wait
for each other behind a lock or do the same work twice.  The set-up (``make env``) runs
:func:`prepare` first, so that every test and chapter finds them made.

:data:`PLAN` lists, per corpus, the tokenizers its token cache is made with: the corpus's
own (``english-mix``: its fitted vocabulary; the others: BERT's uncased WordPiece, the
default of ``companion train``), and the checkpoints whose recorded runs
(``data/runs/*/provenance.json``, ``init_from``) trained on it with their own tokenizer.
The keys are those :func:`companion.train.text.data.token_data_for_corpus` uses, whatever
the block length and vocabulary compaction (neither is part of a token cache's key).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ...base.errors import CompanionError
from .corpora import CORPORA, fetch_corpus

__all__ = ["PLAN", "DEFAULT_VOCABULARY", "Prepared", "plan", "groups", "prepare"]

#: corpus -> the tokenizers its token cache is made with besides its own (zoo names of
#: checkpoints that recorded runs started from and that bring another vocabulary)
PLAN: dict[str, tuple[str, ...]] = {
    "wikipedia": ("smollm2-135m",),
}

#: checkpoints whose tokenizer is the default one (BERT uncased WordPiece): the corpus's own
#: token cache serves them
DEFAULT_VOCABULARY = ("all-minilm-l6-v2",)


@dataclass(frozen=True)
class Prepared:
    """One thing made (or found made): what, where, and the seconds it took."""

    corpus: str
    what: str
    path: str
    seconds: float

    def line(self) -> str:
        """The one line ``companion corpus prepare`` prints for it."""
        return f"{self.corpus}: {self.what} ({self.seconds:.1f} s): {self.path}"


def plan(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """``(corpus, tokenizer)`` pairs, ``None`` for the corpus's own; refuses an unknown name."""
    out = []
    for name in names:
        if name not in CORPORA:
            raise CompanionError(f"unknown corpus {name!r} to prepare; the offline corpora are "
                                 f"{', '.join(sorted(CORPORA))} (or 'all'; `companion corpus list` shows them).")
        out.append((name, None))
        out.extend((name, t) for t in PLAN.get(name, ()))
    return out


def groups(names: Iterable[str], jobs: int) -> list[list[str]]:
    """The corpora of ``names`` in at most ``jobs`` groups that share nothing but the
    archives, which :func:`prepare` fetches first: each corpus with a fitted vocabulary (a
    minute of one core) heads a group, and the other corpora (seconds each) together make
    one more group where ``jobs`` allows, else join the last; each corpus is whole in one group."""
    names = list(dict.fromkeys(names))
    k = max(1, jobs)
    heavy = [n for n in names if CORPORA[n].fitted_vocab]
    light = [n for n in names if not CORPORA[n].fitted_vocab]
    out = [[n] for n in heavy[:k]]
    if heavy[k:]:
        out[-1].extend(heavy[k:])
    if light:
        if len(out) < k:
            out.append(light)
        else:
            out[-1].extend(light)
    return out


def _prepare_group(names: list[str]) -> list[Prepared]:   # a child of prepare(jobs > 1)
    return [p for p in prepare(names) if p.what != "archive"]


def prepare(names: Iterable[str], say: Callable[[str], None] | None = None, jobs: int = 1) -> list[Prepared]:
    """Fetch each corpus, fit ``english-mix``'s vocabulary, and build the token caches of
    :func:`plan` (anything already in the cache is checked and kept).  ``say`` gets one line
    per thing made.  Returns what was made, in order.

    ``jobs > 1``: every archive is fetched here first, then the :func:`groups` are prepared
    in that many processes at once (no two of them make the same thing)."""
    from .data import corpus_token_streams

    steps = plan(names)   # every name checked before any work
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise CompanionError(f"jobs must be a whole number of at least 1, not {jobs!r}")
    parts = groups([c for c, _ in steps], jobs) if jobs > 1 else []
    if len(parts) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        done: list[Prepared] = []
        for corpus in dict.fromkeys(c for c, _ in steps):
            if CORPORA[corpus].needs_fetch:
                t0 = time.monotonic()
                done.append(Prepared(corpus, "archive", str(fetch_corpus(corpus)), round(time.monotonic() - t0, 1)))
        with ProcessPoolExecutor(len(parts), mp_context=multiprocessing.get_context("spawn")) as pool:
            for made in pool.map(_prepare_group, parts):   # in the groups' order, each when it ends
                done.extend(made)
        if say is not None:
            for p in done:
                say(p.line())
        return done
    done: list[Prepared] = []

    def record(corpus, what, path, t0):
        p = Prepared(corpus, what, str(path), round(time.monotonic() - t0, 1))
        done.append(p)
        if say is not None:
            say(p.line())

    fetched: set[str] = set()
    for corpus, tokenizer in steps:
        spec = CORPORA[corpus]
        if corpus not in fetched:
            fetched.add(corpus)
            if spec.needs_fetch:
                t0 = time.monotonic()
                record(corpus, "archive", fetch_corpus(corpus), t0)
            if spec.fitted_vocab:
                from .english_mix import fitted_tokenizer_folder

                t0 = time.monotonic()
                record(corpus, f"fitted {spec.fitted_vocab}-id vocabulary", fitted_tokenizer_folder(), t0)
        name = None
        if tokenizer is not None:   # a zoo checkpoint's own tokenizer, as `companion train --init-from`
            from ...zoo.registry import zoo_path

            name = str(zoo_path(tokenizer))
        t0 = time.monotonic()
        _, _, src = corpus_token_streams(corpus, tokenizer_name=name)
        record(corpus, f"tokens ({tokenizer or 'its own vocabulary'}, "
               f"{src['corpus_train_docs'] + src['corpus_eval_docs']} documents)", src["folder"], t0)
    return done
