"""The package's one user-facing error type.

:class:`CompanionError` marks a problem with the input that the user can fix (an unknown
architecture, a missing tensor, an offline hub id, a corrupt file).  The command line
prints its message and exits with a non-zero status instead of a traceback.  It derives
from :class:`ValueError`, so library callers can catch either.
"""

from __future__ import annotations

__all__ = ["CompanionError", "main_in_one_line"]


class CompanionError(ValueError):
    """A problem with the input that has a clear fix; the message names both."""


def main_in_one_line(prog: str, run, argv=None) -> int:
    """``run(argv)`` as a module's ``main``: a :class:`CompanionError` ends in one line on stderr,
    ``<prog>: error: <message>`` (its whitespace folded), and exit status 2."""
    import sys

    try:
        return run(argv)
    except CompanionError as err:
        print(f"{prog}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
