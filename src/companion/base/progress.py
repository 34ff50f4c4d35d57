"""Progress and wait messages of library code: on a terminal, never in a chapter's output.

Library code that says what it is doing while it takes a while (``waiting up to 900 s for
process ...``, ``fetching corpus ...``, ``fitting ...``) calls :func:`report`.  The line
always goes to the ``companion.progress`` logger (level INFO, which Python shows nowhere
unless logging is configured to), and to stderr only where a person reads it as it comes:

* never inside an IPython kernel (a chapter): anything written to a kernel's stderr is
  saved with the cell, and the book build, which fails on a warning, fails on it.  A
  notebook that wants the lines configures logging (``logging.basicConfig(level="INFO")``).
* ``COMPANION_PROGRESS=0`` (or ``off``): never.  The book's kernels set it
  (``book/_ipython``), so that a command a chapter starts is quiet too.
* ``COMPANION_PROGRESS=1`` (or ``stderr``): always (outside a kernel), e.g. for a log.
* unset: when stderr is a terminal, or when the process is a command line (``companion
  ...``, ``python -m companion.train.cli``: they call :func:`command_line`), whose stderr
  is read as it comes or kept as its log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

__all__ = ["ENV_VAR", "report", "to_stderr", "command_line", "in_kernel", "shown"]

ENV_VAR = "COMPANION_PROGRESS"
LOGGER = logging.getLogger("companion.progress")
_ON = ("1", "stderr", "on", "yes", "true")
_OFF = ("0", "off", "no", "false")

_command_line = False


@contextlib.contextmanager
def command_line():
    """Around a command-line entry point's work: its stderr is read as it comes or kept as
    its log, so progress goes there even when it is not a terminal (restored afterwards, so
    a command run in-process leaves the caller as it was)."""
    global _command_line
    to_stderr()   # a bad COMPANION_PROGRESS is refused (one line) before the command's work
    before, _command_line = _command_line, True
    try:
        yield
    finally:
        _command_line = before


def in_kernel(stream=None) -> bool:
    """Whether ``stream`` (default: ``sys.stderr``) is an IPython kernel's output stream, or
    this process runs a kernel (whose file descriptors are captured into the cell's output)."""
    stream = sys.stderr if stream is None else stream
    if type(stream).__module__.startswith("ipykernel"):
        return True
    kernel = sys.modules.get("ipykernel.kernelapp")
    return bool(kernel is not None and getattr(kernel.IPKernelApp, "initialized", lambda: False)())


def to_stderr(stream=None) -> bool:
    """Whether :func:`report` writes to stderr now (see the module's rules)."""
    stream = sys.stderr if stream is None else stream
    if stream is None or in_kernel(stream):
        return False
    setting = (os.environ.get(ENV_VAR) or "").strip().lower()
    if setting in _ON:
        return True
    if setting in _OFF and setting:
        return False
    if setting:
        from .errors import CompanionError

        raise CompanionError(f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not a setting; use {ENV_VAR}=1 (progress on "
                             f"stderr) or {ENV_VAR}=0 (never), or unset it (stderr when it is a terminal).")
    if _command_line:
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):   # a closed or replaced stream
        return False


def shown(text) -> str:
    """``text`` as it may reach a terminal: a character that is not printable (a newline, an
    escape sequence's ESC, a byte of a file name that is not UTF-8) is written as its escape
    (``\\n``, ``\\x1b``, ``\\xff``), so a name or a cell never breaks a line in two, nor moves
    the cursor, recolours or retitles the terminal.  Spaces and printable non-ASCII stay."""
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable():
            out.append(ch)
        elif "\udc80" <= ch <= "\udcff":   # a byte of a file name that is not UTF-8 (surrogateescape)
            out.append(f"\\x{ord(ch) - 0xdc00:02x}")
        else:
            out.append(ascii(ch)[1:-1])
    return "".join(out)


def report(message: str) -> None:
    """Say ``message`` (one line) to the logger, and to stderr where :func:`to_stderr` says so
    (a character of it that is not printable, in a path it names, written as its escape)."""
    LOGGER.info(message)
    if to_stderr():
        print(shown(message), file=sys.stderr, flush=True)
