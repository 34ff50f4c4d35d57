"""Checks on the built book: accessibility, figures shown, one status per claim, and the snapshot of what the book concludes."""
