"""Training BERT-style models from scratch and watching their query-key structure (Sec. 4).

Four subpackages, one per concern, each importing only those listed below it
(``.importlinter`` checks this):

``studies``  what the runs show: evidence tables, gates, speed-ups, the studies of the runs
``runner``   the training loop, its checkpoints and provenance, and the run folders
``models``   BERT-style and LLaMA-style models, objectives, initialisations
``text``     corpora and tokenization: documents -> ids -> blocks, train / held-out split

and ``cli``, the ``companion train`` subcommand (``python -m companion.train.cli``) on top.
"""
