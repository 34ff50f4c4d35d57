"""The survey of real checkpoints: every catalogued and zoo model scored (:mod:`.scoring`, with
the command line), where each one's weights are found (:mod:`.sources`), the zoo walked
(:mod:`.zoo_walk`), the cached tables and their checksums (:mod:`.table_cache`), the summaries
beside the published numbers (:mod:`.summaries`), the per-layer tables (:mod:`.tables`), the
bias-term study (:mod:`.bias_term`, which tokenizes a corpus, hence above
:mod:`companion.train`) and the shipped null draws (:mod:`.null_draws`)."""
