"""Measuring rankings against gold answers: the one PR@K, gold@K and MRR, the paired tests, and
the evaluation behind ``grapher eval`` (the grid of configurations, measuring each over the
questions' pools, choosing one and the config file it becomes).

The command reads inputs and prints; everything it decides lives here, so the benchmark
tooling measures with the same definitions.
"""
