"""The pre-registered rules file (``data/verdict_rules.yaml``) and the statistics that apply
it: tests, intervals, Holm's correction, power, and the outcome of a rule.  Written before the
evidence it judges, it knows nothing of runs or checkpoints; imports only :mod:`companion.base`."""
