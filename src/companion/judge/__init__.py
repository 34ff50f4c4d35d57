"""Verdicts on the paper's claims: the claim registry and its verdicts (:mod:`.claims`),
the premises checked live (:mod:`.premises`), the empirical tests on runs (:mod:`.empirical`)
and the sentences built from computed outcomes (:mod:`.prose`)."""
