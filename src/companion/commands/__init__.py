"""Subcommands of the ``companion`` command line, one module each (see :mod:`companion.cli`)."""

from __future__ import annotations

from ..base.progress import shown   # noqa: F401  (here since the subcommands first used it)


def near(name: str, names) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``names`` to ``name``, or ``""``."""
    from difflib import get_close_matches

    match = get_close_matches(str(name), [str(n) for n in names], n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""
