"""Learned rankers, one folder per family with the same file names inside (``gat/``, ``grag/``,
``qa_gnn/``: ``model features checkpoint ranker train``), and what they share: one checkpoint
shape (``family``: config guard, load, save, shipped default, embedding check) over the
safetensors files (``weights``), one ranker skeleton (``ranker``), the training loop
(``loop``), the inputs every network reads and the one way they reach its device (``inputs``),
and the learned expansion pruner (``pruner``).

Needs the ``gat`` extra (torch, torch-geometric, safetensors). Importing this package is cheap;
torch loads when a model is built or a checkpoint is read.
"""

from __future__ import annotations

__all__ = ["GATRanker", "MLPRanker"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from grapher_core.learned.gat import ranker

        return getattr(ranker, name)
    raise AttributeError(name)
