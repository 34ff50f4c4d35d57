"""The mathematics of the paper: the query-key bilinear form (Eq. 2), the symmetry and
directionality scores (Eqs. 4-5), their null laws, RoPE, the appendix's propositions checked
numerically, and the tiny attention model.  Imports only :mod:`companion.base`."""
