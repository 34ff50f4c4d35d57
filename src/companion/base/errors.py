"""The package's one user-facing error type.

:class:`CompanionError` marks a problem with the input that the user can fix (an unknown
architecture, a missing tensor, an offline hub id, a corrupt file).  The command line
prints its message and exits with a non-zero status instead of a traceback.  It derives
from :class:`ValueError`, so library callers can catch either.
"""

from __future__ import annotations

__all__ = ["CompanionError"]


class CompanionError(ValueError):
    """A problem with the input that has a clear fix; the message names both."""
