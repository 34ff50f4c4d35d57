"""Training BERT-style models from scratch and watching their query-key structure (Sec. 4).

Modules, in the order data flows through them:

``data``        corpus -> WordPiece ids -> fixed-length blocks, train / held-out split
``model``       BERT-style encoder or decoder at the sizes of Table S1 (and CPU sizes)
``objectives``  masked LM, true next-token prediction, and the authors' hybrid, by name
``init``        standard, symmetric, skew-symmetric initialisation; symmetry penalty
``loop``        AdamW + warmup/decay training with eval loss and score logging
``speedup``     the Table 1 speed-up metric on smoothed eval loss
``compare``     final scores, ordered seed pairs and runs paired by seed, across runs
``cli``         the ``companion train`` subcommand
"""
