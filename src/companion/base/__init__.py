"""The package's plumbing, imported by every other layer and importing none of them:
error type, device and run size, the cache folder, bounded YAML, atomic writes, the repository paths."""
