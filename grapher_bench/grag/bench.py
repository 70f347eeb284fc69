"""G-RAG study: examples per benchmark, transfer training of the paper's variants, metrics and
paired significance tests (docs/grag_study.md).

Protocol (reduced for 2 shared CPU cores; the paper's is 50k steps x a 27-point grid):

* candidates: the dense MiniLM retriever's top ``top_n`` (default 30) per question;
* labels: ``gold`` (the supporting passages) or ``has_answer`` (a candidate containing the
  normalised answer or an alias, the ODQA convention; yes/no answers and questions without
  any positive candidate are dropped);
* variants (paper 4.2): MLP (plain text, no graph, listwise), GCN (plain text, G_qp graph,
  listwise), G-RAG (concept text, listwise), G-RAG-RL (concept text, pairwise) and
  G-RAG-RL on the question-free graph;
* transfer: train on one multi-hop set (80/20 train/validation split by question, early
  stopping and selection on validation MRR), evaluate on the others; hotpotqa itself is
  evaluated with the model trained on 2wikimultihopqa;
* hyper-parameters: hidden {8, 64, 128} x lr {1e-4, 5e-4} (dropout 0.1) for G-RAG-RL on the
  hotpotqa split, best validation MRR applied to every variant.
"""

from __future__ import annotations

import json
import re
import string
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grapher_bench.cache import CachedEmbedder
from grapher_bench.data import Dataset, load_dataset
from grapher_bench.grag.data import parse_cached
from grapher_bench.metrics import evaluate_query
from grapher_bench.runner import prepare_candidates
from grapher_core.candidates import Candidate
from grapher_core.enrich.concepts import ConceptGraph
from grapher_core.learned.grag.features import edge_arrays, node_texts, path_concepts
from grapher_core.learned.grag.train import GRAGExample

__all__ = [
    "QuestionSet",
    "build_question_set",
    "examples_for",
    "has_answer",
    "mcnemar",
    "normalise_answer",
    "paired_bootstrap",
]

LABEL_MODES = ("gold", "has_answer")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalise_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def has_answer(passage: str, answers: Sequence[str]) -> bool:
    """True when a normalised answer occurs in the normalised passage as whole words."""
    body = f" {normalise_answer(passage)} "
    return any(a and f" {a} " in body for a in (normalise_answer(x) for x in answers))


def _answers(extra: dict[str, Any]) -> list[str]:
    values = [
        extra.get("answer"),
        *(extra.get("answer_aliases") or []),
        *(extra.get("answers") or []),
    ]
    return [v for v in dict.fromkeys(values) if isinstance(v, str) and v.strip()]


@dataclass
class QuestionSet:
    """One benchmark's questions with their candidates and everything G-RAG needs."""

    name: str
    query_ids: list[str]
    questions: list[str]
    query_vectors: np.ndarray
    candidates: list[list[Candidate]]
    gold: list[list[str]]
    answers: list[list[str]]
    question_graphs: list[ConceptGraph]
    doc_graphs: dict[str, ConceptGraph]
    concept_vectors: dict[int, np.ndarray] = field(default_factory=dict)  # per query: (n, d)


def build_question_set(
    dataset: Dataset, top_n: int, embedder: CachedEmbedder, log: Callable[[str], None] = print
) -> QuestionSet:
    started = time.perf_counter()
    metadata = [dict(o.metadata) for o in dataset.corpus]
    candidates, vectors = prepare_candidates(
        dataset, "dense", metadata, embedder, top_n, progress=False
    )
    graphs = parse_cached([o.text for o in dataset.corpus])
    doc_graphs = {o.id: g for o, g in zip(dataset.corpus, graphs, strict=True)}
    questions = parse_cached([q.text for q in dataset.queries])
    log(
        f"{dataset.name}: {len(dataset.queries)} questions, top-{top_n} dense candidates, "
        f"concept graphs ready ({time.perf_counter() - started:.1f}s)"
    )
    return QuestionSet(
        dataset.name,
        [q.id for q in dataset.queries],
        [q.text for q in dataset.queries],
        np.stack([np.asarray(v, dtype=np.float32) for v in vectors]),
        candidates,
        [list(q.gold) for q in dataset.queries],
        [_answers(q.extra) for q in dataset.queries],
        questions,
        doc_graphs,
    )


def concept_features(
    qs: QuestionSet,
    embedder: CachedEmbedder,
    log: Callable[[str], None] = print,
    paths: str = "all",
) -> None:
    """Encode ``concat(p_i, a_i)`` for every (question, candidate) once (cached on disk)."""
    if qs.concept_vectors:
        return
    started = time.perf_counter()
    texts: list[str] = []
    sizes = []
    for k, cands in enumerate(qs.candidates):
        docs = [qs.doc_graphs[c.id] for c in cands]
        texts += node_texts([c.text for c in cands], docs, qs.question_graphs[k], paths)
        sizes.append(len(cands))
    vectors = embedder.embed_documents(texts, desc=f"{qs.name} concept text")
    for k, part in enumerate(np.split(vectors, np.cumsum(sizes)[:-1])):
        qs.concept_vectors[k] = part.astype(np.float32)
    log(f"{qs.name}: {len(texts)} concept-text encodings in {time.perf_counter() - started:.1f}s")


def fast_concept_features(
    qs: QuestionSet,
    embedder: CachedEmbedder,
    log: Callable[[str], None] = print,
    paths: str = "all",
) -> None:
    """The ``text="fast"`` node features: cached document vector + mean vector of the concepts
    along the paths (each distinct concept encoded once, cached on disk)."""
    from grapher_core.learned.grag.ranker import fast_concepts, fast_features

    if qs.concept_vectors:
        return
    started = time.perf_counter()
    chosen = [
        [
            fast_concepts(path_concepts(qs.question_graphs[k], qs.doc_graphs[c.id], paths))
            for c in cands
        ]
        for k, cands in enumerate(qs.candidates)
    ]
    distinct = sorted({c for per_query in chosen for path in per_query for c in path})
    vectors = embedder.embed_documents(distinct, desc=f"{qs.name} concepts")
    row = {c: i for i, c in enumerate(distinct)}

    def lookup(concepts: Sequence[str]) -> np.ndarray:
        return vectors[[row[c] for c in concepts]]

    for k, cands in enumerate(qs.candidates):
        plain = np.stack([np.asarray(c.embedding, dtype=np.float32) for c in cands])
        qs.concept_vectors[k] = fast_features(plain, chosen[k], lookup)
    log(
        f"{qs.name}: {len(distinct)} distinct path concepts encoded, fast features in "
        f"{time.perf_counter() - started:.1f}s"
    )


def labels_for(qs: QuestionSet, k: int, mode: str) -> tuple[np.ndarray, int] | None:
    """``(labels, n_positive)`` of question ``k``, or None when the question is dropped."""
    cands = qs.candidates[k]
    if mode == "gold":
        gold = set(qs.gold[k])
        return np.array([c.id in gold for c in cands], dtype=np.float32), len(gold)
    answers = qs.answers[k]
    if not answers or normalise_answer(answers[0]) in ("yes", "no"):
        return None
    labels = np.array([has_answer(c.text, answers) for c in cands], dtype=np.float32)
    if not labels.any():
        return None
    return labels, int(labels.sum())


def examples_for(qs: QuestionSet, text: str, graph: str, mode: str) -> list[GRAGExample]:
    """G-RAG examples of every kept question (``text``: concepts/plain; ``graph``:
    question/documents)."""
    out = []
    for k, cands in enumerate(qs.candidates):
        labelled = labels_for(qs, k, mode)
        if labelled is None:
            continue
        labels, n_pos = labelled
        docs = [qs.doc_graphs[c.id] for c in cands]
        edges = edge_arrays(len(cands), docs, qs.question_graphs[k], graph)
        if text in ("concepts", "fast"):  # whichever concept features were computed
            x = qs.concept_vectors[k]
        else:
            x = np.stack([np.asarray(c.embedding, dtype=np.float32) for c in cands])
        out.append(
            GRAGExample(
                qs.query_ids[k],
                qs.query_ids[k],
                labels,
                n_pos,
                x,
                qs.query_vectors[k],
                edges.edge_index,
                edges.edge_weight,
            )
        )
    return out


def query_metrics(
    qs: QuestionSet, examples: Sequence[GRAGExample], scores: Sequence[np.ndarray]
) -> list[dict[str, float]]:
    """Per-question metrics (PR@K on the gold ids; MRR/MHits/MTRR/TMHits on the example's
    positives, missing positives counting 0)."""
    index = {q: k for k, q in enumerate(qs.query_ids)}
    rows = []
    for e, values in zip(examples, scores, strict=True):
        k = index[e.query_id]
        cands = qs.candidates[k]
        values = np.asarray(values, dtype=np.float64)
        order = np.lexsort((np.arange(values.size), -values))
        ids = [cands[i].id for i in order]
        positives = [cands[i].id for i in np.flatnonzero(e.labels > 0)]
        positives += [f"__missing_{j}" for j in range(e.n_gold - len(positives))]
        row = evaluate_query(ids, values[order], positives or ["__none__"], curve_max_k=10)
        rows.append(row)
    return rows


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], n: int = 10_000, seed: int = 0
) -> dict[str, float]:
    """Mean of ``a - b`` per question, its 95% interval, and the one-sided p-value of
    ``a <= b`` (the fraction of resampled mean differences <= 0)."""
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    samples = diff[rng.integers(0, diff.size, size=(n, diff.size))].mean(axis=1)
    return {
        "diff": float(diff.mean()),
        "low": float(np.quantile(samples, 0.025)),
        "high": float(np.quantile(samples, 0.975)),
        "p": float((np.sum(samples <= 0) + 1) / (n + 1)),
    }


def mcnemar(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Exact McNemar test on per-question 0/1 outcomes (e.g. PR@10): ``b01`` questions only
    ``a`` gets, ``b10`` only ``b``; two-sided binomial p-value."""
    from grapher_core.utils.stats import mcnemar_exact

    x = np.asarray(a) > 0.5
    y = np.asarray(b) > 0.5
    only_a, only_b = int(np.sum(x & ~y)), int(np.sum(~x & y))
    return {"only_a": only_a, "only_b": only_b, "p": mcnemar_exact(only_a, only_b)}


def load_question_sets(
    names: Sequence[str],
    root: Path,
    top_n: int,
    limit: dict[str, int],
    embedder: CachedEmbedder,
    concepts: str = "fast",
    log: Callable[[str], None] = print,
    paths: str = "all",
) -> dict[str, QuestionSet]:
    out = {}
    for name in names:
        dataset = load_dataset(root / name, limit=limit.get(name))
        qs = build_question_set(dataset, top_n, embedder, log)
        if concepts == "concepts":
            concept_features(qs, embedder, log, paths)
        elif concepts == "fast":
            fast_concept_features(qs, embedder, log, paths)
        out[name] = qs
    return out


def save_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")
