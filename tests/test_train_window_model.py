"""The count-model yardstick of E37 agrees with a direct count, and refuses what it cannot do."""

from collections import Counter

import numpy as np
import pytest

from companion.base.errors import CompanionError
from companion.train.models.window_model import char_joined_ids, masked_window_cross_entropy


def _by_counting(train, held, w, vocab):
    """The same interpolated model, written with dictionaries over explicit tuples."""
    uni, ctx, joint = Counter(), Counter(), Counter()
    for s in train:
        uni.update(s.tolist())
        for i in range(w, len(s) - w):
            c = tuple(s[i - w:i]) + tuple(s[i + 1:i + 1 + w])
            ctx[c] += 1
            joint[c, s[i]] += 1
    total = sum(uni.values())
    nll = []
    for s in held:
        for i in range(w, len(s) - w):
            c = tuple(s[i - w:i]) + tuple(s[i + 1:i + 1 + w])
            p_uni = (uni[s[i]] + 1) / (total + vocab + 1)
            n = ctx[c]
            lam = n / (n + 1)
            nll.append(-np.log(lam * (joint[c, s[i]] / n if n else 0) + (1 - lam) * p_uni))
    return float(np.mean(nll))


@pytest.mark.parametrize("w", [0, 1, 2, 3])
def test_the_vectorised_counts_equal_a_direct_count(w):
    r = np.random.default_rng(w)
    # a repetitive source so that contexts recur, plus noise so that some do not
    base = r.integers(0, 5, size=40)
    train = [np.concatenate([base, r.integers(0, 7, size=30), base]) for _ in range(6)]
    held = [np.concatenate([base[:25], r.integers(0, 7, size=15)]) for _ in range(3)]
    assert masked_window_cross_entropy(train, held, w, 7) == pytest.approx(_by_counting(train, held, w, 7), rel=1e-12)


def test_a_deterministic_source_is_predicted_almost_for_free_with_context():
    seq = np.tile(np.arange(6), 200)
    ce0 = masked_window_cross_entropy([seq], [seq[:300]], 0, 6)
    ce1 = masked_window_cross_entropy([seq], [seq[:300]], 1, 6)
    assert ce0 == pytest.approx(np.log(6), rel=0.01)
    assert ce1 < 0.01


def test_characters_are_joined_as_an_uncased_tokenizer_sees_them():
    (ids,), vocab = char_joined_ids(["Ab c\nA"])
    assert [k for k, _ in sorted(vocab.items(), key=lambda kv: kv[1])] == ["a", "b", "c"]
    assert ids.tolist() == [0, 1, 2, 0]
    (held,), _ = char_joined_ids(["az"], vocab)
    assert held.tolist() == [0, 3]          # an unseen character gets the one shared id


def test_bad_input_is_refused_in_one_line():
    seq = np.arange(5)
    with pytest.raises(CompanionError, match="window must be >= 0"):
        masked_window_cross_entropy([seq], [seq], -1, 5)
    with pytest.raises(CompanionError, match="ids must lie"):
        masked_window_cross_entropy([seq], [seq], 1, 3)
    with pytest.raises(CompanionError, match="no held-out position"):
        masked_window_cross_entropy([seq], [seq[:2]], 2, 5)
    with pytest.raises(CompanionError, match="no training tokens"):
        masked_window_cross_entropy([], [seq], 1, 5)
