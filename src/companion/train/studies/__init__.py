"""What the runs show: seed-level evidence for the training verdicts and the studies around it.

``evidence``       a body of runs as one evidence table; the gate, yardsticks and settings
``compare``        final scores, seed pairs and runs paired by seed
``speedup``        Table 1's speed-up on smoothed held-out loss
``compute_study``  how many tokens the encoder/decoder contrast needs (the regime chosen)
``blind``          the blind matrix shown beside the verdicts
``replicate``      the device effect: blind runs repeated on the other device
``mechanism``      why an encoder's symmetry peaks and falls (mechanism plan, questions 3-4)
``swap``           the objective swap: a trained model fine-tuned under the other objective
``design_check``      rules v3's design computed from the pilot bodies
``registered_bodies``      rules v3's bodies checked and each training claim read under v3
"""
