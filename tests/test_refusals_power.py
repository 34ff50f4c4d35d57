"""The power solver answers or refuses in one line: a level close to 1 is solved however far
the detectable effect lies, a level outside (0, 1) or a power target the test cannot reach is
refused naming what it may be; an unknown quantity, mode or yardstick is refused naming the
known ones, never a bare KeyError."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.rules.power import detectable_effect, directional_power


def test_a_level_close_to_one_is_solved_not_a_crash():
    # was: ValueError 'f(a) and f(b) must have different signs' (the bracket stopped at ncp 200)
    from scipy import stats

    for n in (2, 3):
        d = detectable_effect(n, 0.01, level=0.99999)
        crit = stats.t.ppf(0.5 + 0.99999 / 2, n - 1)
        assert stats.nct.sf(crit, n - 1, d * math.sqrt(n) / 0.01) == pytest.approx(0.8, abs=1e-6)
        pw = directional_power(n, 0.01, 0.02, level=0.99999, draws=2000)
        assert pw["detect_holds"] > 0.02 and math.isfinite(pw["detect_holds"])
    assert detectable_effect(3, 0.01, level=0.99999) > detectable_effect(3, 0.01, level=0.95)


def test_the_usual_settings_give_what_they_gave():
    assert detectable_effect(3, 0.01) == pytest.approx(0.0326404355, rel=1e-8)
    assert detectable_effect(12, 0.3, 0.9, 0.9) == pytest.approx(0.2707999775, rel=1e-8)
    assert directional_power(3, 0.01, 0.02, draws=2000)["detect_holds"] == pytest.approx(0.0526404355, rel=1e-8)


@pytest.mark.parametrize("power", [0.01, 0.025, 0.0, 1.0, 1.5, -0.2, math.nan, "0.8", True])
def test_a_power_target_the_test_cannot_reach_is_refused(power):
    with pytest.raises(CompanionError, match=r"power target of .* cannot be solved for at level 0.95: .*strictly "
                                             r"between 0.025 and 1") as err:
        detectable_effect(3, 0.01, power=power)
    assert "\n" not in str(err.value)
    with pytest.raises(CompanionError, match=r"power target of .* cannot be solved for"):
        directional_power(3, 0.01, 0.02, target=power, draws=2000)


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.95, math.nan, "0.95", None])
def test_a_level_that_is_not_a_confidence_level_is_refused(level):
    with pytest.raises(CompanionError, match=r"level .* is not a confidence level: give a number strictly between 0 "
                                             r"and 1"):
        detectable_effect(3, 0.01, level=level)
    with pytest.raises(CompanionError, match="is not a confidence level"):
        directional_power(3, 0.01, 0.02, level=level, draws=2000)


def test_a_level_beyond_what_can_be_evaluated_is_refused_in_one_line():
    with pytest.raises(CompanionError, match="cannot be computed: .*Use a level further from 1 or more seeds"):
        detectable_effect(2, 0.01, level=1 - 1e-15)


def test_too_few_seeds_still_read_nan():
    assert math.isnan(detectable_effect(1, 0.01)) and math.isnan(directional_power(1, 0.01, 0.02)["detect_holds"])


def test_an_unknown_quantity_mode_or_yardstick_names_the_known_ones():
    from companion.train.studies.evidence import arm_reference, arm_values, published_iqr_width, yardstick

    runs = pd.DataFrame([dict(run="r", mode="encoder", init="standard", seed=0, step=1, quantity="symmetry",
                              layer=0, head=-1, value=0.1)])
    with pytest.raises(CompanionError, match="unknown quantity 'symetry': a body's value is one of symmetry, "
                                             "directionality, eval_loss, train_loss"):
        arm_values(runs, "symetry", "encoder")
    with pytest.raises(CompanionError, match="unknown mode 'bidirectional': an arm's mode is one of encoder, "
                                             "authors-decoder, decoder"):
        arm_reference(runs.assign(mode="bidirectional"), "bidirectional")
    with pytest.raises(CompanionError, match="exists for symmetry and directionality"):
        published_iqr_width("eval_loss")
    with pytest.raises(CompanionError, match="unknown yardstick 'iqr' in rule 'x': .*published-iqr-width"):
        yardstick({"sesoi": "iqr", "key": "x"}, runs, "symmetry")
    with pytest.raises(CompanionError, match="gives no yardsticks.table-1-speedup-nats.speedup"):
        yardstick({"sesoi": "table-1-speedup-nats", "key": "x", "yardsticks": {}}, runs, "eval_loss")


def test_the_solvers_power_is_scipys_where_scipy_converges_and_the_quadratures_from_where_it_does_not():
    import warnings

    from scipy import stats

    from companion.rules.t_power import TPower, t_power_by_integral

    ordinary = TPower(stats.t.isf(0.025, 4), 4, "an ordinary level")
    for ncp in (0.0, 1.0, 3.5, 20.0):
        assert ordinary(ncp) == float(stats.nct.sf(stats.t.isf(0.025, 4), 4, ncp))
    assert not ordinary.by_integral
    crit = stats.t.isf(5e-8, 1)                       # 2 seeds at level 0.9999999
    extreme = TPower(crit, 1, "an extreme level")
    assert extreme(10.0) == float(stats.nct.sf(crit, 1, 10.0)) and not extreme.by_integral
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats.nct.sf(crit, 1, 1e6)
    assert any("converge" in str(w.message) for w in caught)   # scipy says it did not converge there
    assert extreme(1e6) == pytest.approx(t_power_by_integral(crit, 1, 1e6), abs=0) and extreme.by_integral
    assert extreme(10.0) == t_power_by_integral(crit, 1, 10.0)  # and from then on


def test_a_level_where_neither_scipy_nor_the_quadrature_converges_is_refused_naming_the_level():
    with pytest.raises(CompanionError, match=r"at level 1 and 2 seeds cannot be computed: .*neither scipy's "
                                             r"non-central t nor its quadrature converges"):
        detectable_effect(2, 1.0, level=1 - 1e-15, power=0.8)
