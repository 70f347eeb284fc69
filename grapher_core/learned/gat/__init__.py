"""GraphER-GAT and its MLP ablation (the paper's learned ranker): network, node and edge
features, checkpoint, ranker, training. Needs the ``gat`` extra."""
