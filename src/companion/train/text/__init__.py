"""Corpora and tokenization: text that installs offline -> documents -> WordPiece ids ->
fixed-length blocks with a train / held-out split.

``corpora``           every corpus by name, its pinned archive checked by sha256
``english_mix``       the 11 M-token English mix: six archives assembled, its own vocabulary
``tokens``            token streams cached by content hash, vocabulary compaction
``data``              blocks for training and evaluation, the masking spec, the tokenizers
``english_mix_card``  the numbers on the English mix's card (reads the token caches)

Importing this package lists the English mix among the corpora (it registers itself, so
``corpora`` never imports the mix, which is built on it).
"""

from . import english_mix as _english_mix  # noqa: F401  (registers the corpus in corpora.CORPORA)
