"""A cached corpus archive whose sha256 is not the pinned one is fetched anew, and the file
that was there is kept aside, byte for byte (it may be a copy a user put there by hand)."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from companion.base.errors import CompanionError
from companion.train.text import corpora


def test_an_archive_with_another_hash_is_kept_aside_not_deleted(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    spec = corpora._spec("kjv")
    dest = corpora.archive_path(spec)
    dest.parent.mkdir(parents=True, exist_ok=True)
    mine = b"a user's copy of another release\n"
    dest.write_bytes(mine)
    # the fetch itself fails (no network here): what matters is what became of the file
    monkeypatch.setattr(subprocess, "run", lambda cmd, *a, **k: subprocess.CompletedProcess(cmd, 1, "", "offline"))
    with pytest.raises(CompanionError, match="could not download"):
        corpora.fetch_corpus("kjv", quiet=True)
    digest = hashlib.sha256(mine).hexdigest()
    aside = dest.with_name(f"{dest.name}.rejected-{digest[:12]}")
    assert aside.read_bytes() == mine and not dest.exists()
    said = capsys.readouterr().err
    assert aside.name in said and digest[:12] in said and spec.sha256[:12] in said
