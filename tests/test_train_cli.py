"""``companion train`` writes a run directory with its history and provenance."""

import argparse
import json
import os

import pandas as pd
import pytest
import torch

from companion.train.cli import add_train_parser, main

torch.set_num_threads(1)


def test_train_command_writes_history_and_provenance(tmp_path):
    out = tmp_path / "run"
    assert main(["--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1",
                 "--init", "symmetric", "--seed", "3", "--out", str(out)]) == 0
    hist = pd.read_csv(out / "history.csv")
    meta = json.loads((out / "provenance.json").read_text())
    assert sorted(hist.loc[hist["quantity"] == "eval_loss", "step"]) == [0, 1, 2]
    assert meta["seed"] == 3 and meta["config"]["init"] == "symmetric"
    assert meta["command"].startswith("companion train --size micro")
    for key in ("hardware", "duration_s", "versions", "date"):
        assert key in meta
    assert not (out / "checkpoint.pt").exists()


def test_train_subcommand_plugs_into_a_parent_parser():
    parser = argparse.ArgumentParser(prog="companion")
    add_train_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["train", "--mode", "decoder", "--out", "x"])
    assert args.mode == "decoder" and callable(args.func)


def test_train_is_a_subcommand_of_the_companion_cli(capsys):
    from companion.cli import main

    try:
        main(["train", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    assert "--mode" in capsys.readouterr().out


# ---------------------------------------------------------------- never lose a run, never run foreign code

from companion.cli import main as companion_main  # noqa: E402

MICRO = ["--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1",
         "--corpus", "python-docs", "--top-k", "64"]


def _train(out, *extra):
    return companion_main(["train", *MICRO, *extra, "--out", str(out)])


def test_a_finished_run_is_never_overwritten_by_accident(tmp_path, capsys):
    out = tmp_path / "run"
    assert _train(out) == 0
    before = (out / "history.csv").read_bytes(), (out / "provenance.json").read_bytes()
    assert _train(out, "--lr", "3e-3") == 2  # another configuration, same folder
    err = capsys.readouterr().err
    assert "already holds a finished run" in err and "--overwrite" in err
    assert ((out / "history.csv").read_bytes(), (out / "provenance.json").read_bytes()) == before
    assert _train(out, "--lr", "3e-3", "--overwrite") == 0
    assert json.loads((out / "provenance.json").read_text())["config"]["lr"] == 3e-3


@pytest.mark.parametrize("bad, says", [
    (["--steps", "0"], "steps must be >= 1"),
    (["--lr", "nan"], "lr must be a finite number"),
    (["--corpus", "no-such-corpus"], "neither a known corpus"),
    (["--eval-every", "5"], "--eval-every 5 is longer than the run"),
    (["--checkpoint-every", "9"], "--checkpoint-every 9 is longer than the run"),
])
def test_overwrite_with_a_bad_option_keeps_the_old_run(tmp_path, capsys, bad, says):
    out = tmp_path / "run"
    assert _train(out) == 0
    before = (out / "history.csv").read_bytes(), (out / "provenance.json").read_bytes()
    assert _train(out, *bad, "--overwrite") == 2
    assert says in capsys.readouterr().err
    assert ((out / "history.csv").read_bytes(), (out / "provenance.json").read_bytes()) == before
    fresh = tmp_path / "fresh"
    assert _train(fresh, *bad) == 2 and not fresh.exists()   # no folder made for a run that cannot start


def test_resume_continues_an_interrupted_run_and_refuses_another_config(tmp_path, capsys):
    from companion.train.runner.config import TrainConfig
    from companion.train.runner.loop import train
    from companion.train.text.data import token_data_for_corpus

    out = tmp_path / "run"
    assert _train(out, "--resume", "--checkpoint-every", "1", "--keep-checkpoint") == 0
    assert (out / "checkpoint.pt").exists()
    (out / "history.csv").unlink()  # as if interrupted after the checkpoint
    assert _train(out, "--lr", "5e-3", "--resume", "--checkpoint-every", "1") == 2
    assert "different configuration" in capsys.readouterr().err
    assert _train(out, "--resume", "--checkpoint-every", "1") == 0
    assert not (out / "checkpoint.pt").exists()  # deleted once the run finished


def test_interrupted_run_is_not_read_as_finished(tmp_path):
    import pytest

    from companion.train.runner.runs import load_runs

    out = tmp_path / "run"
    assert _train(out, "--checkpoint-every", "1", "--keep-checkpoint") == 0
    (out / "history.csv").unlink()
    with pytest.raises(FileNotFoundError):
        load_runs(root=tmp_path)


def test_a_crafted_checkpoint_is_refused_without_running_its_code(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            import os
            return (os.system, (f"touch {marker}",))

    torch.save({"config": Exploit()}, out / "checkpoint.pt")
    # a crafted file with a matching digest beside it passes the integrity check, and is
    # still never unpickled
    from companion.base.cache import sha256_file
    (out / "checkpoint.pt.sha256").write_text(sha256_file(out / "checkpoint.pt") + "\n")
    assert _train(out, "--resume") == 2
    assert "weights_only" in capsys.readouterr().err
    assert not marker.exists()


def test_bad_numbers_are_refused_before_any_work(tmp_path, capsys):
    for extra, words in ((["--eval-blocks", "0"], "eval-blocks"),
                         (["--penalty-coef", "nan"], "penalty_coef"),
                         (["--lr", "inf"], "lr")):
        try:
            rc = _train(tmp_path / "x", *extra)
        except SystemExit as exc:  # argparse rejects the value itself
            rc = exc.code
        assert rc == 2, extra
        assert words in capsys.readouterr().err
        assert not (tmp_path / "x" / "history.csv").exists()


def test_an_unwritable_out_is_refused_before_training(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert _train(blocker / "run") == 2
    assert "cannot write to --out" in capsys.readouterr().err


def test_a_resumed_run_records_the_time_of_every_segment(tmp_path):
    out = tmp_path / "run"
    assert _train(out, "--checkpoint-every", "1", "--keep-checkpoint") == 0
    first = json.loads((out / "provenance.json").read_text())
    assert 0 < first["cpu_seconds"] and 0 < first["duration_s"]
    (out / "history.csv").unlink()  # as if interrupted after the last checkpoint
    ck = torch.load(out / "checkpoint.pt", weights_only=True)
    ck["elapsed"] = {"wall": 1000.0, "cpu": 500.0}  # what earlier segments took
    torch.save(ck, out / "checkpoint.pt")
    from companion.base.cache import sha256_file
    (out / "checkpoint.pt.sha256").write_text(sha256_file(out / "checkpoint.pt"))  # a legitimate rewrite
    assert _train(out, "--resume", "--checkpoint-every", "1") == 0
    meta = json.loads((out / "provenance.json").read_text())
    assert meta["resumed"] is True
    assert 1000 < meta["duration_s"] < 1000 + 10 * first["duration_s"] + 60
    assert 500 < meta["cpu_seconds"] < 500 + 10 * first["cpu_seconds"] + 60


def test_a_corpus_smaller_than_one_batch_is_refused_and_leaves_no_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert _train(out, "--batch-size", "100000") == 2
    err = capsys.readouterr().err
    assert "fewer than one batch of 100000" in err and "--batch-size" in err
    assert not (out / "history.csv").exists() and not (out / "checkpoint.pt").exists()


def test_a_checkpoint_changed_on_disk_is_refused_on_resume(tmp_path, capsys):
    out = tmp_path / "run"
    assert _train(out, "--checkpoint-every", "1", "--keep-checkpoint") == 0
    (out / "history.csv").unlink()
    data = bytearray((out / "checkpoint.pt").read_bytes())
    data[len(data) // 2] ^= 0x01                      # one flipped bit in the middle of the tensors
    (out / "checkpoint.pt").write_bytes(bytes(data))
    capsys.readouterr()
    assert _train(out, "--resume") == 2
    err = capsys.readouterr().err
    assert "does not match the SHA-256" in err and "Traceback" not in err
    assert not (out / "history.csv").exists()


def test_two_runs_into_one_out_folder_are_refused_while_the_first_lives(tmp_path, capsys):
    import subprocess
    import sys as _sys

    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen([_sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (out / ".train.lock").write_text(f"{holder.pid}\n")     # a live owner
        capsys.readouterr()
        assert _train(out) == 2
        err = capsys.readouterr().err
        assert f"pid {holder.pid}" in err and "another training process" in err
        assert not (out / "history.csv").exists()
    finally:
        holder.kill()
        holder.wait()
    assert _train(out) == 0                                       # the owner is gone: the stale lock is taken over
    assert (out / "history.csv").exists() and not (out / ".train.lock").exists()


@pytest.mark.parametrize("flag, value, words", [("--max-tokens", "-5", "--max-tokens must be >= 1"),
                                                ("--threads", "-1", "--threads must be >= 1"),
                                                ("--device", "foo", "not a device"),
                                                ("--device", "meta", "not meta"),
                                                ("--device", "cuda:7", "cuda")])
def test_bad_numeric_and_device_flags_are_one_line(tmp_path, capsys, flag, value, words):
    import torch as _torch

    if flag == "--device" and value.startswith("cuda") and _torch.cuda.device_count() > 7:
        pytest.skip("this machine has that GPU")
    capsys.readouterr()
    with pytest.raises(SystemExit) if flag in ("--max-tokens", "--threads") else _noraise():
        rc = _train(tmp_path / "run", flag, value)
        assert rc == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "run" / "history.csv").exists()


class _noraise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_module_entry_point_refuses_a_horizon_below_the_warm_up_in_one_line(tmp_path, capsys):
    # `python -m companion.train.cli` (what companion.train.runner.pack starts) refuses like `companion train`
    out = tmp_path / "run"
    assert main(["--size", "micro", "--steps", "50", "--warmup", "100", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("companion train: error:") and "warm-up" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("make, says", [
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: os.mkfifo(p), "is a FIFO"),
    (lambda p: None, None),
])
def test_a_log_that_is_a_folder_or_a_fifo_is_refused_before_out_is_touched(tmp_path, capsys, make, says):
    log = tmp_path / "progress.log"
    make(log)
    out = tmp_path / "run"
    if says is None:   # a missing file in a folder that exists is fine; a missing folder is not
        bad = tmp_path / "nowhere" / "progress.log"
        assert _train(out, "--log", str(bad)) == 2
        assert "does not exist" in capsys.readouterr().err and not out.exists()
        return
    assert _train(out, "--log", str(log)) == 2
    err = capsys.readouterr().err
    assert says in err and err.strip().count("\n") == 0 and not out.exists()
