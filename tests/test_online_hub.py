"""The online path, for real, against a hub imitation on 127.0.0.1 (no network needed).

``HF_ENDPOINT`` points at :class:`local_hub.LocalHub`, which serves a sharded safetensors
checkpoint written by ``transformers`` with range requests.  ``companion score owner/name``
and ``companion survey --online`` must give the scores of the local read, fetching little
more than the query/key bytes; without a hub they must give up within seconds.
"""

from __future__ import annotations

import time

import pandas as pd
import pytest
import torch

import malformed as bad
from companion.adapters import read_qk
from companion.cli import main
from local_hub import LocalHub, SilentServer

REPO = "someone/tiny-llama"


@pytest.fixture()
def online(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("companion.adapters.hub._hub_offline", lambda: False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    return monkeypatch


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """A LLaMA big enough that q/k bytes dwarf config, index and headers (about 0.9 MB)."""
    folder = tmp_path_factory.mktemp("hub") / "tiny-llama"
    torch.manual_seed(0)
    bad.tiny_llama(folder, layers=4, hidden=128, heads=8, kv=4, max_shard_size="200KB")
    assert len(list(folder.glob("model-*.safetensors"))) >= 3
    return folder


def _qk_bytes(ckpt):
    return sum((layer.Wq.numel() + layer.Wk.numel()) * 4 for layer in ckpt.layers)


def test_score_of_a_hub_id_equals_the_local_read_and_fetches_only_q_and_k(
        online, sharded, tmp_path, capsys):
    local = read_qk(sharded, progress=False)
    with LocalHub({REPO: sharded}) as hub:
        online.setenv("HF_ENDPOINT", hub.url)
        remote = read_qk(REPO, progress=False)
        served_read = hub.bytes_served
        out = tmp_path / "hub.csv"
        assert main(["score", REPO, "--out", str(out), "--quiet"]) == 0
    for a, b in zip(remote.layers, local.layers, strict=True):
        assert torch.equal(a.Wq, b.Wq) and torch.equal(a.Wk, b.Wk)
    assert served_read <= 1.05 * _qk_bytes(local)
    assert remote.bytes_read == served_read  # the source counts what the server sent
    assert remote.n_parameters == local.n_parameters
    local_csv = tmp_path / "local.csv"
    assert main(["score", str(sharded), "--out", str(local_csv), "--quiet"]) == 0
    a, b = pd.read_csv(out), pd.read_csv(local_csv)
    pd.testing.assert_frame_equal(a.drop(columns="model"), b.drop(columns="model"))


def test_survey_online_against_the_local_hub_equals_the_local_survey(online, sharded, tmp_path):
    from test_survey import CATALOG_HEADER, _entry

    row = _entry("tiny-llama", REPO, "", role="decoder", attention="gqa 8/4", d_model=128)
    catalog = tmp_path / "catalog.csv"
    pd.DataFrame([row], columns=CATALOG_HEADER).to_csv(catalog, index=False)
    with LocalHub({REPO: sharded}) as hub:
        online.setenv("HF_ENDPOINT", hub.url)
        assert main(["survey", "--online", "--catalog", str(catalog), "--out",
                     str(tmp_path / "online"), "--quiet"]) == 0
        served = hub.bytes_served
    local = tmp_path / "local"
    local.mkdir()
    (local / "tiny-llama").symlink_to(sharded)
    assert main(["survey", "--offline", "--catalog", str(catalog), "--local-dir", str(local),
                 "--out", str(tmp_path / "offline"), "--quiet"]) == 0
    a = pd.read_csv(tmp_path / "online" / "scores.csv")
    b = pd.read_csv(tmp_path / "offline" / "scores.csv")
    assert len(a) == len(b) > 0
    assert (a["source_kind"] == "hub").all()
    pd.testing.assert_frame_equal(a[["component", "layer", "head", "pairing", "symmetry",
                                     "directionality"]],
                                  b[["component", "layer", "head", "pairing", "symmetry",
                                     "directionality"]])
    assert served <= 1.05 * _qk_bytes(read_qk(sharded, progress=False))


def test_a_hub_id_the_hub_does_not_know_is_one_line(online, sharded, capsys):
    with LocalHub({REPO: sharded}) as hub:
        online.setenv("HF_ENDPOINT", hub.url)
        capsys.readouterr()
        assert main(["score", "someone/not-there"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "404" in err[0] and "someone/not-there" in err[0]


def test_a_silent_hub_fails_fast_with_one_line(online, capsys):
    with SilentServer() as silent:
        online.setenv("HF_ENDPOINT", silent.url)
        capsys.readouterr()
        t0 = time.perf_counter()
        rc = main(["score", REPO])
        elapsed = time.perf_counter() - t0
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1
    assert "cannot reach the hub" in err[0] and "HF_HUB_OFFLINE" in err[0]
    assert elapsed < 10  # one probe with a 3 s timeout, not retries over minutes


def test_a_survey_without_a_hub_gives_up_after_one_probe(online, tmp_path, capsys):
    from test_survey import CATALOG_HEADER, _entry

    rows = [_entry(f"m{i}", f"someone/model-{i}", "") for i in range(6)]
    catalog = tmp_path / "catalog.csv"
    pd.DataFrame(rows, columns=CATALOG_HEADER).to_csv(catalog, index=False)
    with SilentServer() as silent:
        online.setenv("HF_ENDPOINT", silent.url)
        online.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
        t0 = time.perf_counter()
        assert main(["survey", "--catalog", str(catalog), "--out", str(tmp_path / "s"),
                     "--quiet"]) == 0
        elapsed = time.perf_counter() - t0
    status = pd.read_csv(tmp_path / "s" / "status.csv")
    assert (status["status"] == "unavailable").all()
    assert status["reason"].str.contains("cannot reach the hub").all()
    assert elapsed < 15  # six models, one 3 s probe


def test_a_hub_index_naming_a_file_outside_the_repository_is_refused(online, tmp_path, capsys):
    folder = tmp_path / "repo"
    bad.sharded_llama(folder)
    bad.edit_index(folder, lambda idx: idx["weight_map"].__setitem__(bad.Q0, "../../etc/passwd"))
    with LocalHub({REPO: folder}) as hub:
        online.setenv("HF_ENDPOINT", hub.url)
        capsys.readouterr()
        assert main(["score", REPO]) != 0
        asked = [path for _, path, _ in hub.requests]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "outside the model folder" in err[0]
    assert not any("passwd" in a for a in asked)


def test_a_malformed_header_on_the_hub_is_one_line(online, tmp_path, capsys):
    folder = tmp_path / "repo"
    bad.tiny_llama(folder)
    header, data = bad.MALFORMED_HEADERS["overlapping offsets"]
    bad.write_raw_safetensors(folder / "model.safetensors", header, data)
    with LocalHub({REPO: folder}) as hub:
        online.setenv("HF_ENDPOINT", hub.url)
        capsys.readouterr()
        assert main(["score", REPO]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a valid safetensors file" in err[0]


def _score_against(server, online, capsys):
    """``companion score REPO`` against ``server`` as the hub: its exit status, its stderr
    lines, the seconds it took and the server's address."""
    with server as hub:
        online.setenv("HF_ENDPOINT", hub.url)
        capsys.readouterr()
        t0 = time.perf_counter()
        rc = main(["score", REPO])
        elapsed = time.perf_counter() - t0
    return rc, capsys.readouterr().err.strip().splitlines(), elapsed, hub.url


@pytest.mark.parametrize("behaviour, words", [("trickle", "cannot reach the hub"),
                                              ("terabyte", "announces a body of 1,000,000,000,000 bytes"),
                                              ("endless", "sent more than")])
def test_a_hostile_hub_is_one_line_within_seconds_and_bounded_memory(online, capsys, behaviour, words):
    import resource

    from local_hub import HostileServer

    peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rc, err, elapsed, _ = _score_against(HostileServer(behaviour), online, capsys)
    assert rc != 0 and len(err) == 1, err
    assert words in err[0], err[0]
    assert elapsed < 20, elapsed           # the probe's 3 s, not a byte every 2 s for minutes
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak0) / 1024
    assert grown_mb < 300, grown_mb        # 64 MiB of body at most, never a terabyte


@pytest.mark.parametrize("kw, words", [
    ({"range_shift": 8}, "another offset"),
    ({"range_header": ""}, "without a valid Content-Range"),
    ({"range_header": "bytes lots"}, "without a valid Content-Range"),
])
def test_a_mirror_whose_range_answers_are_not_the_bytes_asked_for_is_refused(online, sharded, capsys, kw, words):
    """A 206 with the right byte count from another offset would be read as the tensor asked
    for (round 4 measured symmetry +1.0000 for a true -0.1326): its Content-Range is checked."""
    with LocalHub({REPO: sharded}, **kw) as hub:
        online.setenv("HF_ENDPOINT", hub.url)
        capsys.readouterr()
        assert main(["score", REPO, "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


@pytest.mark.parametrize("behaviour, words", [
    ("slow-headers", "no answer within 3 s"),        # one header byte a second: each wait is short
    ("slow-redirects", "no answer within 3 s"),      # ten one-second redirects: 3 s in all, not 10
    ("redirect-loop", "redirect loop"),             # not "HTTP 302, try again later"
    ("deep-json", "malformed model information"),   # not a RecursionError traceback
    ("redirect-endless-body", "redirect loop"),     # its endless body is never read
])
def test_one_deadline_for_a_whole_hub_request_and_its_redirects(online, capsys, behaviour, words):
    from local_hub import HostileServer

    rc, err, elapsed, url = _score_against(HostileServer(behaviour), online, capsys)
    assert rc != 0 and len(err) == 1, err
    assert words in err[0], err[0]
    if behaviour == "redirect-loop":
        assert url in err[0] and "HF_ENDPOINT" in err[0]
    assert elapsed < 6, elapsed                      # the probe's 3 s for everything


@pytest.mark.parametrize("name", ["config.json", "model.safetensors.index.json"])
def test_a_hub_file_of_json_nested_too_deep_is_one_line(online, tmp_path, capsys, name):
    folder = tmp_path / "repo"
    bad.sharded_llama(folder)
    (folder / name).write_text("[" * 100_000 + "]" * 100_000)
    with LocalHub({REPO: folder}) as hub:
        online.setenv("HF_ENDPOINT", hub.url)
        capsys.readouterr()
        assert main(["score", REPO]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and name in err[0] and REPO in err[0], err
