"""The explorer's records: the heatmap is the block-averaged form, the factored head records
equal the records of the formed matrices, the scores are the package's, and the page
fragment names no outside address."""

import base64
import re

import numpy as np
import torch

from companion.book.explorer import block_means, explorer_html, form_summaries, head_summaries
from companion.core.scores import directionality_score, symmetry_score


def _heat(rec):
    q = np.frombuffer(base64.b64decode(rec["heat"]), dtype=np.int8).astype(float)
    return (q * rec["scale"] / 127).reshape(rec["n"], rec["n"])


def test_block_means_by_loops():
    M = torch.randn(10, 10, dtype=torch.float64)
    B = block_means(M, 4).numpy()
    edges = [0, 3, 5, 8, 10]            # floor(i * 4 / 10) cuts 10 indices into 3, 2, 3, 2
    want = [[M[a:b, c:e].mean().item() for c, e in zip(edges, edges[1:])] for a, b in zip(edges, edges[1:])]
    assert np.allclose(B, want)


def test_record_matches_an_independent_computation():
    g = torch.Generator().manual_seed(0)
    M = torch.randn(48, 48, generator=g, dtype=torch.float64)
    M[:, 3] *= 6
    rec = form_summaries(M[None], cells=12)[0]
    assert np.allclose(_heat(rec), block_means(M, 12).numpy(), atol=rec["scale"] / 127)
    assert np.isclose(rec["symmetry"], symmetry_score(M), atol=1e-4)
    assert np.isclose(rec["directionality"], directionality_score(M), atol=1e-4)
    assert np.argmax(rec["cols"]) == 3 * len(rec["cols"]) // 48  # the large column shows in its block


def test_factored_heads_equal_formed_heads():
    g = torch.Generator().manual_seed(1)
    Q, K = torch.randn(3, 4, 40, generator=g), torch.randn(3, 4, 40, generator=g)
    fact = head_summaries(Q, K, cells=8)
    formed = form_summaries(Q.double().transpose(-1, -2) @ K.double(), cells=8)
    for a, b in zip(fact, formed):
        assert np.allclose(_heat(a), _heat(b), atol=2 * a["scale"] / 127)
        assert np.allclose(a["rows"], b["rows"], rtol=1e-6) and np.allclose(a["cols"], b["cols"], rtol=1e-6)
        assert np.isclose(a["symmetry"], b["symmetry"], atol=1e-4)


def test_fragment_has_no_outside_address():
    g = torch.Generator().manual_seed(2)
    rec = form_summaries(torch.randn(1, 16, 16, generator=g, dtype=torch.float64), cells=8)[0]
    html = explorer_html({"m": {"encoder": [{"index": 0, "all": rec, "heads": [rec], "n_heads": 1, "d": 16}]}})
    assert not re.search(r"(src|href)=\"(https?:)?//|https?://", html)
