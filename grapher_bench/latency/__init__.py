"""How long reranking takes: the core, the GAT, and the overhead inside each framework."""
