"""Measuring rankings against gold answers: the one PR@K, gold@K and MRR, the paired tests, and
the evaluation behind ``grapher eval`` (the grid of configurations, measuring each over the
questions' pools, choosing one and the config file it becomes).

The command reads inputs and prints; everything it decides lives here, so the benchmark
tooling measures with the same definitions, and both wrappers' ``evaluate_retriever`` run the
same evaluation (:mod:`grapher_core.evaluation.run`) on the candidates a user's own retriever
returns (:mod:`grapher_core.evaluation.pipeline`), gold at any metadata level
(:mod:`grapher_core.evaluation.gold`), within a cost budget (:mod:`grapher_core.evaluation.cost`).
"""
