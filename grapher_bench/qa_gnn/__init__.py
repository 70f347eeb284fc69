"""The query-aware GNN study: training data, commands and report."""
