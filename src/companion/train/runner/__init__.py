"""The training loop and the run folders it writes.

``loop``     AdamW + warmup/decay training with held-out loss, scores and the memorisation
             guard logged; checkpoints with digests; the run's provenance
``updates``  the optimisers and the rank-one structure of each update (Prop. 2.2, Thms. 2.3/2.4)
``runs``     run folders (``data/runs/<name>/``) read into one tidy table
``pack``     several runs packed on one device inside a deadline
"""
