"""Learned rankers (GraphER-GAT and its MLP ablation): models, checkpoints, inference, and the
training code they share.

Needs the ``gat`` extra (torch, torch-geometric, safetensors). Importing this package is cheap;
torch loads when a model is built or a checkpoint is read.
"""

from __future__ import annotations

__all__ = ["GATRanker", "MLPRanker"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from grapher_core.learned import ranker

        return getattr(ranker, name)
    raise AttributeError(name)
