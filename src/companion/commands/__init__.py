"""Subcommands of the ``companion`` command line, one module each (see :mod:`companion.cli`)."""

from __future__ import annotations


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


def near(name: str, names) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``names`` to ``name``, or ``""``."""
    from difflib import get_close_matches

    match = get_close_matches(str(name), [str(n) for n in names], n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""
