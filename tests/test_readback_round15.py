"""Callers of names that moved keep working: the power solvers left companion.rules.statistics
for companion.rules.power, and ``from companion.rules.statistics import detectable_effect``
(the home the changelog gave them) must still give the solver, with a DeprecationWarning
naming its new place, while statistics.py itself imports nothing from power.py."""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import pytest

MOVED = ("directional_power", "threshold_power", "equivalence_power", "detectable_effect", "check_power_draws")


@pytest.mark.parametrize("name", MOVED)
def test_a_power_solver_under_its_old_module_is_the_solver_and_says_where_it_lives(name):
    from companion.rules import power, statistics

    with pytest.warns(DeprecationWarning, match=rf"companion.rules.statistics.{name} moved to "
                                                rf"companion.rules.power.{name}; .*goes in release 0\.4\.0"):
        old = getattr(statistics, name)
    assert old is getattr(power, name)


def test_the_old_import_statement_works_and_gives_the_numbers_of_the_new_one():
    from scipy import stats

    from companion.rules import power

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from companion.rules.statistics import detectable_effect
    assert detectable_effect is power.detectable_effect
    # the old name is the solver: at the effect it finds, the two-sided 95% t test's statistic
    # clears its critical value with the asked probability, by scipy's non-central t
    n, sd, level, target = 5, 1.0, 0.95, 0.8
    d = detectable_effect(n, sd, level=level, power=target)
    crit = stats.t.ppf(0.5 + level / 2, n - 1)
    assert 1 - stats.nct.cdf(crit, n - 1, d * n ** 0.5 / sd) == pytest.approx(target, abs=1e-6)


def test_a_name_statistics_never_had_is_still_no_attribute():
    from companion.rules import statistics

    with pytest.raises(AttributeError, match="no attribute 'no_such_solver'"):
        statistics.no_such_solver  # noqa: B018
    with pytest.raises(ImportError):
        importlib.import_module("companion.rules.statistics")
        exec("from companion.rules.statistics import paired_t_power", {})


def test_statistics_still_imports_nothing_from_power():
    import companion.rules.statistics as statistics

    tree = ast.parse(Path(statistics.__file__).read_text(encoding="utf-8"))
    imported = [(n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.endswith("power") and "t_power" not in m]
