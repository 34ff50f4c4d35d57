"""Sentences whose words depend on computed outcomes, one function per phrasing.

A chapter computes the numbers and glues the sentence these functions return, so the page
reads as text with glued words and each phrasing (its branches, its plurals) lives in one
tested place instead of an f-string in a cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.phrasing import interval, joined

__all__ = ["count_of", "symmetry_peak", "EncoderDecoderBody", "encoder_decoder_body", "below_unigram", "paired_test",
           "interval_reading"]


def count_of(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 seed"``, ``"3 seeds"``, ``"0 seeds"``."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def symmetry_peak(peak_step: int, peak: float, last_step: int, last: float) -> str:
    """Where the encoders' mean symmetry peaked over training, and whether the end state is
    what is left of a structure training built and then largely undid (below half the peak)."""
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
            f"{min_standard_errors:.0f} standard errors of the evaluation sample.")


def paired_test(table, body_key: str, comparator: str = "decoder", bodies=None) -> str:
    """The rule's paired test of one claim on one body of runs, as What survives reports it:
    ``+0.034 (95% t-interval +0.009 to +0.059, seeds 10,11,12), not testable here``.

    ``table`` is :func:`companion.judge.claims.training_tests_table` of the claim; ``bodies``
    the rules file's body keys (default: those of ``data/verdict_rules.yaml``).  A key the
    rules file does not name is an error (a renamed body must not read as missing runs); a
    named body with no runs yet reads "not computed (runs missing)".
    """
    if bodies is None:
        from ..rules.verdicts import load_rules

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
    cannot say more than the interval does."""
    u = f" {unit}" if unit else ""
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

