"""The cache and training locks (``companion.base.cache.exclusive``): a lock whose pid was
reused, names another program or is older than its process is stale and taken over at once;
a lock that is a folder is refused in one line; a wait behind a live lock says what it waits
for and leaves the lock alone."""

from __future__ import annotations

import os
import sys

import pytest

from deadline import within
from companion.base.errors import CompanionError


# ---------------------------------------------------------------- stale locks


def test_a_lock_whose_pid_was_reused_by_another_process_is_stale(tmp_path):
    from companion.base.cache import exclusive

    lock = tmp_path / ".lock"
    lock.write_text(f"{os.getpid()} 1\n")     # a live pid, but a process started at another time
    with within(20), exclusive(lock, "testing", wait_s=0):
        assert lock.read_text().split()[0] == str(os.getpid()) and lock.read_text().split()[1] != "1"
    assert not lock.exists()


def _takes_over(lock, wait_s):
    import time

    from companion.base.cache import exclusive

    t0 = time.monotonic()
    with exclusive(lock, "testing", wait_s=wait_s, busy="another training process ({pid}) holds it"):
        assert lock.read_text().split()[0] == str(__import__("os").getpid())
    assert not lock.exists()
    return time.monotonic() - t0


def test_a_lock_of_a_pid_alone_that_now_names_another_program_is_stale(tmp_path):
    """pid 1 is always alive; a lock naming it (and no start time) made the zoo wait 30 s in
    silence and `companion train` speak of 'another training process'."""
    import subprocess

    lock = tmp_path / ".lock"
    lock.write_text("1\n")
    assert _takes_over(lock, wait_s=30) < 2
    lock.write_text("1\n")
    assert _takes_over(lock, wait_s=0) < 2                 # train's wait_s=0: not refused as busy
    other = subprocess.Popen(["sleep", "30"])
    try:
        lock.write_text(f"{other.pid}\n")
        assert _takes_over(lock, wait_s=30) < 2
    finally:
        other.kill()
        other.wait()


def test_a_lock_of_a_pid_alone_older_than_the_process_is_stale(tmp_path):
    import os
    import subprocess
    import time

    lock = tmp_path / ".lock"
    lock.write_text("0\n")
    os.utime(lock, (time.time() - 3600, time.time() - 3600))   # written an hour ago ...
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])   # ... by not this one
    try:
        lock.write_text(f"{later.pid}\n")
        os.utime(lock, (time.time() - 3600, time.time() - 3600))
        assert _takes_over(lock, wait_s=30) < 2
    finally:
        later.kill()
        later.wait()



def test_a_lock_still_being_written_is_not_taken_over(tmp_path):
    """A lock made a moment ago and still empty (its pid not yet written) is not abandoned:
    taking it over made two holders, and two processes fitted one tokenizer at once."""
    import subprocess
    import threading
    import time

    from companion.base.cache import _start_time, exclusive

    lock = tmp_path / ".lock"
    lock.write_text("")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        def write_pid():
            time.sleep(0.5)
            lock.write_text(f"{holder.pid} {_start_time(holder.pid)}\n")

        threading.Thread(target=write_pid).start()
        with pytest.raises(CompanionError, match=f"held by process {holder.pid}"):
            with exclusive(lock, "testing", wait_s=1, poll_s=0.1):
                pass
        assert lock.read_text().split()[0] == str(holder.pid)    # still the holder's
        lock.write_text("")
        os.utime(lock, (time.time() - 60, time.time() - 60))     # empty for a minute: abandoned
        assert _takes_over(lock, wait_s=30) < 2
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_appears_whole_or_not_at_all(tmp_path):
    from companion.base.cache import _create_lock

    lock = tmp_path / ".lock"
    assert _create_lock(lock, "123 456\n") and lock.read_text() == "123 456\n"
    assert not _create_lock(lock, "789\n") and lock.read_text() == "123 456\n"   # never replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]                # nothing left beside it


# ---------------------------------------------------------------- locks that are not ours to take


def test_a_lock_that_is_a_folder_is_refused_in_one_line(tmp_path):
    from companion.base.cache import exclusive

    lock = tmp_path / ".lock"
    lock.mkdir()
    with pytest.raises(CompanionError, match="not a regular file"):
        with exclusive(lock, "testing", wait_s=0):
            pass
    assert lock.is_dir()


def test_a_wait_behind_a_live_lock_says_what_it_waits_for(tmp_path, capsys, caplog, monkeypatch):
    import logging
    import os

    from companion.base.cache import exclusive
    from companion.base.errors import CompanionError
    from companion.base.progress import command_line

    monkeypatch.delenv("COMPANION_PROGRESS", raising=False)
    lock = tmp_path / ".lock"
    lock.write_text(f"{os.getpid()}\n")          # a live Python process that started before the lock
    with pytest.raises(CompanionError, match=f"held by process {os.getpid()}"):
        with command_line():                      # as in `companion ...`: said on stderr
            with exclusive(lock, "assembling m", wait_s=5, poll_s=0.5):
                pass
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "waiting up to 5 s" in err[0] and str(lock) in err[0], err
    assert lock.exists()                          # not ours to remove
    # elsewhere (a pipe, a chapter's kernel) only the log says it: nothing on stderr
    with caplog.at_level(logging.INFO, logger="companion.progress"):
        with pytest.raises(CompanionError, match=f"held by process {os.getpid()}"):
            with exclusive(lock, "assembling m", wait_s=5, poll_s=0.5):
                pass
    assert capsys.readouterr().err == ""
    assert [r.getMessage() for r in caplog.records if "waiting up to 5 s" in r.getMessage()] != []
