"""The simulated designs compare each interval end with the yardstick after rounding it to
DIGITS significant digits (as one reading does).  Only the ends near the yardstick are
rounded (the rest cannot compare otherwise); this checks that shortcut against rounding every
end, on values made to sit at the rounding's edge."""

from __future__ import annotations

import numpy as np

from companion.rules import sequential as sq


def _comparisons(a, d):
    return np.stack([a >= d, a > 0, a > d, a < d])


def test_rounding_only_the_ends_near_the_yardstick_compares_as_rounding_every_end():
    rng = np.random.default_rng(3)
    for d in (0.01, 0.0054, 1.0, 3.7e-5, 12345.678):
        d_r = float(f"{d:.{sq.DIGITS}g}")
        edge = d_r * (1 + rng.uniform(-3e-9, 3e-9, 4000))          # within a few roundings of d
        bulk = d_r * rng.normal(1, 0.5, 4000)                       # everywhere else, signs included
        tiny = rng.choice([-1, 1], 200) * 10.0 ** rng.uniform(-320, -300, 200)   # next to 0
        a = np.concatenate([edge, bulk, tiny, [d_r, np.nextafter(d_r, 0), np.nextafter(d_r, 1), 0.0, -0.0]])
        every = np.array([float(f"{x:.{sq.DIGITS}g}") for x in a])  # what one reading does, element by element
        assert np.array_equal(_comparisons(sq._rounded_near(a, d_r), d_r), _comparisons(every, d_r))
        assert (_comparisons(every, d_r) != _comparisons(a, d_r)).any()   # the edge is real: rounding moves some
