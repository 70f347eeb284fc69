"""What each shipped learned model is measured not to do, said once when it is loaded.

One module for the numbers the learned rankers' warnings quote, so they are read (and kept in
step with docs/gat.md, docs/grag.md, docs/qa_gnn.md and docs/expansion.md) in one place: a user
who picks a learned ranker from the README must not lose to the retriever, or to the default,
without being told by how much.


The caveats that say a ranker does not fit the inputs (the shipped GAT on edges it never saw,
g-rag's and qa-gnn's checkpoints below a strong retriever) are raised as
:class:`~grapher_core.diagnostics.RankerUnfitWarning`, the others (the MLP ablation, the learned
pruner) as :class:`~grapher_core.diagnostics.GraphERWarning`: the evaluation reads the category,
never these words.
"""

from __future__ import annotations

from grapher_core.diagnostics import GraphERWarning, RankerUnfitWarning

__all__ = [
    "EXPLAINED_BY_POSITION",
    "GAT_OFF_TABLES",
    "LEARNED_PRUNER_LOSES",
    "MLP_ABLATION",
    "NOT_EXPECTED_TO_HELP",
    "GraphERWarning",
    "RankerUnfitWarning",
]

GAT_OFF_TABLES = (
    "There it is below GCS (PR@5 / PR@10 points against GCS on the same "
    "graph, hybrid top-200; docs/gat.md, 'Beyond tables'): on title mentions "
    "hotpotqa -10.0 / -4.6, 2wikimultihopqa -5.2 / -9.2, musique -2.1 / -6.7 (PR@10 "
    "below the retriever); on capped entities hotpotqa -11.0 / -10.2 (below the "
    "retriever), 2wikimultihopqa -0.9 / +0.4, musique +1.1 / +1.0; on chunk "
    "adjacency squad_chunks -3.4 / -2.4, hotpotqa_sentences -3.7 / -7.9, "
    "2wikimultihopqa_sentences -4.2 / -3.7 (all below the retriever), adjacency + "
    "mentions squad_chunks -2.8 / -2.2. A GAT trained on the multi-hop train splits "
    "and BIRD train is below GCS too (mean of 3 seeds): title mentions hotpotqa "
    "-7.1 / -0.6, musique PR@10 -1.0; capped entities hotpotqa -5.0 / -6.1 (PR@10 "
    "below the retriever); chunk adjacency squad_chunks -2.4 / -1.8, "
    "hotpotqa_sentences -0.9 / -1.2, 2wikimultihopqa_sentences PR@5 -1.0, adjacency + "
    "mentions squad_chunks -1.6 / -1.2. Use ranker='gcs', or train and measure a "
    "checkpoint on your own questions (grapher train)"
)
"""Said once per edge-kind set when the shipped GAT meets edges it never saw: every measured
loss against GCS on the same graph, the shipped table checkpoint's and a passage-trained one's."""

MLP_ABLATION = (
    "ranker='mlp' is the GAT without message passing, an ablation: trained with the shipped "
    "GAT's recipe (BIRD train, rank seeds, 3 seeds), no epoch improved on its untrained start "
    "(the GCS prior), so it ranks like GCS at best: multi-table PR@5 / PR@10 84.6 / 92.9 vs GCS "
    "84.5 / 93.2 on spider_dev, 77.3 / 94.8 vs 81.8 / 95.0 on bird_dev, 9.5 / 27.2 vs "
    "10.2 / 26.5 on beaver_dev (docs/gat.md, Table 4); use ranker='gcs' (the default) or "
    "ranker='gat'"
)
"""Said once when the shipped MLP is loaded: where it loses to GCS, with its numbers."""

NOT_EXPECTED_TO_HELP = (
    "g-rag is a port of G-RAG (see docs/grag.md for where it differs), not recommended on "
    "strong retrievers: trained on the multi-hop train splits (3 seeds) it is MRR -1.1 / +0.3 / "
    "-0.3 against the retriever's own order on hotpotqa / 2wikimultihopqa / musique, and the "
    "shipped checkpoint -3.9 to +1.3, never significantly better (docs/grag.md); use "
    "ranker='gcs' or 'gat' to improve retrieval"
)
"""Said once when the shipped G-RAG checkpoint is loaded."""

EXPLAINED_BY_POSITION = (
    "qa-gnn's measured gains are explained by a sentence-position prior, not recommended on "
    "strong retrievers: trained on the multi-hop train splits (3 seeds) it is Recall@5 -2.9 / "
    "-0.1 against a logistic regression on the dense score and 'is the first sentence of its "
    "paragraph' on hotpotqa_sentences / 2wikimultihopqa_sentences, and on a set it was not "
    "trained on the shipped checkpoint ranked below the retriever's own order "
    "(hotpotqa_sentences Recall@5 51.2 vs 55.8; docs/qa_gnn.md); measure it on your data "
    "before relying on it"
)
"""Said once when the shipped qa-gnn checkpoint is loaded."""

LEARNED_PRUNER_LOSES = (
    "the learned expansion pruner was below expansion without pruning wherever measured: "
    "trained on the multi-hop train splits (3 seeds), 2wikimultihopqa PR@10 -22.8, hotpotqa "
    "-0.8, musique level (docs/expansion.md); prefer prune='cosine' or no pruning, and measure "
    "a pruner of your own before relying on it"
)
"""Said once when a learned pruner is loaded."""
