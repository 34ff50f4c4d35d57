"""Time budgets: how long chapters take per run size, whether a notebook fits a free Colab GPU, and what a chapter trains live."""
