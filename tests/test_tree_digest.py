"""The package key both caches share: a content hash of the files git keeps, read again only
when a file changed."""

from __future__ import annotations

import hashlib
import os
import subprocess

from companion.base import tree_digest as td


def _tree(root):
    (root / "src").mkdir(parents=True)
    (root / "data" / "runs").mkdir(parents=True)
    (root / "src" / "m.py").write_text("A = 1\n")
    (root / "data" / "t.csv").write_text("a\n1\n")
    (root / "data" / "runs" / "progress.log").write_text("step 1\n")
    return root


def _age(root, seconds=10):
    """Date every file back, as files are between edits (none written within a clock tick)."""
    for p in root.rglob("*"):
        if p.is_file():
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns - seconds * 10**9))


def test_the_digest_is_the_sha256_of_each_path_its_length_and_its_bytes(tmp_path):
    root = _tree(tmp_path)
    h = hashlib.sha256()
    for rel in ("data/t.csv", "src/m.py"):        # sorted; outside a checkout the progress log is left out
        content = (root / rel).read_bytes()
        h.update(rel.encode() + b"\0" + len(content).to_bytes(8, "big") + content)
    assert td.tree_digest(root, ("src", "data")) == (2, h.hexdigest())


def test_a_changed_file_changes_the_digest_and_an_unchanged_tree_is_not_read_again(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    _age(root)
    first = td.tree_digest(root, ("src", "data"))
    reads = []
    real = type(root).read_bytes
    monkeypatch.setattr(type(root), "read_bytes", lambda self: reads.append(self.name) or real(self))
    assert td.tree_digest(root, ("src", "data")) == first and reads == []     # memo: a walk, no reads
    (root / "data" / "t.csv").write_text("a\n2\n")                             # same size, new bytes
    assert td.tree_digest(root, ("src", "data")) != first and reads


def test_a_file_written_just_before_the_hash_is_read_again_next_time(tmp_path, monkeypatch):
    """git's racy-clean case: a rewrite within the clock's tick can keep size and time."""
    root = _tree(tmp_path)
    first = td.tree_digest(root, ("src", "data"))       # files written a moment ago: not memoised
    st = (root / "data" / "t.csv").stat()
    (root / "data" / "t.csv").write_text("a\n2\n")
    os.utime(root / "data" / "t.csv", ns=(st.st_atime_ns, st.st_mtime_ns))   # same size, same time
    assert td.tree_digest(root, ("src", "data")) != first


def test_in_a_checkout_files_git_ignores_are_left_out(tmp_path):
    root = _tree(tmp_path)
    (root / ".gitignore").write_text("*.pt\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    without = td.tree_digest(root, ("src", "data"))
    (root / "data" / "checkpoint.pt").write_bytes(b"weights")
    assert td.tree_digest(root, ("src", "data")) == without
    (root / "data" / "new.csv").write_text("b\n")        # untracked but not ignored: counted
    assert td.tree_digest(root, ("src", "data"))[0] == without[0] + 1
