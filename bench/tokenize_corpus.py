"""Time and peak memory to tokenize a corpus into the token cache, and a projection.

Runs the build in a child process with an empty cache (the fetched archive linked in, so
no download is timed) and reads the child's peak resident memory; a second child that
only imports the same modules gives the baseline memory, subtracted to get what the
tokenization itself holds.  The projection to a larger corpus scales time with its
characters (the build is one pass) and keeps the memory (the build holds one batch of
documents, never the corpus); the token file grows at ``bytes/token`` on disk.

    python bench/tokenize_corpus.py --corpus wikipedia --out bench/results/tokenize_corpus.json

``--project-chars`` is the size of the corpus to project to, in characters; the default,
2.0e10, is our rough figure for the text of the English Wikipedia dump
(``wikimedia/wikipedia`` ``20231101.en``), an assumption, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, os, sys, time
from companion.train.text.corpora import corpus_documents
from companion.train.text.data import load_tokenizer
from companion.train.text.tokens import cached_token_streams
from companion.train.text.corpora import documents_sha256
docs = corpus_documents(sys.argv[1], fetch=False)
tok = load_tokenizer()
if sys.argv[2] == "build":
    t0 = time.perf_counter()
    s = cached_token_streams({"corpus": sys.argv[1], "documents_sha256": documents_sha256(docs)},
                             lambda: docs, tok)
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "tokens": int(s.meta["train_tokens"] + s.meta["eval_tokens"]),
                      "chars": sum(map(len, docs)), "documents": len(docs),
                      "bytes_per_token": s.train.dtype.itemsize}))
else:
    print(json.dumps({}))
"""


def child(corpus: str, mode: str, cache: Path) -> tuple[dict, float]:
    env = dict(os.environ, COMPANION_CACHE=str(cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = subprocess.run([sys.executable, "-c", CHILD, corpus, mode], env=env, check=True,
                         capture_output=True, text=True).stdout
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return json.loads(out.strip().splitlines()[-1]), max(peak_kib, before) / 1024


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default="wikipedia")
    p.add_argument("--project-chars", type=float, default=2.0e10)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    from companion.base.cache import cache_root
    from companion.train.text.corpora import CORPORA, archive_path

    spec = CORPORA[args.corpus]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        if spec.needs_fetch:
            (cache / "archives").mkdir()
            (cache / "archives" / spec.archive).symlink_to(archive_path(spec))
        # the baseline child runs first: RUSAGE_CHILDREN keeps the maximum over children
        _, base_mib = child(args.corpus, "baseline", cache)
        res, peak_mib = child(args.corpus, "build", cache)
    chars_per_s = res["chars"] / res["seconds"]
    tokens_per_char = res["tokens"] / res["chars"]
    result = dict(res, corpus=args.corpus, peak_rss_mib=round(peak_mib, 1),
                  baseline_rss_mib=round(base_mib, 1),
                  tokenization_extra_mib=round(peak_mib - base_mib, 1),
                  chars_per_s=round(chars_per_s), tokens_per_s=round(res["tokens"] / res["seconds"]),
                  projection={"chars": args.project_chars,
                              "hours": round(args.project_chars / chars_per_s / 3600, 1),
                              "tokens": round(args.project_chars * tokens_per_char),
                              "disk_gib": round(args.project_chars * tokens_per_char
                                                * res["bytes_per_token"] / 2**30, 1),
                              "peak_rss_mib": round(peak_mib, 1)},
                  load_average_1min=os.getloadavg()[0], cpu_count=os.cpu_count(),
                  cache_root=str(cache_root()))
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
