"""The model zoo and its catalog: a catalog key that is not a plain name, a ``--catalog`` that
is not a CSV, an integrity sidecar that is a FIFO or not JSON text (hashed again, never a
hang or a traceback), and an installed model read from a read-only cache."""

from __future__ import annotations

import json
import os
import stat

import pytest

import malformed as bad
from deadline import within
from one_line import one_line_error
from companion.base.errors import CompanionError


# ---------------------------------------------------------------- the catalog


@pytest.mark.parametrize("key", ["../../x", "a/b", ".hidden", "x" * 200])
def test_a_catalog_key_that_is_not_a_plain_name_is_refused(tmp_path, key):
    from companion.zoo.catalog import DATA_DIR, load_catalog

    text = (DATA_DIR / "catalog.csv").read_text().splitlines()
    header, first = text[0], text[1]
    old_key = first.split(",", 1)[0]
    path = tmp_path / "catalog.csv"
    path.write_text("\n".join([header, key + first[len(old_key):]] + text[2:]) + "\n")
    with pytest.raises(ValueError, match="not a plain name"):
        load_catalog(path)


def test_survey_catalog_that_is_not_a_csv_names_the_file(tmp_path, capsys):
    bad.tiny_llama(tmp_path / "m", layers=1)
    one_line_error(["survey", "--catalog", str(tmp_path / "m" / "config.json"), "--out", str(tmp_path / "s"),
                    "--offline", "--quiet"], capsys, "config.json is not a catalog CSV")



# ---------------------------------------------------------------- integrity sidecars


def test_a_zoo_sidecar_that_is_a_fifo_is_not_read(tmp_path):
    from companion.zoo import assembly as zoo
    main = tmp_path / "model.bin"
    main.write_bytes(b"weights")
    side = tmp_path / "model.bin.sha256.json"
    os.mkfifo(side)
    digest = zoo.sha256_file(main)
    with within(20, side):
        assert zoo._marker_matches(main, digest, side) is False
        assert zoo._verified(main, digest, side, verify=False) is True     # hashed instead
    assert stat.S_ISFIFO(os.lstat(side).st_mode)


@pytest.mark.parametrize("raw", [b"\xff\xfe not text", b"[" * 100_000])
def test_a_zoo_sidecar_that_is_not_json_text_is_hashed_again_not_a_traceback(tmp_path, raw):
    from companion.zoo import assembly as zoo

    main = tmp_path / "model.bin"
    main.write_bytes(b"weights")
    side = tmp_path / "model.bin.sha256.json"
    side.write_bytes(raw)
    digest = zoo.sha256_file(main)
    assert zoo._marker_matches(main, digest, side) is False
    assert zoo._verified(main, digest, side, verify=False) is True
    assert json.loads(side.read_text())["sha256"] == digest      # the record written anew



# ---------------------------------------------------------------- a read-only cache


def test_an_installed_zoo_model_is_read_from_a_read_only_cache(monkeypatch):
    from companion.zoo import registry as zoo
    name = "paraphrase-minilm-l3"
    assert zoo.zoo_model(name).assembly == "installed"

    def read_only():
        raise CompanionError("the cache folder /ro cannot be used (not writable); set COMPANION_CACHE "
                             "to a writable folder.")

    monkeypatch.setattr("companion.zoo.assembly._markers_dir", read_only)
    path = zoo.fetch(name, verify=False)
    assert path.exists()
