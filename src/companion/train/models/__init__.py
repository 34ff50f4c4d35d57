"""The models trained from scratch or fine-tuned, and the objectives they train under.

``bert``          BERT-style encoder or decoder at the sizes of Table S1 (and CPU sizes)
``llama``         a small LLaMA-style decoder (RoPE) built from a pretrained configuration
``pretrained``    pretrained weights (zoo name, folder, GGUF file) as a trainable model
``objectives``    masked LM, true next-token prediction, and the authors' hybrid, by name
``init``          standard, symmetric, skew-symmetric initialisation; symmetry penalty (S2.1)
``window_model``  a count model of how hard masked prediction is on a token stream
"""
