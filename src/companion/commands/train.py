"""``companion train``: train a BERT-style model and log its structure scores (see :mod:`companion.train`)."""

from __future__ import annotations


def register(subparsers) -> None:
    from ..train.cli import add_train_parser

    parser = add_train_parser(subparsers)
    parser.set_defaults(func=_run)


def _run(args) -> int:
    from ..base.errors import CompanionError
    from ..train.cli import run_train

    try:
        return run_train(args)
    except CompanionError:
        raise
    except (ValueError, FileNotFoundError) as exc:  # bad options or data: one line, no traceback
        raise CompanionError(str(exc)) from exc
