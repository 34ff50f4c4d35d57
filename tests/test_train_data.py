"""Corpus, tokenizer, held-out split and the dataset loaders (tested on local files)."""

import json

import pytest
import torch

from companion.train.text.data import build_token_data, default_corpus, load_texts, load_tokenizer


@pytest.fixture(scope="module")
def corpus():
    return default_corpus()


def test_default_corpus_is_english_prose_without_code(corpus):
    words = " ".join(corpus).lower().split()
    assert len(words) > 40_000
    common = {"the", "of", "is", "a", "and", "to"}
    assert sum(w in common for w in words) / len(words) > 0.1
    # indented code is dropped; a few unindented interactive examples remain
    assert sum(">>>" in p for p in corpus) / len(corpus) < 0.05


def test_wordpiece_tokenizer_is_bert_uncased():
    tok = load_tokenizer()
    assert len(tok) == 30522
    assert tok.convert_tokens_to_ids("[MASK]") == 103
    assert tok.tokenize("Attention Heads") == ["attention", "heads"]


def test_tokenizer_can_be_pointed_at_a_copied_folder(tmp_path, monkeypatch):
    folder = tmp_path / "tok"
    load_tokenizer().save_pretrained(folder)
    monkeypatch.setenv("COMPANION_TOKENIZER", str(folder))
    tok = load_tokenizer()
    assert tok.name_or_path == str(folder)
    assert tok.tokenize("Attention Heads") == ["attention", "heads"]


def test_missing_tokenizer_folder_is_named_in_the_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_tokenizer(str(tmp_path / "no-such-folder"))


def test_held_out_blocks_come_from_other_documents(corpus):
    texts = corpus[:200]
    data = build_token_data(texts, seq_len=32, top_k=None)
    tok = load_tokenizer()
    eval_docs = [t for i, t in enumerate(texts) if i % 10 == 9]
    n_eval_tokens = sum(len(tok(t, add_special_tokens=False)["input_ids"]) + 1 for t in eval_docs)
    assert data.eval.numel() == (n_eval_tokens // 32) * 32
    assert data.train.shape[1] == data.eval.shape[1] == 32
    assert data.vocab_size == 30522 and data.masking.mask_id == 103


def test_compact_vocabulary_keeps_specials_and_maps_rare_ids_to_unk(corpus):
    data = build_token_data(corpus[:200], seq_len=32, top_k=100)
    assert data.vocab_size == 105
    assert data.kept_ids[:5] == [0, 100, 101, 102, 103]  # PAD UNK CLS SEP MASK
    assert int(data.train.tensor().max()) < 105
    assert (data.train.tensor() == 1).float().mean() > 0.05  # [UNK] stands for everything rarer
    assert data.masking.first_regular_id == 5


def test_local_files_in_the_paper_datasets_formats(tmp_path):
    wiki = tmp_path / "wiki.jsonl"
    wiki.write_text("\n".join(json.dumps({"id": i, "title": "t", "text": f"Article {i} text."})
                              for i in range(3)))
    jig = tmp_path / "train.csv"
    jig.write_text('id,comment_text,toxic\n1,"Nice edit, thanks.",0\n2,"Another comment",0\n')
    red = tmp_path / "redpajama.jsonl"
    red.write_text(json.dumps({"raw_content": "Some web page.", "doc_id": "x"}) + "\n")
    assert load_texts(str(wiki)) == [f"Article {i} text." for i in range(3)]
    assert load_texts(str(jig), text_field="comment_text") == ["Nice edit, thanks.", "Another comment"]
    assert load_texts(str(red), text_field="raw_content") == ["Some web page."]


def test_hub_datasets_fail_clearly_when_offline(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(ValueError, match="offline"):
        load_texts("wikimedia/wikipedia", limit=10)
    with pytest.raises(ValueError, match="Kaggle"):
        load_texts("jigsaw")
    with pytest.raises(ValueError, match="neither a local file"):
        load_texts("no-such-corpus")


def test_too_few_documents_for_a_split_is_a_clear_error():
    with pytest.raises(ValueError, match="held-out"):
        build_token_data(["one short document here"] * 3, seq_len=4, top_k=10)


@pytest.mark.parametrize("meta", [[1, 2], {"source": "x"}, {"source": {}, "train_tokens": "many", "eval_tokens": 0,
                                                              "dtype": "uint16"},
                                  {"source": {}, "train_tokens": 10, "eval_tokens": 0, "dtype": "object"}])
def test_a_token_cache_meta_of_the_wrong_shape_is_one_clear_error(tmp_path, meta):
    import json as _json

    from companion.base.errors import CompanionError
    from companion.train.text.tokens import _load

    (tmp_path / "meta.json").write_text(_json.dumps(meta))
    with pytest.raises(CompanionError, match="delete the folder and it is rebuilt"):
        _load(tmp_path, {})
