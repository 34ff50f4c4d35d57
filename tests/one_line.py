"""Test helper: a command that must end in one line on stderr (exit != 0, no traceback)."""

from __future__ import annotations

import time

from companion.cli import main


def one_line_error(argv, capsys, *words, within_s: float | None = None) -> str:
    """Run ``companion ARGV``; assert a non-zero exit, exactly one non-empty stderr line
    holding every one of ``words``, no traceback, and (optionally) an end within ``within_s``."""
    capsys.readouterr()
    t0 = time.monotonic()
    rc = main(argv)
    if within_s is not None:
        assert time.monotonic() - t0 < within_s
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def one_line(err) -> str:
    """The message of a refusal (an exception, or pytest's ``ExceptionInfo`` of one), asserted
    to be one line."""
    text = str(err.value if hasattr(err, "value") else err)
    assert "\n" not in text.strip(), text
    return text



def refused(call, *words, kind: type = ValueError) -> str:
    """Call ``call()``; assert it raises ``kind`` (CompanionError is a ValueError) in one line
    holding every one of ``words``, and return that line."""
    import pytest

    with pytest.raises(kind) as err:
        call()
    text = one_line(err)
    for w in words:
        assert w in text, text
    return text
