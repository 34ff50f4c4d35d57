"""The record of corrections to how a rule is read (data/reading_corrections.csv): what the
rules-history appendix shows beside the rules file's own edits."""

from __future__ import annotations

import datetime as dt
import subprocess

import pytest

from companion.base.errors import CompanionError
from companion.base.paths import ROOT
from companion.rules.reading_corrections import COLUMNS, commit_date, reading_corrections

GOOD = "key,commit,change,d_before,status_before\nchars_table_1,6ec5026,read between evaluations,nan,not testable here\n"


def _git_has_history() -> bool:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "HEAD"], capture_output=True)
    return out.returncode == 0


def test_the_committed_record_names_claims_in_force_and_reads_nan_as_no_yardstick():
    table = reading_corrections()
    assert tuple(table.columns) == COLUMNS and len(table) >= 1
    row = table.set_index("key").loc["chars_table_1"]
    assert row["d_before"] != row["d_before"]   # NaN: the claim read no yardstick before the correction


def test_each_recorded_commit_is_dated_by_git_as_git_log_dates_it():
    if not _git_has_history():
        pytest.skip("this copy has no git history")
    for commit in reading_corrections()["commit"]:
        shown = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%ct", commit],
                               capture_output=True, text=True, check=True).stdout.strip()
        expected = dt.datetime.fromtimestamp(int(shown), dt.timezone.utc)
        assert commit_date(commit) == expected


def test_a_commit_the_history_does_not_hold_has_no_date():
    assert commit_date("0000000") is None
    assert commit_date("6ec5026", root="/nonexistent-folder") is None


@pytest.mark.parametrize("text, word", [
    (GOOD.replace("chars_table_1,", "chars_table_9,"), "not a claim of the rules in force"),
    (GOOD.replace("6ec5026", "6ec50z6"), "hexadecimal"),
    (GOOD.replace("6ec5026", "6ec5026; rm -rf ~"), "hexadecimal"),
    (GOOD.replace(",nan,", ",big,"), "not a number"),
    (GOOD.replace(",nan,", ",inf,"), "not a number"),
    (GOOD.replace(",not testable here", ", "), "status_before is empty"),
    (GOOD.replace("key,commit", "claim,commit"), "columns"),
    (GOOD.replace("status_before", "status_before,extra").replace("here\n", "here,1\n"), "columns"),
])
def test_a_bad_record_is_refused_in_one_line_naming_the_file_and_the_fault(tmp_path, text, word):
    path = tmp_path / "reading_corrections.csv"
    path.write_text(text)
    with pytest.raises(CompanionError) as err:
        reading_corrections(path)
    message = str(err.value)
    assert word in message and str(path) in message and "\n" not in message


def test_a_missing_record_names_the_file_and_how_to_restore_it(tmp_path):
    with pytest.raises(CompanionError, match="restore it from git"):
        reading_corrections(tmp_path / "absent.csv")
