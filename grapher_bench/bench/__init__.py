"""The main retrieval benchmark: ``grapher-bench bench``, tuning of alpha, the seed-rule study."""
