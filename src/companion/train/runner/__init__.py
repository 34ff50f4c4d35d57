"""The training loop and the run folders it writes.

``loop``         AdamW + warmup/decay training: :func:`~.loop.train` and its accumulate and
                 update steps, over the modules below
``config``       ``TrainConfig`` (everything that defines a run) and the learning-rate schedule
``arguments``    the command line's checks of --device, --log, --out and a local --corpus file
``devices``      device, process group under torchrun, bf16 autocast
``set_up``       the run's data, model, optimiser, schedule and generators
``state``        one run's state while it trains, and the flush of its logged losses
``evaluation``   held-out loss, structure scores, the memorisation guard, the evaluate step
``checkpoints``  checkpoints with digests, resume, the weights kept at chosen steps
``provenance``   a run folder's ``provenance.json`` and ``history.csv``
``updates``      the optimisers and the rank-one structure of each update (Prop. 2.2, Thms. 2.3/2.4)
``runs``         run folders (``data/runs/<name>/``) read into one tidy table
``pack``         several runs packed on one device inside a deadline
"""
