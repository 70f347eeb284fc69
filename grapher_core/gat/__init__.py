"""GraphER-GAT: a learned graph attention ranker, its MLP ablation, and their training.

Needs the ``gat`` extra (torch, torch-geometric, safetensors). Importing this package is cheap;
torch loads when a model is built or a checkpoint is read.
"""

from __future__ import annotations

__all__ = ["GATRanker", "MLPRanker"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from grapher_core.gat import ranker

        return getattr(ranker, name)
    raise AttributeError(name)
