"""A commit of the reading-corrections record is named by its hash: never a reflog name (dated by this
clone's own checkout history) nor a range (two dates), and nothing reaches git as an option."""

import os
import subprocess

import pytest

from companion.base.errors import CompanionError


def _repo(tmp_path):
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b"}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    for day in (1, 2, 3):
        (tmp_path / "f").write_text(str(day))
        subprocess.run(["git", "-C", str(tmp_path), "add", "f"], check=True, env=env)
        subprocess.run(["git", "-C", str(tmp_path), "commit", "-q", "-m", str(day)], check=True,
                       env={**env, "GIT_COMMITTER_DATE": f"2020-01-0{day}T00:00:00+00:00"})
    subprocess.run(["git", "-C", str(tmp_path), "checkout", "-q", "HEAD~1"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "checkout", "-q", "-"], check=True)
    return tmp_path


@pytest.mark.parametrize("name", ["HEAD@{1}", "HEAD@{yesterday}", "HEAD~2..HEAD", "HEAD~2...HEAD", "HEAD", "-p"])
def test_a_commit_is_named_by_its_hash_only_never_by_reflog_or_range(tmp_path, name):
    """HEAD~2..HEAD printed two dates (a raw ValueError); HEAD@{1} dated where this clone's HEAD
    stood a checkout ago, and HEAD@{yesterday} the reflog's oldest entry: no commit of the record."""
    from companion.rules.reading_corrections import commit_date

    root = _repo(tmp_path)
    with pytest.raises(CompanionError) as err:
        commit_date(name, root)
    assert "not a commit name" in str(err.value) and "\n" not in str(err.value)


def test_a_hash_is_dated_as_git_log_dates_it(tmp_path):
    import datetime as dt

    from companion.rules.reading_corrections import commit_date

    root = _repo(tmp_path)
    first = subprocess.run(["git", "-C", str(root), "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                           text=True, check=True).stdout.strip()
    assert commit_date(first[:7], root) == dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    assert commit_date(first.upper(), root) == dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
