"""``grapher rerank``: try GraphER on your own data without writing code.

Reads a database schema (``--database``, any SQLAlchemy URL) or a corpus JSONL file
(``--corpus``, one object per line; ``--id-field`` / ``--text-field`` name its keys, the
``metadata`` object is read as is), retrieves ``--fetch`` candidates for the question with the
packaged MiniLM model (plain cosine similarity, embedded on every run: keep the corpus small or
pass ``--limit``), reranks them (proximities detected from the metadata unless ``--graph``
says which), and prints the retriever's top ``--top`` beside GraphER's, the graph it built
(edges per kind) and why each newcomer moved up. ``--mentions`` first links objects to the
objects whose titles they name (corpora without hyperlinks).

Texts longer than ``--max-chars`` (default 20 000) are cut before they are embedded (MiniLM
reads its first 256 tokens anyway; a 60 MB text would otherwise be tokenized whole). Lone
surrogates (JSON's ``"\\ud800"``) are replaced by U+FFFD for the model and printed escaped.

Exit codes:
  0  reranked and printed
  2  bad command line or input: a corpus line that is not a JSON object (or is nested too
     deep), a database URL that does not parse, names an unknown dialect, a missing file or a
     file that is not a database (one line, naming the option)
"""

from __future__ import annotations

import argparse
import re
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import Candidate, CorpusObject, RankedCandidate
from grapher_core.cli.arguments import alpha_argument
from grapher_core.errors import InputError, InputFileNotFoundError

__all__ = ["GRAPHS", "MAX_TEXT_CHARS", "load_objects", "read_database", "register", "run"]

GRAPHS = ("auto", "fk", "links", "mentions", "entities", "chunks")

MAX_TEXT_CHARS = 20_000
"""Characters of each text embedded (``--max-chars``): MiniLM keeps its first 256 tokens, and
a tokenizer handed a text of tens of megabytes aborts the process."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rerank",
        help="rerank your own schema or corpus for a question; print before/after and why",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("question", help="the question to retrieve for")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--database",
        metavar="URL",
        help="SQLAlchemy URL, e.g. sqlite:///chinook.db (tables become objects)",
    )
    source.add_argument(
        "--corpus", type=Path, metavar="JSONL", help="corpus file, one JSON object per line"
    )
    parser.add_argument("--id-field", default="id", help="corpus: key of the id (default: id)")
    parser.add_argument(
        "--text-field", default="text", help="corpus: key of the text (default: text)"
    )
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
    parser.add_argument(
        "--max-chars",
        type=int,
        default=MAX_TEXT_CHARS,
        help="characters of each text embedded; longer texts are cut (default: %(default)s)",
    )
    parser.set_defaults(func=run)


def load_objects(args: argparse.Namespace) -> list[CorpusObject]:
    """The objects the command works on, from ``--database`` or ``--corpus``."""
    if args.database:
        return read_database(args.database)
    from grapher_core.cli.enrich import read_corpus_lines

    records = read_corpus_lines(
        args.corpus, args.limit, id_field=args.id_field, text_field=args.text_field
    )
    return [
        CorpusObject(str(r[args.id_field]), r[args.text_field], r.get("metadata") or {})
        for _, r in records
    ]


def read_database(url: str) -> list[CorpusObject]:
    """The tables of the database at ``url``, read-only; every failure (a URL that does not
    parse, an unknown dialect, a missing file, a file that is not a database, a server that
    does not answer) is one ``InputError`` naming ``--database``, never a traceback. A SQLite
    file is opened read-only and must exist (SQLite would create an empty one)."""
    try:
        import sqlalchemy
        from sqlalchemy.engine import make_url
    except ImportError as error:  # pragma: no cover - depends on the environment
        from grapher_core.errors import MissingDependencyError

        raise MissingDependencyError(
            "--database needs SQLAlchemy: pip install 'grapher-rerank[sql]'"
        ) from error
    from grapher_core.enrich.schema import read_schema

    try:
        parsed = make_url(url)
    except (sqlalchemy.exc.ArgumentError, ValueError):
        raise InputError(
            f"--database {url!r} is not a SQLAlchemy URL (e.g. sqlite:///chinook.db)"
        ) from None
    shown = parsed.render_as_string(hide_password=True)
    try:
        engine = _engine(sqlalchemy, parsed, shown)
        try:
            return read_schema(engine)
        finally:
            engine.dispose()
    except ImportError as error:  # the dialect's driver (psycopg, pymysql...) is not installed
        from grapher_core.errors import MissingDependencyError

        raise MissingDependencyError(
            f"--database {shown}: the {parsed.drivername!r} driver is not installed ({error})"
        ) from None
    except sqlalchemy.exc.NoSuchModuleError:
        raise InputError(
            f"--database {shown}: unknown database dialect {parsed.drivername!r}"
        ) from None
    except sqlalchemy.exc.SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        raise InputError(f"--database {shown}: cannot read the schema ({reason})") from None


def _engine(sqlalchemy: Any, url: Any, shown: str) -> Any:
    """An engine for ``url``; a SQLite file must exist and is opened read-only."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return sqlalchemy.create_engine(url)
    if database.startswith("file:"):  # already a SQLite URI: the user chose its mode
        return sqlalchemy.create_engine(url)
    path = Path(database)
    if not path.exists():
        raise InputFileNotFoundError(f"--database {shown}: {path} does not exist")
    if not path.is_file():
        raise InputError(f"--database {shown}: {path} is not a file")
    import sqlite3
    from urllib.parse import quote

    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    return sqlalchemy.create_engine(url, creator=lambda: sqlite3.connect(uri, uri=True))


def _clean(text: str, limit: int) -> str:
    """``text`` as the model can take it: at most ``limit`` characters, lone surrogates
    replaced by U+FFFD (they cannot be encoded as UTF-8, which every tokenizer does)."""
    return _LONE_SURROGATE.sub("\ufffd", text[:limit])


def _shown(text: str) -> str:
    """``text`` printable on any UTF-8 stream: a lone surrogate is written as ``\\ud800``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _proximities(graph: str) -> list[Any] | None:
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


def run(args: argparse.Namespace) -> int:
    from grapher_core.embeddings import default_embedder
    from grapher_core.rerank import GraphReranker

    for name in ("fetch", "top", "max_chars"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1")
    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be >= 1")
    objects = load_objects(args)
    if not objects:
        raise InputError("no objects to rerank (empty database or corpus)")
    if args.mentions:
        from grapher_core.enrich.mentions import add_mentions

        metadata = add_mentions(objects)
        objects = [CorpusObject(o.id, o.text, m) for o, m in zip(objects, metadata, strict=True)]
    cut = sum(1 for o in objects if len(o.text) > args.max_chars)
    objects = [CorpusObject(o.id, _clean(o.text, args.max_chars), o.metadata) for o in objects]
    question = _clean(args.question, args.max_chars)
    started = time.perf_counter()
    embedder = default_embedder()
    vectors = np.asarray(embedder.embed_documents([o.text for o in objects]))
    query = np.asarray(embedder.embed_query(question))
    scores = vectors @ query
    order = np.argsort(-scores, kind="stable")[: args.fetch]
    candidates = [
        Candidate(objects[i].id, objects[i].text, float(scores[i]), objects[i].metadata, vectors[i])
        for i in order
    ]
    embed_s = time.perf_counter() - started
    reranker = GraphReranker(_proximities(args.graph), args.ranker, args.alpha)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = reranker.run(candidates, query=question, query_embedding=query)
    top = min(args.top, len(candidates))
    print(
        f"{len(objects)} objects; {len(candidates)} retrieved by cosine similarity (MiniLM, "
        f"{embed_s:.1f} s with model loading)"
    )
    if cut:
        print(f"note: {cut} texts longer than {args.max_chars:,} characters were cut (--max-chars)")
    from grapher_core.edges.detect import describe

    edges = ", ".join(f"{kind}: {count}" for kind, count in result.edges.items()) or "none"
    print(f"graph: {describe(result.proximities)}; edges per kind: {edges}")
    for warning in said:
        print(f"note: {_shown(str(warning.message))}")
    _side_by_side(candidates, result.ranked, top, args.ranker)
    _why(result.ranked[:top], {c.id for c in candidates[:top]})
    return 0


def _side_by_side(
    candidates: Sequence[Candidate], ranked: Sequence[RankedCandidate], top: int, ranker: str
) -> None:
    width = max(
        24,
        *(len(_shown(c.id)) + 2 for c in candidates[:top]),
        *(len(_shown(r.id)) + 2 for r in ranked[:top]),
    )
    print(f"\n    {'retriever':<{width + 7}}GraphER ({ranker}; relevance)")
    for k in range(top):
        left = f"{_shown(candidates[k].id):<{width}} {candidates[k].score:.3f}"
        relevance = ranked[k].relevance if ranked[k].relevance is not None else ranked[k].score
        right = f"{_shown(ranked[k].id):<{width}} {relevance:.3f}"
        print(f"{k + 1:>3}. {left}  {right}")


def _why(ranked: Sequence[RankedCandidate], before: set[str]) -> None:
    newcomers = [r for r in ranked if r.id not in before]
    if not newcomers:
        print("\nno newcomer in the top: the graph kept the retriever's top")
    for r in newcomers:
        reasons = ", ".join(
            f"{_shown(c.neighbour_id)} ({'/'.join(c.kinds)})" for c in r.explanation
        )
        print(
            f"\n{_shown(r.id)}: rank {r.original_rank} -> {r.rank}, lifted by "
            f"{reasons or 'nothing'}"
        )
