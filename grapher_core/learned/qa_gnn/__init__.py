"""The query-aware GNN: network, typed edges and ego-subgraphs, checkpoint, ranker, training.
Needs the ``gat`` extra."""
