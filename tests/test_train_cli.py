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
