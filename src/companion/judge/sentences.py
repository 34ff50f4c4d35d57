"""Sentences whose words depend on computed outcomes, one function per phrasing.

A chapter computes the numbers and glues the sentence these functions return, so the page
reads as text with glued words and each phrasing (its branches, its plurals) lives in one
tested place instead of an f-string in a cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..base.phrasing import interval, joined

__all__ = ["count_of", "symmetry_peak", "EncoderDecoderBody", "encoder_decoder_body", "below_unigram", "paired_test",
           "interval_reading", "p_value", "outcomes_agree", "holds_or_not",
           "check_notes", "COUNT_WORDS", "status_counts", "training_summary", "paired_result", "algebra_holds", "swap_mirror",
           "thm_s1_14_clause", "training_bottom_line",
           "majority_reading", "percentile_edge", "same_outcome", "minutes_by_mode", "variants_held_back",
           "regime_setting", "sooner_or_later", "paper_rate_runs", "other_corpora",
           "lower_or_higher", "table1_preview",
           "rank_one_updates", "update_symmetry_reading", "orthogonality", "shared_direction", "thm_s1_14_meaning",
           "symmetry_gap_reading", "follows_theorem",
           "estimate_in_words", "primary_update_test", "secondary_update_test", "update_test_reading", "labelled_intervals",
           "update_group", "peaks_at",
           "swap_test", "less_or_more_than", "negligible_swap", "swap_update_reading", "direction_and_size",
           "swap_update_order", "gate_floor", "horizon_flips", "design_targets", "look_reading", "spread_uncertainty",
           "runs_before_next_look", "training_runs_said", "checkpoints_by_modality"]


#: what a sentence says in place of a number that is missing (NaN, infinite, None): never "nan"
MISSING = "missing"


def _finite(*values) -> bool:
    """Whether every value is a finite number (a NaN, an infinity, None or text is not)."""
    try:
        return all(v is not None and not isinstance(v, str) and math.isfinite(float(v)) for v in values)
    except (TypeError, ValueError, OverflowError):
        return False


def _num(value, fmt: str) -> str:
    """``value`` in ``fmt``, or :data:`MISSING` where it is not a finite number."""
    return format(float(value), fmt) if _finite(value) else MISSING


def count_of(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 seed"``, ``"3 seeds"``, ``"0 seeds"``."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def symmetry_peak(peak_step: int, peak: float, last_step: int, last: float) -> str:
    """Where the encoders' mean symmetry peaked over training, and whether the end state is
    what is left of a structure training built and then largely undid (below half the peak).
    A value that is not a number is said to be missing, and no shape is read from it."""
    if not _finite(peak, last):
        return (f"The encoders' mean symmetry is missing at its peak or at its end (a value that is not a number), "
                f"so whether training undid the structure it built is not read: peak {_num(peak, '.3f')} at step "
                f"{peak_step}, end {_num(last, '.3f')} at step {last_step}.")
    if last < 0.5 * peak:
        return (f"The encoders' mean symmetry peaks early, at step {peak_step} ({peak:.3f}), and has fallen to "
                f"{last:.3f} by step {last_step}: at this size the ordering at the end of a run is read off a "
                f"structure that training built and then largely undid.")
    return (f"The encoders' mean symmetry is highest at step {peak_step} ({peak:.3f}) and ends at {last:.3f} "
            f"(step {last_step}).")


@dataclass(frozen=True)
class EncoderDecoderBody:
    """What one body of encoder/decoder runs shows at its last step (standard initialisation)."""

    n_encoders: int
    n_decoders: int
    enc_symmetry: float            # means over seeds of the layer-mean scores
    dec_symmetry: float
    enc_directionality: float
    dec_directionality: float
    n_pairs: int                   # seed pairs with both arms
    n_enc_more_symmetric: int      # pairs where the encoder is the more symmetric
    n_dec_more_directional: int    # pairs where the decoder is the more column-dominant
    test_symmetry: str             # the rule's paired tests, as text (What survives)
    test_symmetry_authors: str
    test_directionality: str
    n_reversed: int                # pairs where the decoder is the more symmetric beyond the band
    n_gaps: int                    # pairs with both gaps computed
    band_symmetry: float           # the smallest effect of interest of the symmetry gap
    peak: str                      # symmetry_peak(...)
    n_late_top: int                # encoder seeds whose most symmetric layer is in the later half
    n_top: int


def encoder_decoder_body(b: EncoderDecoderBody) -> str:
    """The orderings a body shows (the paper draws them without an interval), the rule's tests
    of the mean paired gaps, the reversals beyond the yardstick, and Fig. 3c's late layers."""
    return (f"Standard initialisation, {b.n_encoders} encoder and {count_of(b.n_decoders, 'decoder seed')}: "
            f"mean symmetry {b.enc_symmetry:.3f} against {b.dec_symmetry:.3f}, the encoder the more symmetric in "
            f"{b.n_enc_more_symmetric} of {count_of(b.n_pairs, 'seed pair')}; mean directionality "
            f"{b.enc_directionality:+.3f} against {b.dec_directionality:+.3f}, the decoder the more column-dominant "
            f"in {b.n_dec_more_directional} of {b.n_pairs}. The paper draws both orderings without an interval; "
            f"the rule of What survives tests the mean paired gap over seeds: symmetry {b.test_symmetry} (against "
            f"the authors' decoder: {b.test_symmetry_authors}), directionality {b.test_directionality}. In "
            f"{b.n_reversed} of {count_of(b.n_gaps, 'seed')} the decoder ends the more symmetric by more than the "
            f"smallest effect of interest ({b.band_symmetry:.3f}). {b.peak} The most symmetric encoder layer is "
            f"in the later half of the network in {b.n_late_top} of {count_of(b.n_top, 'seed')} "
            f"(Fig. 3c's late layers).")


def below_unigram(min_standard_errors: float) -> str:
    """Every finished run ends below its corpus's unigram reference, by at least this many
    standard errors of the evaluation sample."""
    return (f"Every finished Wikipedia run ends below the corpus's unigram reference, by at least "
            f"{min_standard_errors:.0f} standard errors of the evaluation sample." if _finite(min_standard_errors) else
            "How far the finished Wikipedia runs end below the corpus's unigram reference is missing (a run's "
            "loss or standard error is not a number).")


def paired_test(table, body_key: str, comparator: str = "decoder", bodies=None) -> str:
    """The rule's paired test of one claim on one body of runs, as What survives reports it:
    ``+0.034 (95% t-interval +0.009 to +0.059, seeds 10,11,12), not testable here``.

    ``table`` is :func:`companion.judge.claims.training_tests_table` of the claim; ``bodies``
    the rules file's body keys (default: those of ``data/verdict_rules.yaml``).  A key the
    rules file does not name is an error (a renamed body must not read as missing runs); a
    named body with no runs yet reads "not computed (runs missing)".
    """
    if bodies is None:
        from ..rules.rulebook import earlier_rules as load_rules   # the bodies made before the rules in force

        bodies = load_rules()["bodies"]
    if body_key not in bodies:
        raise ValueError(f"no body {body_key!r} in the rules file; its bodies are {sorted(bodies)}")
    r = table[(table["body_key"] == body_key) & (table["comparator"] == comparator)]
    if r.empty:
        return "not computed (runs missing)"
    r = r.iloc[0]
    iv = interval(r["low"], r["high"]) if r["n"] > 1 else "one seed, no interval"
    return f"{r['estimate']:+.3f} ({iv}, seeds {r['seeds']}), {r['outcome']}"


def interval_reading(low: float, high: float, sesoi: float, unit: str = "", gain: str = "a gain",
                     loss: str = "a loss") -> str:
    """What an interval for an effect (> 0: ``gain``) rules out and what it leaves open, at
    the smallest effect of interest ``sesoi``: e.g. 'its interval, -0.052 to +0.031 nats,
    excludes a gain of 0.037 nats or more; it leaves open no effect at all and a loss of
    0.037 nats or more'.  Each reading is decided by the interval alone, so the sentence
    cannot say more than the interval does; an interval or yardstick that is not a number is
    said to be missing, and rules nothing out."""
    u = f" {unit}" if unit else ""
    if not _finite(low, high, sesoi):
        return (f"its interval is missing (a bound or the smallest effect of interest is not a number), "
                "so it rules nothing out")
    size = f"{sesoi:.3f}{u} or more"
    readings = [(f"{gain} of {size}", high < sesoi), ("no effect at all", low > 0 or high < 0),
                (f"{loss} of {size}", low > -sesoi)]
    out = [r for r, excluded in readings if excluded]
    left = [r for r, excluded in readings if not excluded]
    text = f"its interval, {low:+.3f} to {high:+.3f}{u},"
    if out:
        text += f" excludes {joined(out)}"
    if left:
        text += ("; it" if out else "") + f" leaves open {joined(left)}"
    return text



def p_value(p: float, smallest: float) -> str:
    """``p = 0.0012``, and ``, the smallest value it can reach`` when an exact test's p-value
    is its floor (equal to ``smallest`` up to rounding, as ``numpy.isclose(p, smallest,
    rtol=1e-9)`` reads it)."""
    if not _finite(p):
        return "p missing (not a number)"
    floor = _finite(smallest) and abs(p - smallest) <= 1e-8 + 1e-9 * abs(smallest)
    return f"p = {p:.4f}" + (", the smallest value it can reach" if floor else "")


def outcomes_agree(differing) -> str:
    """Whether two ways of counting give the same outcome, as the predicate of "The two
    counts ...": ``differing`` names the scores whose outcomes differ."""
    differing = list(differing)
    if not differing:
        return "give the same outcome for both scores"
    return "give different outcomes for " + joined(differing)


def holds_or_not(holds: bool | None, missing: str = "cannot be checked in this build") -> str:
    """A claim checked on one case: ``holds``, ``does not hold``, or ``missing`` (None: the
    case could not be read)."""
    if holds is None:
        return missing
    return "holds" if holds else "does not hold"


def check_notes(check: str, power: str = "", holm: str = "", rule_after: bool = False) -> str:
    """A verdict's check column: the check, then its power, its family's correction and
    whether its rule was written after the evidence, each when there is one."""
    return (check + (f"; power: {power}" if power else "") + (f"; {holm}" if holm else "")
            + ("; rule written after the evidence" if rule_after else ""))


#: each status as the verb phrase of a count, for one claim and for several ("1 is refuted",
#: "3 hold as printed")
COUNT_WORDS = {"holds": ("holds as printed", "hold as printed"),
               "holds with a correction": ("holds once corrected", "hold once corrected"),
               "holds, size open": ("holds in direction with the size left open",
                                    "hold in direction with the size left open"),
               "negligible": ("is negligible", "are negligible"),
               "premise fails": ("rests on a premise that fails where measured",
                                 "rest on a premise that fails where measured"),
               "inconclusive": ("is inconclusive", "are inconclusive"),
               "refuted": ("is refuted", "are refuted"),
               "not testable here": ("is not testable on the runs made here", "are not testable on the runs made here")}


def status_counts(n_claims: int, counts) -> str:
    """``Of the 24 claims, 10 hold as printed and 2 are refuted``: ``counts`` maps each status
    to its number of claims, in the order to be read; zero counts are left out."""
    counts = dict(counts)
    return f"Of the {n_claims} claims, " + joined(
        f"{n} {COUNT_WORDS[status][0 if n == 1 else 1]}" for status, n in counts.items() if n)


def look_reading(seeds_in: int, look) -> str:
    """``4 seeds in, read at look 1``: how far a rules-v3 verdict is; before the first look
    (``look`` 'none yet') ``2 of 12 seeds in, no look read yet``."""
    if str(look) == "none yet":
        return f"{seeds_in} seeds in, no look read yet"
    return f"{seeds_in} seeds in, read at {look}"


def spread_uncertainty(bounds) -> str:
    """How far the true seed-to-seed spread may lie from the observed one, for each number of
    seeds a look reads: ``bounds`` maps seeds to (low, high) multiples, e.g. ``{3: (0.52, 6.28),
    6: (0.62, 2.45)}`` gives ``3 seeds leave the true spread anywhere from 0.52 to 6.28 times
    the observed one, 6 seeds from 0.62 to 2.45 times``."""
    parts = [f"{n} seeds {'leave the true spread anywhere ' if i == 0 else ''}from {_num(lo, '.2f')} to {_num(hi, '.2f')} times"
             + (" the observed one" if i == 0 else "")
             for i, (n, (lo, hi)) in enumerate(sorted(dict(bounds).items()))]
    if not parts:
        raise ValueError("no look to describe: give the spread's bounds for at least one number of seeds")
    return ", ".join(parts)


def training_summary(rows) -> str:
    """The training claims' readings at their looks in one line: ``Fig. 3a holds (4 seeds in,
    read at look 1); Table 1 not read yet (2 of 12 seeds in)``; ``rows``: (claim label, status,
    seeds in, look).  A status with words of its own in brackets (a fixed sequence's, under an
    earlier rules file) is stated as the book's status, 'inconclusive', with those words after
    the look: ``Fig. 3b inconclusive (6 seeds in, read at look 2; provisional: ...)``, so one
    claim is never given two statuses."""
    def one(label, status, n, look):
        status = str(status)
        if str(look) == "none yet":
            return f"{label} {status} ({n} seeds in)"
        if "(" in status:
            words = status[status.index("(") + 1:].rstrip(")")
            return f"{label} inconclusive ({look_reading(n, look)}; {words})"
        return f"{label} {status} ({look_reading(n, look)})"

    return "; ".join(one(*r) for r in rows)


def paired_result(estimate: float, low: float, high: float, n: int, outcome: str) -> str:
    """One paired test as ``+0.034 [+0.009, +0.059]: holds``; ``+0.034 (1 seed): ...`` with
    one seed."""
    if not _finite(estimate):
        return f"estimate missing (not a number): {outcome}"
    shown = interval(low, high, estimate=estimate) if n > 1 else f"{estimate:+.3f} (1 seed)"
    return f"{shown}: {outcome}"


def algebra_holds(n_hold: int, n: int, corrected: bool) -> str:
    """How many of the algebraic statements hold (``corrected``: some only once corrected)."""
    return (f"{n_hold} of the {n} algebraic statements of Section 2 and S1.3 hold"
            + (", some once corrected" if corrected else ""))


def swap_mirror(gap: float, sesoi: float, n: int, judged: bool, outcome: str) -> str:
    """The objective swap's mirror (a pretrained decoder fine-tuned without its mask against
    its causal control): ``gap`` is swap minus control in symmetry, which the claim predicts
    positive; reported only unless ``judged``.  Starts with a space (it follows a sentence).
    A gap or yardstick that is not a number is said to be missing, with no direction read."""
    if not _finite(gap, sesoi):
        return (f" The mirror, a pretrained decoder (SmolLM2-135M) fine-tuned without its causal mask against "
                f"its causal control, has no number for its gap in symmetry relative to the control or for its "
                f"smallest effect of interest (a value is missing), with {n} seed(s) per arm: no direction is "
                "read from it.")
    way = "with" if gap > 0 else "against"
    size = "larger" if abs(gap) > sesoi else "smaller"
    return (f" The mirror, a pretrained decoder (SmolLM2-135M) fine-tuned without its causal mask against "
            f"its causal control, ended {gap:+.4f} in symmetry relative to the control "
            f"({way} the prediction, {size} than its smallest effect of interest, "
            f"{sesoi:.4f}), with {n} seed(s) per arm: "
            + ("reported, not judged." if not judged else f"{outcome} by the same rule."))


def thm_s1_14_clause(holds: bool) -> str:
    """The clause after Thm. S1.14's status: what masked training does for symmetry."""
    if holds:
        return ": masked training builds its symmetry through the theorem's pairs"
    return ", although masked training does build symmetry"


def training_bottom_line(decided, n_untested: int) -> str:
    """The bottom line on training: ``decided`` lists (claim, predicate) of the training claims
    that have a decided status; ``n_untested`` more are not testable."""
    decided = list(decided)
    if not decided:
        return ("Whether training builds the paper's structures through the paper's mechanism is a question these "
                "runs are not far enough along to answer by the rules set for them, and the verdicts say so rather "
                "than reading an answer into them.")
    return ("In training, " + joined(f"{claim} is {predicate}" for claim, predicate in decided)
            + (f"; {n_untested} more are not testable on the runs made here (each verdict names why)."
               if n_untested else "."))


def majority_reading(low: float, high: float) -> str:
    """What an interval for the occurrence-weighted share of frequent types with a context
    ratio above one says about most occurrences (E11): below one, above one, or undecided."""
    if not _finite(low, high):
        return "the interval is missing (a bound is not a number), so on which side of one most occurrences fall is not read"
    if high < 0.5:
        return ("most occurrences of frequent types belong to types that are predicted more often than they "
                "serve as context")
    if low > 0.5:
        return "most occurrences of frequent types have a ratio above one"
    return "the interval does not say on which side of one most occurrences fall"


def percentile_edge(estimate: float, low: float, high: float) -> str:
    """How a percentile interval sits around its estimate: at its lower edge (within a tenth of
    its width) or far from symmetric about it."""
    if not _finite(estimate, low, high):
        return "cannot be placed about the estimate (a value is missing)"
    if estimate - low < 0.1 * (high - low):
        return "has the estimate at its own lower edge"
    return "is far from symmetric about the estimate"


def same_outcome(first: str, second: str, first_rules: str = "the percentile interval",
                 second_rules: str = "the bagged interval") -> str:
    """Whether two intervals of one rule give the same outcome, and the two outcomes when not."""
    if first == second:
        return "the outcome is the same under both"
    return f"the outcome differs: {first} under {first_rules}, {second} under {second_rules}"


def minutes_by_mode(minutes) -> str:
    """``12 minutes (decoder) and 15 minutes (encoder)``: the CPU time of a run, per mode
    (``minutes`` maps each mode to its minutes, in the order to be read)."""
    return joined(f"{v:.0f} minutes ({k})" for k, v in dict(minutes).items())


def variants_held_back(rows, max_pair_cpu_s: float) -> str:
    """The compute study's variants that left the band sooner than the regime, each with what
    kept it out: ``rows`` are (variant, decoder directionality, encoder directionality, CPU
    seconds of a pair); ``none`` when there are none."""
    out = []
    for v, dec_dir, enc_dir, cpu_s in rows:
        if not _finite(dec_dir, enc_dir):
            reasons = ["its directionality is missing"]
        else:
            reasons = [txt for bad, txt in (
                (not dec_dir < 0, f"its decoder ends row-dominant ({dec_dir:+.2f})"),
                (not dec_dir < enc_dir, "its decoder is not the more column-dominant")) if bad]
        if not _finite(cpu_s):
            reasons.append("its cost is missing")
        elif cpu_s > max_pair_cpu_s:
            reasons.append(f"a pair costs {cpu_s:.0f} CPU-seconds")
        out.append(f"{v} ({'; '.join(reasons)})")
    return ", ".join(out) or "none"


def regime_setting(variant) -> str:
    """What the compute study's regime changes: ``(setting, value)`` as ``lr = 0.003``; None
    for the base configuration."""
    if variant is None:
        return "the base configuration"
    name, value = variant
    return f"{name} = {value:g}"


def sooner_or_later(exponent: float) -> str:
    """Whether a projected exit comes sooner (a negative exponent of width) or later."""
    if not _finite(exponent):
        return "sooner or later, which cannot be told (the exponent is missing)"
    return "sooner" if exponent < 0 else "later"


def paper_rate_runs(loss_paper: float, below_unigram: float, loss_book: float, sym_paper: float,
                    sym_book: float, n_seeds: int, settings: str) -> str:
    """The encoders trained at the paper's learning rate against the book's, paired by seed:
    held-out loss and mean symmetry at the end, and what the runs saw (``settings``)."""
    return (f"At the paper's rate the encoders end at a held-out loss of {_num(loss_paper, '.2f')} "
            f"nats ({_num(below_unigram, '.2f')} below the unigram reference) against "
            f"{_num(loss_book, '.2f')} at the book's, and at a mean symmetry of "
            f"{_num(sym_paper, '.3f')} against {_num(sym_book, '.3f')} "
            f"({int(n_seeds)} paired seeds). What these runs saw: {settings}.")


def other_corpora(n_cached: int, n_runs: int, n_both: int, n_sym: int, n_dir: int) -> str:
    """The BERT-Mini runs on the other corpora: how many are cached, and on how many of the
    corpora with both arms the encoder is the more symmetric / the decoder the more
    column-dominant."""
    return (f"{n_cached} of {n_runs} runs cached; of the {n_both} {'corpus' if n_both == 1 else 'corpora'} with both "
            f"an encoder and a decoder, the encoder ends the more symmetric on {n_sym} and the decoder the more "
            f"column-dominant on {n_dir}.")


def lower_or_higher(low: float, high: float) -> str:
    """Where an interval for a difference lies: ``lower`` (wholly below 0), ``higher`` (wholly
    above) or ``not distinguishable``; ``not read (a bound is missing)`` where a bound is not a number."""
    if not _finite(low, high):
        return "not read (a bound is missing)"
    if high < 0:
        return "lower"
    if low > 0:
        return "higher"
    return "not distinguishable"


def table1_preview(paired_seeds, published_speedup_percent: float, published_loss_difference: float,
                   encoder_speedup: str | None = None, encoder_loss_difference: float | None = None) -> str:
    """The BERT-Mini preview of Table 1 against its 4-layer Wikipedia row: ``paired_seeds``
    lists (mode, paired seeds) made so far; the encoders' median speed-up (as text, with its
    interval) and final loss difference when there are encoder pairs.  A preview while any
    mode has fewer than three paired seeds."""
    paired_seeds = list(paired_seeds)
    text = ("No seed has both of its runs cached yet" if not paired_seeds else
            "Paired seeds so far: " + ", ".join(f"{mode} {n}" for mode, n in paired_seeds))
    text += (f". Table 1's 4-layer Wikipedia row, one seed after 200,000 steps: a "
             f"{_num(published_speedup_percent, '.0f')}% speed-up and a final loss "
             f"{_num(published_loss_difference, '+.3f')} nats from the symmetric start")
    if encoder_speedup is not None:
        text += (f"; our BERT-Mini encoders after 2,000 steps: median speed-up {encoder_speedup}, "
                 f"final loss {_num(encoder_loss_difference, '+.3f')} nats")
    if not paired_seeds or min(n for _, n in paired_seeds) < 3:
        text += (". With fewer than three paired seeds these rows are a preview, not a measurement of "
                 "Table 1: the regime runs above, with three seeds, are the firmer evidence")
    return text


def rank_one_updates(share_autoregressive: float, share_masked: float, near: float = 0.8) -> str:
    """Which summed update is close to rank one (its top singular value holding more than
    ``near`` of the squared norm), with the two shares."""
    ar, mlm = share_autoregressive, share_masked
    if not _finite(ar, mlm):
        return (f"Whether the updates are close to rank one is not read: a share of the squared norm is missing "
                f"(top singular values {_num(ar, '.2f')} and {_num(mlm, '.2f')})")
    close = [name for name, v in (("autoregressive", ar), ("masked", mlm)) if v > near]
    if len(close) == 2:
        return (f"Both updates are close to rank one (top singular value {ar:.2f} and {mlm:.3f} of the squared "
                f"norm)")
    if len(close) == 1:
        one, other = close[0], "masked" if close[0] == "autoregressive" else "autoregressive"
        s1, s2 = (ar, mlm) if one == "autoregressive" else (mlm, ar)
        return (f"The {one} update is close to rank one ({s1:.3f} of its squared norm in the top singular value), "
                f"the {other} one less so ({s2:.2f})")
    return f"Neither update is close to rank one (top singular values {ar:.2f} and {mlm:.2f} of the squared norm)"


def update_symmetry_reading(autoregressive_more_symmetric: bool) -> str:
    """Whether the summed updates' symmetry goes the way Thm. S1.14's intuition suggests
    (the masked update the more symmetric)."""
    if autoregressive_more_symmetric:
        return "runs against the theorem's intuition"
    return "goes the way the theorem leads one to expect"


def orthogonality(cosine: float, near: float = 0.3) -> str:
    """``nearly orthogonal to`` (|cos| below ``near``) or ``far from orthogonal to``; a cosine
    that is not a number reads ``at an angle not measured (its cosine is missing) to``."""
    if not _finite(cosine):
        return "at an angle not measured (its cosine is missing) to"
    return "nearly orthogonal to" if abs(cosine) < near else "far from orthogonal to"


def shared_direction(cosine: float, near: float = 0.3) -> str:
    """``shares part of it`` (|cos| at least ``near``) or ``shares little of it``; a cosine that
    is not a number reads ``shares an unmeasured part of it (its cosine is missing)``."""
    if not _finite(cosine):
        return "shares an unmeasured part of it (its cosine is missing)"
    return "shares part of it" if abs(cosine) >= near else "shares little of it"


#: what Thm. S1.14's premise verdict means for the mechanism
THM_S1_14_MEANING = {
    "holds": "At this size the premise is met: the masked objective's updates come in pairs with "
             "similar coefficients, the mechanism the theorem describes.",
    "premise fails": "Here the premise fails, so the symmetry that masked training builds does not "
                     "come through the pairwise mechanism the theorem describes.",
    "inconclusive": "Whether the symmetry that masked training builds comes through the pairwise "
                    "mechanism the theorem describes, these seeds cannot say.",
}


def thm_s1_14_meaning(status: str, phrases=None) -> str:
    """What Thm. S1.14's verdict means for the mechanism; another status is named by its
    predicate (``phrases``: status -> predicate, default the claims' own)."""
    if status in THM_S1_14_MEANING:
        return THM_S1_14_MEANING[status]
    if phrases is None:
        from .claims import PHRASES as phrases
    return f"The verdict is {phrases.get(status, status)}."


def symmetry_gap_reading(low: float, high: float) -> str:
    """What an interval for masked minus causal final symmetry says against Thm. S1.14."""
    if not _finite(low, high):
        return "the interval for the gap is missing (a bound is not a number), so which objective ends the more symmetric is not read"
    if low > 0:
        return "the masked objective ends the more symmetric in every reading the seeds allow, as Thm. S1.14 predicts"
    if high < 0:
        return "the causal objective ends the more symmetric, against Thm. S1.14"
    return "at this size the seeds do not tell which objective ends the more symmetric"


def follows_theorem(follows: bool, theorem: str = "Thm. S1.12") -> str:
    """``follows Thm. S1.12 at this size`` or ``does not follow ...``."""
    return f"{'follows' if follows else 'does not follow'} {theorem} at this size"


def estimate_in_words(estimate: float, low: float, high: float, n: int, note: str) -> str:
    """``+0.034 (95% t-interval +0.009 to +0.059, 3 seeds; note)``; an estimate that is not a
    number reads ``missing``."""
    return f"{_num(estimate, '+.3f')} ({interval(low, high, n=n)}; {note})"


def primary_update_test(estimate: float, low: float, high: float, n: int, sesoi: float) -> str:
    """The update claim's primary test, with its smallest effect of interest."""
    return estimate_in_words(estimate, low, high, n, f"smallest effect of interest {_num(sesoi, '.3f')}")


def secondary_update_test(estimate: float, low: float, high: float, n: int, n_tests: int, p_holm: float) -> str:
    """A secondary test, as one of many, with its Holm-adjusted p-value of a reversal."""
    return estimate_in_words(estimate, low, high, n, f"one of {n_tests} secondary tests, Holm-adjusted one-sided p of "
                                                 f"a reversal {_num(p_holm, '.2g')}")


def update_test_reading(estimate: float, low: float, high: float, n: int, outcome: str) -> str:
    """A test with the outcome the rule's reading gives it."""
    return estimate_in_words(estimate, low, high, n, f"{outcome} by the rule's reading")


def labelled_intervals(rows, empty: str = "none", fmt: str = "+.2f") -> str:
    """``cpu sgd decoder -0.12 [-0.20, -0.04], ...``: ``rows`` are (label, estimate, low,
    high); ``empty`` for none."""
    return ", ".join(f"{label} {interval(low, high, estimate=est, fmt=fmt)}" for label, est, low, high in rows) or empty


def update_group(pattern: str) -> str:
    """A group of update runs named from its run pattern: ``update-mini-sgd-*`` is ``sgd at
    BERT-Mini size``, ``update-batch8-adamw-*`` is ``adamw at the regime size``."""
    group = pattern.rstrip("-*").rsplit("-", 1)[-1]
    return f"{group} at {'BERT-Mini' if '-mini-' in pattern else 'the regime'} size"


def peaks_at(values, steps) -> str:
    """``0.081 at step 500, 0.077 at step 750``."""
    return ", ".join(f"{_num(v, '.3f')} at step {int(s)}" for v, s in zip(values, steps))


def swap_test(estimate: float, low: float, high: float, n: int, sesoi: float) -> str:
    """An objective-swap test, swap minus control: ``+0.0012 (95% t-interval ..., 3 seeds);
    smallest effect of interest 0.0183``; a value that is not a number reads ``missing``."""
    return (f"{_num(estimate, '+.4f')} ({interval(low, high, n=n, fmt='+.4f')}); smallest effect of interest "
            f"{_num(sesoi, '.4f')}")


def less_or_more_than(value: float, bound: float) -> str:
    """``less than`` (value below bound) or ``more than``; where either is not a number,
    ``by a missing amount (not a number), so not compared with``."""
    if not _finite(value, bound):
        return "by a missing amount (not a number), so not compared with"
    return "less than" if value < bound else "more than"


def negligible_swap(negligible: bool) -> str:
    """What an interval above 0 and wholly below the smallest effect of interest means for the
    objective swap (rules v2 read it negligible), as a sentence followed by a space; empty
    when the interval is not such."""
    if not negligible:
        return ""
    return ("The interval lies above 0 and wholly below the smallest effect of interest: the swap did "
            "lower symmetry relative to its control, beyond the seed-to-seed noise, but by less than "
            "the paper's own figures could show as a difference, so rules v2 read it as negligible "
            "(version 1 read it as holds). ")


def swap_update_reading(low: float, high: float, n: int) -> str:
    """Which arm's updates are the more symmetric, from an interval for the next-token swap
    minus the masked-LM control; an interval that is not a number is said to be missing, and
    no order is read from it."""
    if not _finite(low, high):
        return "the interval is missing (a bound is not a number), so which updates are the more symmetric is not read"
    if n < 2 or low <= 0 <= high:
        return "the interval allows either order"
    if low > 0:
        return ("the next-token updates are the more symmetric, the opposite of what Thm. 2.4 leads one to "
                "expect of a masked objective")
    return "the masked-LM updates are the more symmetric, as Thm. 2.4 leads one to expect"


def direction_and_size(predicted: bool | None, larger: bool | None) -> str:
    """A difference read against its prediction and its smallest effect of interest; None for
    either (the difference or the yardstick is missing) says so, with no direction read."""
    if predicted is None or larger is None:
        return "not read against its prediction (the difference or its smallest effect of interest is missing)"
    return (("in the predicted direction" if predicted else "against the predicted direction")
            + (", and larger than" if larger else ", and smaller than") + " the smallest effect of interest")


def swap_update_order(swap_more_symmetric: bool | None) -> str:
    """Which arm's updates are the more symmetric when a causal decoder is swapped to a masked
    objective; None (an arm's update symmetry is missing) says so, with no order read."""
    if swap_more_symmetric is None:
        return "which arm's updates are the more symmetric is not read (an arm's update symmetry is missing)"
    if swap_more_symmetric:
        return "the masked swap's updates are the more symmetric, as Thm. 2.4 leads one to expect"
    return ("the causal control's updates are the more symmetric, the opposite of what Thm. 2.4 leads one "
            "to expect of a masked objective")


def gate_floor(floor: float) -> str:
    """The gate's context floor in nats: ``ln 2 = 0.693`` when it is ln 2 (to 5e-4), else the
    number."""

    if not _finite(floor):
        return f"{MISSING} (the gate's floor is not a number)"
    return f"ln 2 = {floor:.3f}" if abs(floor - math.log(2)) < 5e-4 else f"{floor:.3f}"


def horizon_flips(rows, half_step: int) -> str:
    """The tests whose effect changes between the half-way step and the end: ``rows`` are
    (figure, comparator, effect at half, effect at end, smallest effect of interest); a flip
    that both ends are smaller than d is said so."""
    flips = []
    for figure, comparator, at_half, at_end, sesoi in rows:
        small = _finite(at_half, at_end, sesoi) and max(abs(at_half), abs(at_end)) < sesoi
        flips.append(f"{figure} against the {comparator}, {_num(at_half, '+.3f')} at step {half_step:,} and "
                     f"{_num(at_end, '+.3f')} at the end" + (f", both smaller than d = {sesoi:.3f}" if small else ""))
    return "; ".join(flips) if flips else "no test of this body fails it"


def design_targets(targets) -> str:
    """The design check's targets: ``holds 0.8; refuted 0.05`` (underscores read as spaces)."""
    return "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in dict(targets).items())


def runs_before_next_look(waiting) -> str:
    """The rules-v3 claims still waiting for runs before their next look: ``waiting`` lists
    (claim label, names of the missing runs); the first two runs are named."""
    waiting = list(waiting)
    if not waiting:
        return "every run of the looks read so far has landed"
    shared = {}   # claims of one body wait for the same runs: named once, with every claim that waits
    for label, missing in waiting:
        shared.setdefault(tuple(missing), []).append(label)
    return "; ".join(f"{joined(labels)}: {len(missing)} run(s) before {'its' if len(labels) == 1 else 'their'} next look "
                     f"({', '.join(missing[:2])}{', ...' if len(missing) > 2 else ''})"
                     for missing, labels in shared.items())


def training_runs_said(table, primary_arms: dict | None = None) -> str:
    """What the table of landed rules-v3 runs (``runs_table``) says in two sentences: how
    many runs per body, on which devices, how long after the rules' first commit they
    started, for how many every step's machine is recorded, and how far apart in time the
    arms of one seed started (a pair started hours apart may have met two machines), and,
    where the table has ``CPU s/step``, the compute a CPU step took against its wall clock.
    ``primary_arms`` (``{body: [arm, ...]}``): the arms that form a pair in each body; a
    secondary arm, which enters no pair, is left out of how far apart a pair started."""
    if len(table) == 0:
        return "No run of the confirmatory bodies has landed yet."
    per_body = joined(f"{n} of {body}" for body, n in table.groupby("body", sort=False).size().items())
    devices = joined("the CPU" if d == "CPU" else d for d in sorted(set(table["device"])))
    after = table["after rules (h)"]
    recorded = int((~table["machines"].str.contains("not recorded")).sum())
    starts = table.assign(t=pd.to_datetime(table["started"], utc=True, errors="coerce", format="ISO8601"))
    if primary_arms is not None and "arm" in starts:
        starts = starts[[a in (primary_arms.get(b) or ()) for b, a in zip(starts["body"], starts["arm"])]]
    spread = starts.groupby(["body", "seed"])["t"].agg(lambda t: (t.max() - t.min()).total_seconds() / 3600)
    pairs = starts.groupby(["body", "seed"]).size()
    spread = spread[pairs >= 2].dropna()   # a pair with a start not recorded gives no spread
    apart = (f" The two runs of a pair started up to {spread.max():.1f} h apart, so a pair may have met "
             "two machines even where both read the same device." if len(spread) else "")
    pace = ""
    if "CPU s/step" in table and table["CPU s/step"].notna().any():
        cpu = table["CPU s/step"].dropna()
        wall = table.loc[cpu.index, "s/step"]
        pace = (f" On the CPU a step took {cpu.min():.2f} to {cpu.max():.2f} s of compute (one thread); "
                f"the wall clock per step, {wall.min():.2f} to {wall.max():.2f} s, also counts the time "
                "a run was paused or shared its core.")
    after = after[[_finite(a) for a in after]]
    when = (f"starting {after.min():.1f} to {after.max():.1f} h after the rules' first commit" if len(after) else
            "with no start recorded against the rules' first commit")
    return (f"{count_of(len(table), 'run')} landed ({per_body}), made on {devices}, "
            f"{when}. Every step's machine "
            f"is recorded for {recorded} of them (runs begun before machines were recorded say "
            f"'not recorded').{apart}{pace}")


def checkpoints_by_modality(n: int, by_modality) -> str:
    """``7 real checkpoints (5 text, 1 vision and 1 audio)``; modalities with none left out."""
    return f"{n} real checkpoints (" + joined(f"{k} {mod}" for mod, k in dict(by_modality).items() if k) + ")"
