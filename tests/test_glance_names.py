"""The "At a glance" figure names its rows as the paper names the claims, never by the page
anchors of their evidence (e-conv-hull, ro-beta, f3-gate twice, one empty)."""

from __future__ import annotations

import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.book.figures.verdicts import claim_names, status_overview
from companion.book.tables import CLAIM_NAMES


def _rows():
    keys = ["prop_2_1", "prop_2_2", "cor_s1_13", "training_symmetry", "training_directionality", "objective_swap"]
    # the anchors the verdict table carries in ``label``: one shared by two claims, one empty
    labels = ["e-conv-hull", "ro-beta", "ots-cor-s113", "f3-gate", "f3-gate", ""]
    claims = ["Prop. 2.1: order", "Prop. 2.2: rank one", "Cor. S1.13: spreads", "Fig. 3a: symmetry",
              "Fig. 3b: directionality", "Sec. 4 read causally: swap"]
    return pd.DataFrame({"key": keys, "label": labels, "claim": claims,
                         "status": ["holds"] * 6, "kind": ["mathematical"] * 3 + ["empirical"] * 3})


def test_the_overview_rows_are_the_claims_paper_names():
    v = _rows()
    fig = status_overview(v)
    ax = fig.axes[0]
    shown = [t.get_text() for _, t in sorted(zip(ax.get_yticks(), ax.get_yticklabels()), key=lambda p: -p[0])]
    assert shown == [CLAIM_NAMES[k] for k in v["key"]]
    assert not set(shown) & set(v["label"]) and len(set(shown)) == len(shown) and all(shown)


def test_a_claim_without_a_key_is_named_by_its_text_and_two_of_a_name_are_refused():
    v = _rows().drop(columns=["key"])
    assert claim_names(v)[:3] == ["Prop. 2.1", "Prop. 2.2", "Cor. S1.13"]
    with pytest.raises(CompanionError, match=r"named twice \(\['Prop. 2.1'\]\)"):
        claim_names(pd.DataFrame({"claim": ["Prop. 2.1: a", "Prop. 2.1: b"], "status": ["holds"] * 2}))
    with pytest.raises(CompanionError, match=r"without a name \(rows \[0\]\)"):
        claim_names(pd.DataFrame({"claim": [": a"], "status": ["holds"]}))


def test_the_real_verdict_table_names_every_row_once():
    """On the verdict table's own columns (without computing it): every key has a paper name."""
    from companion.judge import claims

    keys = [fn.__name__ for fn in claims.VERDICTS]
    names = claim_names(pd.DataFrame({"key": keys, "claim": [""] * len(keys)}))
    assert len(set(names)) == len(keys)
