"""The survey of real checkpoints: every zoo model scored (:mod:`.scoring`), the per-layer
tables (:mod:`.tables`), the bias-term study (:mod:`.bias_term`, which tokenizes a corpus, hence
above :mod:`companion.train`) and the shipped null draws (:mod:`.null_draws`)."""
