"""``grapher rerank``: try GraphER on your own data without writing code.

Reads database schemas (``--database``, any SQLAlchemy URL; repeat it to pool several databases
as one corpus, ids ``"<db name>.<table>"``) or a corpus JSONL file (``--corpus``, one object per
line; ``--id-field`` / ``--text-field`` name its keys, the ``metadata`` object is read as is),
retrieves ``--fetch`` candidates for the question with the packaged MiniLM model (plain cosine
similarity), reranks them (proximities detected from the metadata unless ``--graph`` says
which), and prints the retriever's top ``--top`` beside GraphER's, the graph it built (edges
per kind) and why each newcomer moved up. ``--mentions`` first links objects to the objects
whose titles they name (corpora without hyperlinks).

``--questions FILE.jsonl`` (``{"id", "text"}`` per line, ``gold`` optional) reranks every
question of the file instead: the corpus is embedded once, one reranked list per question is
printed, or written as JSONL with ``--out``. ``grapher eval`` measures a questions file with
gold ids against the retriever's order.

The corpus's vectors are kept in ``embeddings.sqlite`` in the cache folder (``$GRAPHER_CACHE``,
default ``~/.cache/grapher``), keyed by model and text: a second run embeds only what changed
(``--no-cache`` to skip it). Texts longer than ``--max-chars`` (default 20 000) are cut before
they are embedded (MiniLM reads its first 256 tokens anyway; a 60 MB text would otherwise be
tokenized whole). Lone surrogates (JSON's ``"\\ud800"``) are replaced by U+FFFD for the model
and printed escaped.

Exit codes:
  0  reranked and printed
  2  bad command line or input: an empty or blank question (refused before any model is
     loaded), a corpus or questions line that is not a JSON object (or is
     nested too deep), a question without ``id`` / ``text``, a database URL that does not
     parse, names an unknown dialect, a missing file or a file that is not a database (one
     line, naming the option)
"""

from __future__ import annotations

import argparse
import json
import time
import unicodedata
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject, RankedCandidate
from grapher_core.cli.arguments import alpha_argument, output_argument
from grapher_core.cli.inputs import (
    MAX_TEXT_CHARS,
    clean_text,
    embed_texts,
    load_corpus,
    read_database,
    read_questions,
    shown,
)
from grapher_core.errors import InputError
from grapher_core.utils.embedding_cache import EmbeddingCache

__all__ = [
    "GRAPHS",
    "MAX_TEXT_CHARS",
    "check_question",
    "embedding_store",
    "load_objects",
    "proximities_for",
    "read_database",
    "register",
    "retrieve",
    "run",
]

GRAPHS = ("auto", "fk", "links", "mentions", "entities", "chunks")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rerank",
        help="rerank your own schema or corpus for a question (or a file of them)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "question", nargs="?", help="the question to retrieve for (or give --questions)"
    )
    parser.add_argument(
        "--questions",
        type=Path,
        metavar="JSONL",
        help='questions file, {"id", "text"} per line: one reranked list per question',
    )
    output_argument(
        parser,
        "--out",
        metavar="JSONL",
        help="with --questions: write the lists here (one JSON object per question)",
    )
    add_source_arguments(parser)
    parser.add_argument("--limit", type=int, default=None, help="corpus: only the first N objects")
    parser.add_argument(
        "--mentions", action="store_true", help="add title-mention links over the corpus first"
    )
    parser.add_argument(
        "--graph",
        choices=GRAPHS,
        default="auto",
        help="proximity to use (default: auto = detected from the metadata)",
    )
    parser.add_argument("--ranker", default="gcs", help="gcs (default), ppr, gat, mlp, baseline")
    parser.add_argument(
        "--alpha",
        type=alpha_argument,
        default=None,
        help="ranker alpha in (0, 1) (default: the ranker's tuned value)",
    )
    parser.add_argument(
        "--fetch", type=int, default=50, help="candidates retrieved and reranked (default: 50)"
    )
    parser.add_argument("--top", type=int, default=5, help="results shown (default: 5)")
    add_embedding_arguments(parser)
    parser.set_defaults(func=run)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """``--database`` (repeatable) or ``--corpus``, and the corpus's field names."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--database",
        metavar="URL",
        action="append",
        help="SQLAlchemy URL, e.g. sqlite:///chinook.db (tables become objects); repeat it "
        "to pool several databases as one corpus",
    )
    source.add_argument(
        "--corpus", type=Path, metavar="JSONL", help="corpus file, one JSON object per line"
    )
    parser.add_argument("--id-field", default="id", help="corpus: key of the id (default: id)")
    parser.add_argument(
        "--text-field", default="text", help="corpus: key of the text (default: text)"
    )


def add_embedding_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-chars``, ``--no-cache`` and ``--no-progress``."""
    parser.add_argument(
        "--max-chars",
        type=int,
        default=MAX_TEXT_CHARS,
        help="characters of each text embedded; longer texts are cut (default: %(default)s)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not read or write the embedding cache (embeddings.sqlite in $GRAPHER_CACHE)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress counter on stderr")


def load_objects(args: argparse.Namespace) -> list[CorpusObject]:
    """The objects the command works on, from ``--database`` (one or several, pooled) or
    ``--corpus``."""
    return load_corpus(
        getattr(args, "corpus", None),
        getattr(args, "database", None),
        id_field=getattr(args, "id_field", "id"),
        text_field=getattr(args, "text_field", "text"),
        limit=getattr(args, "limit", None),
    )


def embedding_store(args: argparse.Namespace) -> EmbeddingCache | None:
    """The on-disk vector cache, unless ``--no-cache`` (created only now: after the input
    was read and checked, so a refused run leaves no cache folder behind)."""
    if args.no_cache:
        return None
    from grapher_core.utils.paths import cache_root

    return EmbeddingCache(cache_root() / "embeddings.sqlite")


def proximities_for(graph: str) -> list[Any] | None:
    """The proximities ``--graph`` names (``None``: detected per call)."""
    from grapher_core.edges.entities import SharedEntities
    from grapher_core.edges.keys import AdjacentChunks, ForeignKeys

    return {
        "auto": None,
        "fk": [ForeignKeys("foreign_keys")],
        "links": [ForeignKeys("links")],
        "mentions": [ForeignKeys("mentions", target_field="title")],
        "entities": [SharedEntities("entities")],
        "chunks": [AdjacentChunks()],
    }[graph]


def retrieve(
    objects: Sequence[CorpusObject], vectors: np.ndarray, query: np.ndarray, fetch: int
) -> list[Candidate]:
    """The ``fetch`` objects most cosine-similar to ``query`` as candidates, best first (ties
    in corpus order), each with its score and vector: the dense retriever of both commands."""
    scores = vectors @ query
    fetch = min(fetch, len(objects))
    if fetch < len(objects):  # the fetch best without a full sort; ties cut in corpus order
        kth = np.partition(scores, len(objects) - fetch)[len(objects) - fetch]
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)[: fetch - above.size]
        top = np.concatenate([above, tied])
        order = top[np.lexsort((top, -scores[top]))]
    else:
        order = np.argsort(-scores, kind="stable")
    return [
        Candidate(objects[i].id, objects[i].text, float(scores[i]), objects[i].metadata, vectors[i])
        for i in order.tolist()
    ]


_INVISIBLE = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})  # controls, format marks, spaces


def check_question(text: str, option: str = "the question") -> str:
    """``text`` when it holds something to retrieve for; else an error naming ``option``.

    An empty or blank question would embed the whole corpus (a minute) before anything else
    can complain, and the answer to nothing is noise: it is refused before any model loads.
    Spaces, tabs, newlines, zero-width and other invisible characters count as blank.
    """
    if not any(unicodedata.category(ch) not in _INVISIBLE for ch in text):
        what = "empty" if not text else f"blank (only spaces or invisible characters: {text!r})"
        raise InputError(f"{option} is {what}: give the words to retrieve for")
    return text


def _check(args: argparse.Namespace) -> None:
    """Refuse a bad command line before anything is read."""
    if args.question is not None:
        check_question(args.question)
    for name in ("fetch", "top", "max_chars"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1")
    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be >= 1")
    if (args.question is None) == (args.questions is None):
        raise InputError("give a question or --questions FILE.jsonl (not both)")
    if args.out is not None and args.questions is None:
        raise InputError("--out writes the lists of --questions; give --questions FILE.jsonl")


def run(args: argparse.Namespace) -> int:
    from grapher_core.embeddings import default_embedder

    _check(args)
    objects = load_objects(args)
    if not objects:
        raise InputError("no objects to rerank (empty database or corpus)")
    questions = None
    if args.questions is not None:
        questions = read_questions(args.questions, {o.id for o in objects}, need_gold=False)
    if args.mentions:
        from grapher_core.enrich.mentions import add_mentions

        metadata = add_mentions(objects)
        objects = [CorpusObject(o.id, o.text, m) for o, m in zip(objects, metadata, strict=True)]
    cut = sum(1 for o in objects if len(o.text) > args.max_chars)
    objects = [CorpusObject(o.id, clean_text(o.text, args.max_chars), o.metadata) for o in objects]
    started = time.perf_counter()
    embedder = default_embedder()
    store = embedding_store(args)
    vectors, cached = embed_texts(
        embedder,
        [o.text for o in objects],
        store=store,
        label="embedding the corpus",
        progress=not args.no_progress,
    )
    if questions is not None:
        return _run_questions(args, objects, vectors, questions, embedder, store, cut)
    question = clean_text(args.question, args.max_chars)
    query = np.asarray(embedder.embed_query(question), dtype=np.float32)
    candidates = retrieve(objects, vectors, query, args.fetch)
    embed_s = time.perf_counter() - started
    from grapher_core.request import DoorIO, run_call
    from grapher_core.rerank import GraphReranker

    reranker = GraphReranker(proximities_for(args.graph), args.ranker, args.alpha)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = run_call(
            reranker.call(candidates, query=question, query_embedding=query, embedder=embedder),
            DoorIO.of(embedder).answer,
        )
    top = min(args.top, len(candidates))
    from_cache = f"; {cached} of {len(objects)} vectors from the cache" if cached else ""
    print(
        f"{len(objects)} objects; {len(candidates)} retrieved by cosine similarity (MiniLM, "
        f"{embed_s:.1f} s with model loading{from_cache})"
    )
    if cut:
        print(f"note: {cut} texts longer than {args.max_chars:,} characters were cut (--max-chars)")
    from grapher_core.edges.detect import describe

    edges = ", ".join(f"{kind}: {count}" for kind, count in result.edges.items()) or "none"
    print(f"graph: {describe(result.proximities)}; edges per kind: {edges}")
    for warning in said:
        print(f"note: {shown(str(warning.message))}")
    _side_by_side(candidates, result.ranked, top, args.ranker)
    _why(result.ranked[:top], {c.id for c in candidates[:top]})
    return 0


def _run_questions(
    args: argparse.Namespace,
    objects: Sequence[CorpusObject],
    vectors: np.ndarray,
    questions: Sequence[Any],
    embedder: Any,
    store: EmbeddingCache | None,
    cut: int,
) -> int:
    """Batch mode: one reranked list per question, printed or written to ``--out``."""
    from grapher_core.request import DoorIO, run_call
    from grapher_core.rerank import GraphReranker
    from grapher_core.utils.progress import Progress

    texts = [clean_text(q.text, args.max_chars) for q in questions]
    queries, _ = embed_texts(
        embedder, texts, store=store, label="embedding the questions", progress=not args.no_progress
    )
    reranker = GraphReranker(proximities_for(args.graph), args.ranker, args.alpha)
    top = min(args.top, args.fetch, len(objects))
    lists = []
    counter = Progress(len(questions), "reranking", enabled=not args.no_progress)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for question, text, query in zip(questions, texts, queries, strict=True):
            candidates = retrieve(objects, vectors, query, args.fetch)
            call = reranker.call(
                candidates, query=text, query_embedding=query, embedder=embedder, top_n=top
            )
            result = run_call(call, DoorIO.of(embedder).answer)
            lists.append((question, candidates[:top], result.ranked))
            counter.update()
    counter.close()
    print(
        f"{len(objects)} objects, {len(questions)} questions; {args.fetch} candidates each, "
        f"reranked with {args.ranker} (graph: {args.graph})"
    )
    if cut:
        print(f"note: {cut} texts longer than {args.max_chars:,} characters were cut (--max-chars)")
    for message in dict.fromkeys(str(w.message) for w in said):
        print(f"note: {shown(message)}")
    if args.out is not None:
        _write_lists(args.out, lists)
        print(f"wrote {len(lists)} reranked lists to {args.out}")
        return 0
    for question, before, ranked in lists:
        print(f"\n{shown(question.id)}: {shown(question.text)}")
        retrieved = {c.id for c in before}
        for r in ranked:
            new = "" if r.id in retrieved else f"  (new: was {r.original_rank})"
            relevance = r.relevance if r.relevance is not None else r.score
            gold = "  [gold]" if r.id in question.gold else ""
            print(f"{r.rank:>4}. {shown(r.id)}  {relevance:.3f}{new}{gold}")
    return 0


def _write_lists(path: Path, lists: Sequence[tuple[Any, Sequence[Candidate], Any]]) -> None:
    """One JSON object per question: its id and text, GraphER's list, the retriever's."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # tried at the start (output_argument)
        with path.open("w", encoding="utf-8", errors="backslashreplace") as handle:
            for question, before, ranked in lists:
                record = {
                    "id": question.id,
                    "text": question.text,
                    "reranked": [
                        {
                            "rank": r.rank,
                            "id": r.id,
                            "relevance": r.relevance if r.relevance is not None else r.score,
                            "retriever_rank": r.original_rank,
                        }
                        for r in ranked
                    ],
                    "retriever": [c.id for c in before],
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    except OSError as error:
        raise InputError(f"--out {path}: cannot write ({error.strerror or error})") from None


def _side_by_side(
    candidates: Sequence[Candidate], ranked: Sequence[RankedCandidate], top: int, ranker: str
) -> None:
    width = max(
        24,
        *(len(shown(c.id)) + 2 for c in candidates[:top]),
        *(len(shown(r.id)) + 2 for r in ranked[:top]),
    )
    print(f"\n    {'retriever':<{width + 7}}GraphER ({ranker}; relevance)")
    for k in range(top):
        left = f"{shown(candidates[k].id):<{width}} {candidates[k].score:.3f}"
        relevance = ranked[k].relevance if ranked[k].relevance is not None else ranked[k].score
        right = f"{shown(ranked[k].id):<{width}} {relevance:.3f}"
        print(f"{k + 1:>3}. {left}  {right}")


def _why(ranked: Sequence[RankedCandidate], before: set[str]) -> None:
    newcomers = [r for r in ranked if r.id not in before]
    if not newcomers:
        print("\nno newcomer in the top: the graph kept the retriever's top")
    for r in newcomers:
        reasons = ", ".join(f"{shown(c.neighbour_id)} ({'/'.join(c.kinds)})" for c in r.explanation)
        print(
            f"\n{shown(r.id)}: rank {r.original_rank} -> {r.rank}, lifted by {reasons or 'nothing'}"
        )
