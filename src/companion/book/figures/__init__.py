"""The book's figures: one module per part of the paper (measuring, theory, training, survey, verdicts), their shared palette, and the source data each figure ships with."""
