"""The symmetry score of an i.i.d. Gaussian matrix follows 2 Beta(d(d+1)/4, d(d-1)/4) - 1 exactly.

Checked against Monte Carlo samples scored by companion.core.scores (an independent computation
of the same quantity), with a power check: the law of one width rejects samples of another.
"""

import numpy as np
import pytest
from scipy import stats

from companion.core.null import null_scores, symmetry_null_law


@pytest.mark.parametrize("d", [3, 8, 24])
def test_sampled_scores_follow_the_exact_law(d):
    s = null_scores(d, n_samples=3000, seed=d, device="cpu")["symmetry"].to_numpy()
    assert stats.kstest(s, symmetry_null_law(d).cdf).pvalue > 1e-3


def test_the_law_rejects_samples_of_another_width():
    s = null_scores(16, n_samples=3000, seed=5, device="cpu")["symmetry"].to_numpy()
    assert stats.kstest(s, symmetry_null_law(8).cdf).pvalue < 1e-6


@pytest.mark.parametrize("d", [2, 7, 64, 1000])
def test_mean_and_variance_in_closed_form(d):
    law = symmetry_null_law(d)
    assert np.isclose(law.mean(), 1 / d)
    assert np.isclose(law.var(), 2 * (d**2 - 1) / (d**2 * (d**2 + 2)))


def test_monte_carlo_moments_match():
    d = 32
    s = null_scores(d, n_samples=4000, seed=11, device="cpu")["symmetry"].to_numpy()
    se = s.std(ddof=1) / np.sqrt(len(s))
    assert abs(s.mean() - 1 / d) < 4 * se
    assert abs(s.std(ddof=1) - np.sqrt(2) / d) < 0.1 * np.sqrt(2) / d


def test_same_seed_same_samples_on_one_device():
    a = null_scores(20, n_samples=10, seed=3, device="cpu")
    b = null_scores(20, n_samples=10, seed=3, device="cpu")
    c = null_scores(20, n_samples=10, seed=4, device="cpu")
    assert a.equals(b) and not a.equals(c)


@pytest.mark.parametrize("bad", [1, 0, 2.5])
def test_the_law_refuses_a_width_that_is_not_one(bad):
    with pytest.raises(ValueError, match="integer width d >= 2"):
        symmetry_null_law(bad)
