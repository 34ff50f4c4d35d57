"""Hostile GGUF headers: every length and count is checked against the file's size before
anything is allocated, malformed headers are never handed to another parser, and tensors
may not share bytes or a metadata key be stored twice.  Each file is tiny; each refusal is one line, within seconds and
without a large allocation."""

from __future__ import annotations

import resource
import struct
import time

import pytest

import malformed as bad
from companion.adapters import read_qk
from companion.base.errors import CompanionError

pytest.importorskip("gguf")


def _header(kvs: bytes, n_kv: int, n_tensors: int = 0, tensor_infos: bytes = b"") -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + kvs + tensor_infos


def _kv_string(key: str, value: str) -> bytes:
    k, v = key.encode(), value.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<I", 8) + struct.pack("<Q", len(v)) + v


def _refused_fast(path, match):
    t0 = time.monotonic()
    peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CompanionError, match=match):
        read_qk(path, progress=False)
    assert time.monotonic() - t0 < 10
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak0) / 1024
    assert grown_mb < 200, grown_mb


def test_a_tiny_file_declaring_a_huge_array_is_refused_without_allocating_it(tmp_path):
    k = b"tokenizer.ggml.tokens"
    kv = struct.pack("<Q", len(k)) + k + struct.pack("<I", 9) + struct.pack("<IQ", 8, 1 << 22)
    path = tmp_path / "x.gguf"
    path.write_bytes(_header(_kv_string("general.architecture", "llama") + kv, 2))
    assert path.stat().st_size < 200
    _refused_fast(path, "more bytes")


@pytest.mark.parametrize("length", [1 << 62, (1 << 64) - 1])
def test_a_string_length_near_two_to_the_64_is_one_line(tmp_path, length):
    path = tmp_path / "x.gguf"
    path.write_bytes(_header(struct.pack("<Q", length) + b"general.architecture", 1))
    _refused_fast(path, "not a readable GGUF")


def test_counts_of_entries_beyond_the_file_are_refused(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 1 << 40))
    _refused_fast(path, "more than a file")


def test_an_alignment_given_as_an_array_is_one_line(tmp_path):
    k = b"general.alignment"
    kv = struct.pack("<Q", len(k)) + k + struct.pack("<I", 9) + struct.pack("<IQ", 4, 1) + struct.pack("<I", 32)
    path = tmp_path / "x.gguf"
    path.write_bytes(_header(_kv_string("general.architecture", "llama") + kv, 2))
    _refused_fast(path, "general.alignment")


def test_tensors_whose_data_overlap_are_refused(tmp_path):
    import gguf

    good = bad.tiny_gguf(tmp_path / "ok.gguf", layers=2)
    reader = gguf.GGUFReader(str(good))
    offsets = {t.name: int(t.data_offset) for t in reader.tensors}
    assert len(read_qk(good, progress=False).layers) == 2
    # point blk.1.attn_q at blk.0.attn_q's bytes: rewrite its offset field in the header
    data = bytearray(good.read_bytes())
    start = int(reader.data_offset)
    rel0 = offsets["blk.0.attn_q.weight"] - start
    rel1 = offsets["blk.1.attn_q.weight"] - start
    needle = struct.pack("<Q", rel1)
    name = b"blk.1.attn_q.weight"
    at = data.index(name) + len(name)
    pos = data.index(needle, at)
    data[pos:pos + 8] = struct.pack("<Q", rel0)
    path = tmp_path / "overlap.gguf"
    path.write_bytes(bytes(data))
    _refused_fast(path, "overlapping their data")   # not "overlap": the file is named so


# ---------------------------------------------------------------- a metadata key stored twice


def _gguf_string(s: str) -> bytes:
    return struct.pack("<Q", len(s.encode())) + s.encode()


def test_a_gguf_metadata_key_stored_twice_is_refused(tmp_path):
    from companion.adapters.gguf_file import GGUFSource

    def kv(key, value):
        return _gguf_string(key) + struct.pack("<I", 8) + _gguf_string(value)

    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + kv("general.architecture", "llama")
                     + kv("general.architecture", "gpt2") + b"\0" * 64)
    with pytest.raises(CompanionError, match="general.architecture' is stored twice"):
        GGUFSource(path)


def test_a_gguf_key_stored_twice_is_refused_on_the_reference_readers_path_too(tmp_path, monkeypatch):
    from companion.adapters import gguf_file
    from companion.adapters.gguf_file import GGUFSource

    def kv(key, value):
        return _gguf_string(key) + struct.pack("<I", 8) + _gguf_string(value)

    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + kv("general.architecture", "llama")
                     + kv("general.architecture", "gpt2") + b"\0" * 64)

    def not_mine(p):   # as for a big-endian file: the header goes to gguf.GGUFReader
        raise ValueError("GGUF version (big-endian or unsupported)")

    monkeypatch.setattr(gguf_file, "parse_gguf_header", not_mine)
    with pytest.raises(CompanionError, match="general.architecture.*twice|[Dd]uplicate general.architecture"):
        GGUFSource(path)
