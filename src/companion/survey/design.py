"""The survey's registered design and what it can reach (Sec. 3, Fig. 2; Tables S2/S3).

Sec. 3 and Fig. 2 of the paper say that pretrained encoders are more symmetric than decoders
and decoders more column-dominant (more negative directionality); Tables S2/S3 print each
model's median over layers.  The book judges the claim by an exact one-sided Mann-Whitney
test over models, one per score, read in the rules' ``evidence`` family.  This module fixes,
before any held model (:data:`companion.zoo.registry.HELD`) is scored, which checkpoints
count and as what (:func:`units`), and checks by simulation what the test can then decide
(:func:`design_check`).  It reads registry metadata and the published tables only: no weights.

The rule for a unit (:data:`REGISTERED`): a decoder is causal self-attention trained to
predict the next token, with or without an encoder beside it; an encoder is bidirectional
self-attention trained with a masked or contrastive objective; only self-attention over text
tokens counts (Fig. 2 and Tables S2/S3 survey language models; vision and audio: Figs. S1-S2);
a quantised copy of a model already counted is not a new unit; the checkpoints of one base
family (sizes, fine-tunes) are ONE unit whose value is the median of its members' per-model
medians.  One unit per family is the registered count because the sizes of one family share
their data and recipe (and often their initial weights), so they are not independent
evidence; every checkpoint as its own unit (:data:`EVERY_CHECKPOINT`) is reported beside.

``python -m companion.survey.design --write`` writes ``data/survey_design.csv``.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..base.errors import CompanionError
from ..base.phrasing import finite   # a number that is no NaN, no infinity, no bool
from ..base.paths import DATA_DIR

__all__ = ["UnitRule", "REGISTERED", "EVERY_CHECKPOINT", "MEMBERS", "catalog_rows", "units", "unit_members",
           "unit_values", "member_medians", "registered_contrast", "survey_roles", "exact_p", "design_check", "published_contrast", "evidence_alpha", "design_table", "main"]

DESIGN_CSV, SEED, DRAWS = DATA_DIR / "survey_design.csv", 20261206, 20000
TODAY = (9, 3)   # the verdict of rules v4: every text encoder of the zoo against its 3 decoders


@dataclass(frozen=True)
class UnitRule:
    """Which stacks count and how they are grouped (see the module docstring)."""
    per_family: bool = True
    encoder_objectives: tuple[str, ...] = ("masked", "contrastive")
    decoder_objectives: tuple[str, ...] = ("next-token",)
    tokens: tuple[str, ...] = ("text",)


REGISTERED = UnitRule()
EVERY_CHECKPOINT = UnitRule(per_family=False)

#: For each zoo and held model: its base family, each stack's training objective and the tokens its
#: self-attention runs over, and the model it is a quantised copy of.  The stack's kind (encoder,
#: decoder, none) is the zoo's own ``kinds``; these are what the rule needs beside it.
MEMBERS: dict[str, tuple[str, dict[str, tuple[str, str]], str | None]] = {
    # microsoft/MiniLM-L12-H384-uncased cut to 6 layers (every second) and to 3 (layers 3, 7, 11),
    # then contrastive sentence-pair training; sre-embedding fine-tunes all-MiniLM-L6-v2
    **{n: ("MiniLM", {"encoder": ("contrastive", "text")}, None)
       for n in ("all-minilm-l6-v2", "sre-embedding", "paraphrase-minilm-l3")},
    "all-minilm-l6-v2-int8": ("MiniLM", {"encoder": ("contrastive", "text")}, "all-minilm-l6-v2"),
    **{n: (f, {"encoder": ("contrastive", "text")}, None) for n, f in (
        ("all-mpnet-base-v2", "MPNet"), ("multilingual-e5-small", "multilingual E5"),
        ("nomic-embed-text-v1.5", "Nomic BERT"))},
    "kokoro-albert": ("PL-BERT", {"encoder": ("masked", "text")}, None),   # masked phoneme LM
    # trained from scratch to translate (a distilled student): its encoder saw no masked objective
    **{f"bergamot-{p}": ("Bergamot tiny", {"encoder": ("translation", "text"), "decoder": ("translation", "text")},
                         None) for p in ("en-pt", "pt-en")},
    **{f"whisper-{s}": ("Whisper", {"encoder": ("transcription", "audio"), "decoder": ("next-token", "text")},
                        None) for s in ("tiny.en", "base")},
    "dinov2-small": ("DINOv2", {"encoder": ("masked", "image")}, None),   # iBOT's masked patches
    **{n: (f, {"decoder": ("next-token", "text")}, None) for n, f in (
        ("smollm2-135m", "SmolLM2"), ("gemma-3-270m", "Gemma"), ("qwen2.5-coder-0.5b", "Qwen2"),
        ("qwen2.5-coder-1.5b", "Qwen2"))},
    # seq-KD fine-tuning of flan-t5-small, whose encoder was pretrained by span corruption
    "t5-small-titler": ("T5", {"encoder": ("masked", "text"), "decoder": ("next-token", "text")}, None),
}


def catalog_rows(held: bool = True) -> pd.DataFrame:
    """One row per self-attention stack of the zoo (and of :data:`HELD` with ``held``): ``name,
    component, member, kind, modality, held, family, objective, tokens, copy_of``.  A model the
    design has no entry for is refused: the rule cannot decide what it counts as."""
    from ..zoo.registry import HELD, ZOO

    rows, by_file = [], {}
    for m in list(ZOO.values()) + (list(HELD.values()) if held else []):
        digest = str(getattr(m, "sha256", "") or "").lower()
        if digest and (other := by_file.setdefault(digest, m.name)) != m.name:
            # one checkpoint under two names would be counted as two models
            raise CompanionError(f"{other!r} and {m.name!r} are one file (sha256 {digest[:12]}...): the design would count "
                                 "one checkpoint twice; keep one name for it.")
        if m.name not in MEMBERS or not m.kinds:
            raise CompanionError(f"the survey's design has no family and objective for {m.name!r}: the rule cannot "
                                 "decide what it counts as; add it to companion.survey.design.MEMBERS.")
        family, stacks, copy_of = MEMBERS[m.name]
        for component, _ in m.kinds:
            objective, tokens = stacks.get(component, ("", ""))
            rows.append(dict(name=m.name, component=component, kind=m.kind_of(component),
                             member=m.name if len(m.kinds) == 1 else f"{m.name}:{component}",
                             modality=m.modality, held=m.name in HELD, family=family, objective=objective,
                             tokens=tokens, copy_of=copy_of or ""))
    return pd.DataFrame(rows)


def units(catalog_rows: pd.DataFrame, rule: UnitRule = REGISTERED) -> pd.DataFrame:
    """``catalog_rows`` with ``side`` (encoder, decoder or empty), ``unit`` and ``reason`` (why a
    stack is left out) under ``rule``: one unit per base family, or one per checkpoint."""
    need = ["name", "component", "member", "kind", "family", "objective", "tokens", "copy_of"]
    if missing := [c for c in need if c not in getattr(catalog_rows, "columns", ())]:
        raise CompanionError(f"the design's rows lack the columns {missing}; pass catalog_rows()' table.")
    if twice := sorted(set(catalog_rows.loc[catalog_rows["member"].duplicated(), "member"].astype(str))):
        # a member listed twice weighed twice in its unit's median
        raise CompanionError(f"the design's rows list {', '.join(twice)} more than once; list each stack once.")
    out = catalog_rows.copy()
    root = _copy_roots(out)
    side, unit, reason, counted_names = [], [], [], set()
    for r in out.itertuples():
        why = ""
        if r.kind not in ("encoder", "decoder", "none"):
            raise CompanionError(f"{r.name}'s {r.component} stack has kind {r.kind!r}; the rule cannot count it.")
        if r.kind == "none":
            why = "no self-attention"
        elif r.tokens not in rule.tokens:
            why = f"self-attention over {r.tokens} tokens, not a language model's (Figs. S1-S2, not Fig. 2)"
        elif r.kind == "encoder" and r.objective not in rule.encoder_objectives:
            why = f"an encoder trained by {r.objective}, neither masked nor contrastive"
        elif r.kind == "decoder" and r.objective not in rule.decoder_objectives:
            why = f"a decoder trained by {r.objective}, not next-token prediction"
        side.append("" if why else r.kind)
        unit.append("" if why else r.family if rule.per_family else r.member)
        reason.append(why)
        if not why and not r.copy_of:
            counted_names.add(r.name)
    first_copy: dict = {}   # (original, component) -> the one copy counted where the original is not
    for i, r in enumerate(out.itertuples()):
        if not (side[i] and r.copy_of):
            continue
        base = root[r.name]   # a copy of a copy is a copy of the first model (it was counted as a new one)
        if base in counted_names:
            side[i], unit[i], reason[i] = "", "", f"a quantised copy of {base}, counted once as that model"
        elif (kept := first_copy.setdefault((base, r.component), r.name)) != r.name:
            # two copies of one model absent here were two independent units
            side[i], unit[i], reason[i] = "", "", f"a second copy of {base}, counted once as {kept}"
    out["side"], out["unit"], out["reason"] = side, unit, reason
    return out


def _copy_roots(rows: pd.DataFrame) -> dict:
    """``{name: the model it is ultimately a copy of}`` (itself where it is no copy), following
    ``copy_of`` through the rows; a loop of copies is refused."""
    of = {str(n): str(c) for n, c in zip(rows["name"], rows["copy_of"]) if isinstance(c, str) and c}
    out = {}
    for name in map(str, rows["name"]):
        seen, at = [name], name
        while at in of:
            at = of[at]
            if at in seen:
                raise CompanionError(f"the design's copies loop ({' -> '.join(seen + [at])}): a quantised copy must "
                                     "name the model it was made from; fix copy_of.")
            seen.append(at)
        out[name] = at
    return out


def unit_members(table: pd.DataFrame) -> dict[str, dict[str, list[str]]]:
    """``{"encoder": {unit: [members]}, "decoder": {...}}`` from :func:`units`' table."""
    out: dict[str, dict[str, list[str]]] = {"encoder": {}, "decoder": {}}
    for r in table[table["side"] != ""].itertuples():
        out[r.side].setdefault(r.unit, []).append(r.member)
    return out


def unit_values(table: pd.DataFrame, medians: dict[str, float]) -> dict[str, dict[str, float]]:
    """Each unit's value: the median of its members' per-model medians (``medians`` by member)."""
    if missing := sorted(set(table.loc[table["side"] != "", "member"]) - set(medians)):
        raise CompanionError(f"no median for the counted members {missing}; score them first.")
    if bad := sorted(m for m in set(table.loc[table["side"] != "", "member"]) if not finite(medians[m])):
        # np.median of a NaN is NaN: the unit's value was NaN, silently
        raise CompanionError(f"the counted members {bad} have a median that is not a number "
                             f"({medians[bad[0]]!r}); score them again.")
    return {side: {u: float(np.median([medians[m] for m in ms])) for u, ms in groups.items()}
            for side, groups in unit_members(table).items()}


def member_medians(summary: pd.DataFrame, rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each zoo stack's per-model medians over layers (grouped head pairing) by design member:
    ``member, name, component, symmetry, directionality`` (NaN where ``summary``, the survey's
    :func:`companion.survey.summaries.summarize_survey`, has no row for it)."""
    from ..zoo.registry import ZOO

    if missing := [c for c in ("key", "component", "score", "pairing", "median")
                   if c not in getattr(summary, "columns", ())]:
        raise CompanionError(f"the survey's summary lacks the columns {missing}; pass summarize_survey's result.")
    rows = catalog_rows(held=False) if rows is None else rows
    key_of = {m.name: m.catalog_key or m.name for m in ZOO.values()}
    g = summary[summary["pairing"] == "grouped"]
    twice = g[g.duplicated(["key", "component", "score"])]
    if len(twice):   # groupby().first() took the first of them, silently
        r = twice.iloc[0]
        raise CompanionError(f"the survey's summary holds {r['score']} of {r['key']!r} ({r['component']}) more than "
                             "once; keep one row per model, stack and score (summarize_survey of one scores table).")
    med = g.groupby(["key", "component", "score"])["median"].first()
    out = []
    for r in rows.itertuples():
        key = key_of.get(r.name, r.name)
        out.append(dict(member=r.member, name=r.name, component=r.component,
                        **{score: float(med.get((key, r.component, score), np.nan))
                           for score in ("symmetry", "directionality")}))
    return pd.DataFrame(out)


def registered_contrast(summary: pd.DataFrame, rule: UnitRule = REGISTERED) -> dict:
    """The survey's contrast under the registered design: the units of :func:`units` (one per base
    family under :data:`REGISTERED`, one per checkpoint under :data:`EVERY_CHECKPOINT`), each
    valued at the median of its members' per-model medians (:func:`unit_values`).  The result has
    the shape of :func:`companion.survey.summaries.encoder_decoder_contrast` (``encoders``,
    ``decoders``, ``sym_enc``, ``sym_dec``, ``dir_enc``, ``dir_dec``, the extremes and orderings)
    plus ``groups`` (each unit's members), so :func:`companion.judge.empirical.survey_test` reads
    it unchanged.  A counted member with no score is refused: the design's units would change."""
    from .summaries import _with_orderings

    rows = catalog_rows(held=False)
    table = units(rows, rule)
    meds = member_medians(summary, rows)
    counted = set(table.loc[table["side"] != "", "member"])
    missing = sorted(m for m, s, d in zip(meds["member"], meds["symmetry"], meds["directionality"])
                     if m in counted and not (np.isfinite(s) and np.isfinite(d)))   # either score: min() skips a NaN
    if missing:
        raise CompanionError(f"the survey's registered design counts {', '.join(missing)}, which this build did not "
                             "score (its reader or package is missing): the units would change; install the zoo "
                             "(make env, or `companion zoo fetch all`) and score again.")
    out: dict = {}
    for score, short in (("symmetry", "sym"), ("directionality", "dir")):
        values = unit_values(table, dict(zip(meds["member"], meds[score])))
        for side, tag in (("encoder", "enc"), ("decoder", "dec")):
            out[f"{short}_{tag}"] = list(values[side].values())
            out["encoders" if side == "encoder" else "decoders"] = list(values[side])
    out["groups"] = unit_members(table)   # {"encoder": {unit: members}, "decoder": {...}}
    out.update(sym_enc_min=min(out["sym_enc"]), sym_dec_max=max(out["sym_dec"]),
               dir_enc_min=min(out["dir_enc"]), dir_dec_max=max(out["dir_dec"]),
               n_enc_dir_negative=int(sum(v < 0 for v in out["dir_enc"])))
    return _with_orderings(out)


def survey_roles(rule: UnitRule = REGISTERED) -> dict[str, str]:
    """``{zoo name: what its stacks count as}`` under ``rule``, e.g. ``"encoder: MiniLM"``,
    ``"encoder: T5; decoder: T5"`` or ``"left out (audio ...)"``; for ``companion zoo list``."""
    table, out = units(catalog_rows(held=False), rule), {}
    for name, g in table.groupby("name", sort=False):
        parts = [f"{r.side}: {r.unit}" if r.side else f"{r.component} left out ({r.reason})" for r in g.itertuples()]
        out[name] = "; ".join(parts)
    return out


def exact_p(n_enc: int, n_dec: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact one-sided Mann-Whitney p-values for every U = 0 .. n_enc * n_dec (U: the pairs with the
    encoder above), ``(p_greater, p_less)``, from scipy's exact test on samples built to have each U."""
    _check_counts(n_enc=n_enc, n_dec=n_dec)
    from scipy import stats

    u = np.arange(n_enc * n_dec + 1)
    below = np.clip(u[:, None] - n_dec * np.arange(n_enc)[None, :], 0, n_dec)  # decoders under each encoder
    x, y = below - 0.5, np.broadcast_to(np.arange(n_dec, dtype=float), (len(u), n_dec))
    return tuple(stats.mannwhitneyu(x, y, alternative=a, method="exact", axis=1).pvalue for a in ("greater", "less"))


#: The most encoder-decoder pairs the exact table is built for (a survey of model families has tens;
#: 10,000 x 10,000 units asked for terabytes and raised a MemoryError).
MAX_PAIRS = 10_000
#: The most encoder-decoder comparisons over all draws held at once (200 MB of booleans).
MAX_COMPARISONS = 200_000_000


def _check_counts(**counts) -> None:
    """Unit counts as whole numbers >= 1, at most :data:`MAX_PAIRS` pairs between them."""
    import numbers

    for name, v in counts.items():
        if not (isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))) or v < 1:
            raise CompanionError(f"the design check needs {name} as a whole number >= 1 (units on each side); got {v!r}.")
    if math.prod(int(v) for v in counts.values()) > MAX_PAIRS:
        raise CompanionError(f"{' x '.join(map(str, counts.values()))} units make more than {MAX_PAIRS:,} encoder-decoder "
                             "pairs, beyond the exact test's table here; count units (model families), not layers.")


def design_check(n_enc: int, n_dec: int, alpha_one_sided: float, shifts, draws: int = DRAWS,
                 seed: int = SEED) -> pd.DataFrame:
    """Monte Carlo over unit values, encoders ~ N(delta, 1), decoders ~ N(0, 1), one row per shift (a mapping
    label -> delta, or deltas): the chances that the claimed direction's exact p is < alpha (holds), that the
    reverse one's is (refuted), else inconclusive; ``min_p`` = 1 / C(n_enc + n_dec, n_dec); ``size``, the
    exact chance of 'holds' at delta 0 (the largest reachable p below alpha)."""
    import numbers

    for name, v in (("n_enc", n_enc), ("n_dec", n_dec), ("draws", draws), ("seed", seed)):
        whole = isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
        if not whole or v < (0 if name == "seed" else 1):
            raise CompanionError(f"the design check needs {name} as a whole number >= {0 if name == 'seed' else 1} "
                                 f"(units on both sides, draws, a seed); got {v!r}.")
    _check_counts(n_enc=n_enc, n_dec=n_dec)
    n_enc, n_dec, draws, seed = int(n_enc), int(n_dec), int(draws), int(seed)
    if draws * n_enc * n_dec > MAX_COMPARISONS:   # the draws' comparisons are held at once: a MemoryError
        raise CompanionError(f"{draws:,} draws of {n_enc} x {n_dec} units make {draws * n_enc * n_dec:,} comparisons, "
                             f"more than the {MAX_COMPARISONS:,} held at once here; draw fewer (the committed check "
                             f"draws {DRAWS:,}).")
    if not (isinstance(alpha_one_sided, numbers.Real) and 0 < alpha_one_sided < 1):   # NaN fails too
        raise CompanionError(f"alpha_one_sided must be a level in (0, 1); got {alpha_one_sided!r} (NaN read every draw "
                             "as inconclusive, 2 as holding).")
    pairs = list(shifts.items()) if isinstance(shifts, dict) else [(d, d) for d in shifts]
    if not pairs:   # an empty table without columns
        raise CompanionError("the design check needs at least one shift (a number of standard deviations, e.g. 0).")
    if bad := [d for _, d in pairs if not isinstance(d, numbers.Real) or isinstance(d, (bool, np.bool_))]:
        # '0.5' raised "Unknown format code 'g'", True was read as a shift of 1
        raise CompanionError(f"every shift must be a number of standard deviations; got {bad[0]!r}.")
    if not isinstance(shifts, dict):
        pairs = [(f"{d:+.4g}", d) for _, d in pairs]
    labels = [label for label, _ in pairs]
    if len(set(labels)) != len(labels):   # a dict of them kept one row for two shifts
        raise CompanionError(f"the shifts {labels} name one shift twice; give each shift once.")
    if not all(isinstance(d, numbers.Real) and not math.isnan(d) for _, d in pairs):
        # NaN: every comparison false, U = 0 in every draw, read as 'inconclusive'
        raise CompanionError(f"every shift must be a number of standard deviations, not NaN; got {[d for _, d in pairs]}.")
    shifts = dict(pairs)
    p_greater, p_less = exact_p(n_enc, n_dec)
    rng, rows = np.random.default_rng(seed), []
    z_enc, z_dec = rng.standard_normal((draws, n_enc)), rng.standard_normal((draws, n_dec))
    for label, delta in shifts.items():
        u = (z_enc[:, :, None] + delta > z_dec[:, None, :]).sum(axis=(1, 2))
        holds = p_greater[u] < alpha_one_sided
        refuted = (p_less[u] < alpha_one_sided) & ~holds
        rows.append(dict(shift=label, delta=float(delta), n_enc=n_enc, n_dec=n_dec,
                         min_p=1 / math.comb(n_enc + n_dec, n_dec), alpha=alpha_one_sided,
                         size=float(max([p for p in p_greater if p < alpha_one_sided], default=0.0)),
                         p_holds=float(holds.mean()), p_refuted=float(refuted.mean()),
                         p_inconclusive=float((~holds & ~refuted).mean()), draws=draws, seed=seed))
    return pd.DataFrame(rows)


def published_contrast(published: pd.DataFrame | None = None) -> dict[str, dict]:
    """Per score, the share of encoder-above-decoder pairs among the rows of Tables S2/S3 (as the
    verdict's ``survey_test(..., published=...)`` counts them: every printed row, ties as one half)
    and the standardized contrast it implies between two normal laws, delta = sqrt(2) Phi^-1(share)."""
    from scipy import stats

    from ..zoo.catalog import published_scores
    pub, out = published if published is not None else published_scores(), {}
    for table, score in (("S2", "symmetry"), ("S3", "directionality")):
        t = pub[pub["table"] == table]
        enc, dec = (t.loc[t["role"] == r, "median"].to_numpy(float) for r in ("encoder", "decoder"))
        if not enc.size or not dec.size or not (np.isfinite(enc).all() and np.isfinite(dec).all()):
            # a NaN compared as 'below every decoder' (share 0), an empty side gave a NaN share
            raise CompanionError(f"Table {table} needs finite medians for both roles; got {enc.size} encoder and "
                                 f"{dec.size} decoder rows, {int((~np.isfinite(enc)).sum() + (~np.isfinite(dec)).sum())} "
                                 "not a number; pass published_scores() (the verdict refuses the same rows).")
        share = float(np.mean((enc[:, None] > dec[None, :]) + 0.5 * (enc[:, None] == dec[None, :])))
        out[score] = dict(share=share, delta=math.sqrt(2) * float(stats.norm.ppf(share)),
                          n_enc=len(enc), n_dec=len(dec))
    return out


def evidence_alpha(rules: dict | None = None) -> float:
    """The one-sided level of one test of the rules' ``evidence`` family (half its two-sided alpha)."""
    from ..rules.rulebook import load_rules
    rules = rules if rules is not None else load_rules(check_design=False)
    try:
        alpha = rules["framework"]["families"]["evidence"]["alpha"]
    except (KeyError, TypeError):
        raise CompanionError("the rules file has no framework.families.evidence.alpha, the level the survey's "
                             "design check reads; use a rules file that names the evidence family.") from None
    try:
        level = math.nan if isinstance(alpha, bool) else float(alpha)   # True was read as the level 1
    except (TypeError, ValueError):
        level = math.nan
    if not 0 < level < 1:   # 2 became 1.0 (refused later under another name), NaN passed as NaN
        raise CompanionError(f"the rules file's framework.families.evidence.alpha is {alpha!r}; it must be a "
                             "two-sided level in (0, 1), e.g. 0.05.")
    return level / 2


def design_table(draws: int = DRAWS, seed: int = SEED, rules: dict | None = None) -> pd.DataFrame:
    """The committed check: one row per count x score x shift (no contrast, the published one, its
    mirror) at the registered count (primary), every checkpoint, and today's 9 vs 3."""
    alpha, rows, out = evidence_alpha(rules), catalog_rows(held=True), []
    counts = [("one unit per base family", True, *map(len, unit_members(units(rows, REGISTERED)).values())),
              ("every checkpoint", False, *map(len, unit_members(units(rows, EVERY_CHECKPOINT)).values())),
              ("today: every text checkpoint of the zoo (rules v4)", False, *TODAY)]
    for score, pub in published_contrast().items():
        shifts = {"none": 0.0, "published": pub["delta"], "mirror": -pub["delta"]}
        for label, primary, n_enc, n_dec in counts:
            t = design_check(n_enc, n_dec, alpha, shifts, draws=draws, seed=seed)
            out.append(t.assign(count=label, primary=primary, score=score, share=pub["share"]))
    cols = ["count", "primary", "score", "shift", "n_enc", "n_dec", "min_p", "alpha", "size", "share", "delta",
            "p_holds", "p_refuted", "p_inconclusive", "draws", "seed"]
    return pd.concat(out, ignore_index=True)[cols]


def main(argv=None) -> int:
    """Print the units and the check; ``--write`` writes ``data/survey_design.csv`` atomically.  A
    refusal (``--draws 0``, a rules file without the evidence level) ends in one line on stderr."""
    from ..base.errors import main_in_one_line

    return main_in_one_line("python -m companion.survey.design", _main, argv)


def _main(argv=None) -> int:
    from ..base.outputs import write_csv_atomic

    ap = argparse.ArgumentParser(prog="python -m companion.survey.design", description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write {DESIGN_CSV.name} (atomically)")
    for flag, value in (("--draws", DRAWS), ("--seed", SEED)):
        ap.add_argument(flag, type=int, default=value)
    args = ap.parse_args(argv)
    for label, rule in (("every checkpoint", EVERY_CHECKPOINT), ("one unit per base family", REGISTERED)):
        for side, groups in unit_members(t := units(catalog_rows(held=True), rule)).items():
            shown = "; ".join(f"{u} [{', '.join(m)}]" for u, m in groups.items())
            print(f"{label}: {len(groups)} {side} units: {shown}")
    print("\n".join(f"left out: {r.member}: {r.reason}" for r in t[t["side"] == ""].itertuples()))
    print((table := design_table(args.draws, args.seed)).drop(columns=["draws", "seed"]).to_string(index=False))
    if args.write:
        print(f"wrote {write_csv_atomic(table, DESIGN_CSV)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
