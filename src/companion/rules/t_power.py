"""The power of a one-sided t test computed two ways, so that a wrong value from scipy is
refused rather than used: :func:`t_power_by_integral` (quadrature) checks ``scipy.stats.nct``,
which is wrong without error at 1 degree of freedom and a level near 1.  Both the rules'
power solvers (:mod:`companion.rules.power`) and their looks (:mod:`companion.rules.sequential`)
use it; it imports neither."""

from __future__ import annotations

import math

__all__ = ["t_power_by_integral", "check_t_power", "TPower"]


def t_power_by_integral(crit: float, df: int, ncp: float) -> float:
    """``P(T > crit)`` for a non-central t with ``df`` degrees of freedom and non-centrality
    ``ncp``, by quadrature over the law of the spread: ``T = (Z + ncp) / U`` with
    ``U = sqrt(chi2_df / df)``, so ``P(T > crit) = E[Phi(ncp - crit U)]``.  It checks
    ``scipy.stats.nct.sf``, which at 1 degree of freedom and a one-sided level below about 5e-6
    returns a wrong probability without error (0.84 where this gives 0.68)."""
    from scipy import integrate, stats

    root = math.sqrt(df)

    def f(u):
        return stats.norm.sf(crit * u - ncp) * stats.chi.pdf(u * root, df) * root

    top = math.sqrt(stats.chi2.isf(1e-16, df) / df)           # beyond it the law of U holds < 1e-16
    u0 = ncp / crit if crit > 0 else 0.0
    width = 10.0 / max(abs(crit), 1.0)                        # where Phi(ncp - crit u) steps from 1 to 0
    cuts = sorted({0.0, top, *(min(max(u0 + k * width, 0.0), top) for k in (-1, 0, 1)), 1.0})
    return float(sum(integrate.quad(f, a, b, limit=200, epsabs=1e-11, epsrel=1e-10)[0]
                     for a, b in zip(cuts, cuts[1:]) if b > a))


class TPower:
    """``ncp -> P(T > crit)`` for a non-central t with ``df`` degrees of freedom, for a solver:
    ``scipy.stats.nct.sf`` (fast) until the first point where scipy warns that its series did not
    converge, then :func:`t_power_by_integral` at that point and every later one.  Where scipy
    does not converge (a critical value of millions at 1 degree of freedom, from a level near
    1) each of its calls takes a quarter of a second and returns the series' closest value, so
    a solve took about 8 s there before :func:`check_t_power` refused its answer; the
    quadrature takes 15 ms a call and is what that check trusts.  Where scipy converges
    throughout, the values are scipy's, as before; where the quadrature does not converge
    either (a level within 1e-15 of 1), ``what`` cannot be computed (CompanionError)."""

    def __init__(self, crit: float, df: int, what: str):
        self.crit, self.df, self.what, self.by_integral = crit, df, what, False

    def __call__(self, ncp: float) -> float:
        import warnings

        from scipy import stats

        if not self.by_integral:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", RuntimeWarning)
                value = float(stats.nct.sf(self.crit, self.df, ncp))
            if not any("converge" in str(w.message) for w in caught):
                return value
            self.by_integral = True
        from scipy.integrate import IntegrationWarning

        from ..base.errors import CompanionError

        with warnings.catch_warnings():
            warnings.simplefilter("error", IntegrationWarning)
            try:
                return t_power_by_integral(self.crit, self.df, ncp)
            except IntegrationWarning:
                raise CompanionError(f"{self.what} cannot be computed: at this level and number of seeds neither "
                                     "scipy's non-central t nor its quadrature converges. Use a level further from 1 "
                                     "or more seeds.") from None


def check_t_power(crit: float, df: int, ncp: float, target: float, what: str) -> float:
    """``ncp`` when the non-central t at it reaches ``target`` by :func:`t_power_by_integral` too
    (within 1e-4), else a one-line CompanionError: scipy's value was wrong there."""
    from ..base.errors import CompanionError

    got = t_power_by_integral(crit, df, ncp)
    if not abs(got - target) <= 1e-4:
        raise CompanionError(f"{what} cannot be computed: at this level and number of seeds the non-central t "
                             f"is not evaluated accurately (power {got:.3g}, not {target:g}, at the solution). "
                             "Use a level further from 1 or more seeds.")
    return ncp
