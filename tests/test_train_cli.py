"""``companion train`` writes a run directory with its history and provenance."""

import argparse
import json

import pandas as pd
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


def test_resume_continues_an_interrupted_run_and_refuses_another_config(tmp_path, capsys):
    from companion.train.loop import TrainConfig, train
    from companion.train.data import token_data_for_corpus

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

    from companion.train.runs import load_runs

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
