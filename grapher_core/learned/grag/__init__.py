"""G-RAG: the concept-graph GCN reranker (network, features, checkpoint, ranker, training).
Needs the ``grag`` extra."""
