"""Permission errors: a file that may not be read is called unreadable (naming it and the
system's reason), never invalid, missing or a write failure; the CLI's last net tells a
refused read from a refused write."""

from __future__ import annotations

import os

import numpy as np
import pytest

import malformed as bad
from one_line import one_line_error
from test_refusals_formats import _ct2_file, _heads


# ---------------------------------------------------------------- unreadable is not invalid


def _unreadable(monkeypatch, target):
    """Opening ``target`` fails with EACCES, as for a file of mode 000 read by another user
    (the tests may run as root, for whom chmod 000 does not stop a read)."""
    import builtins
    import errno

    target = os.path.realpath(target)
    real_open, real_os_open = builtins.open, os.open

    def denied(path):
        return isinstance(path, (str, bytes, os.PathLike)) and os.path.realpath(os.fsdecode(path)) == target

    def fake_open(file, *a, **k):
        if denied(file):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(file))
        return real_open(file, *a, **k)

    def fake_os_open(path, *a, **k):
        if denied(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_os_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)


@pytest.mark.parametrize("which", ["model.safetensors", "config.json", "gguf", "model.bin"])
def test_an_unreadable_file_is_called_unreadable_not_invalid(tmp_path, monkeypatch, capsys, which):
    if which == "gguf":
        target = bad.tiny_gguf(tmp_path / "m.gguf")
        source = target
    elif which == "model.bin":
        target = _ct2_file(tmp_path / "model.bin", _heads(np.array(2, np.int32)))
        source = tmp_path
    else:
        bad.tiny_llama(tmp_path, layers=1)
        target, source = tmp_path / which, tmp_path
    _unreadable(monkeypatch, target)
    line = one_line_error(["score", str(source), "--quiet"], capsys, "cannot read", target.name)
    assert "ermission denied" in line
    for wrong in ("not a valid", "not a readable GGUF", "no config.json", "write to", "holds no"):
        assert wrong not in line, line



# ---------------------------------------------------------------- a refused read is not a refused write


def test_the_cli_calls_a_refused_read_a_read_and_a_refused_write_a_write(tmp_path, monkeypatch, capsys):
    """The CLI's last net for permission errors a reader did not catch itself: a file that
    exists and may not be read gets the read hint, anything else the write hint."""
    import errno

    from companion import cli

    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k:
                        False if os.fspath(p) == str(secret) and mode == os.R_OK else real_access(p, mode, *a, **k))

    def fails(path):
        def command(args):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return command

    parser = cli.build_parser()
    for path, words, wrong in [(secret, "cannot read", "write to"),
                               (tmp_path / "out" / "new.csv", "choose a folder you can write to", "cannot read")]:
        monkeypatch.setattr(cli, "build_parser", lambda: parser)
        monkeypatch.setattr(parser, "parse_known_args", lambda argv=None, path=path:
                            (__import__("argparse").Namespace(command="score", func=fails(path)), []))
        assert cli.main(["score"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err and wrong not in err and str(path) in err, err
