"""What ``grapher rerank`` and ``grapher eval`` read, once for both: a corpus JSONL file or
several databases pooled as one corpus, a questions file checked line by line before anything
is embedded, and the corpus's vectors, kept on disk so a second run embeds nothing again.

The vectors live in ``embeddings.sqlite`` in the cache folder
(:func:`grapher_core.utils.paths.cache_root`), keyed by the model name and a hash of the exact
text embedded -- the layout ``grapher-bench`` uses, so the two share vectors. A cache that cannot
be read or written is said once and skipped: the run goes on without it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from grapher_core.candidates import CorpusObject
from grapher_core.errors import InputError, InputFileNotFoundError
from grapher_core.evaluation.questions import Question
from grapher_core.utils.embedding_cache import EmbeddingCache, text_key
from grapher_core.utils.progress import Progress
from grapher_core.utils.text import clean_text  # the core's rule, every door's
from grapher_core.vectors import check_batch

__all__ = [
    "MAX_TEXT_CHARS",
    "Question",
    "clean_text",
    "embed_texts",
    "load_corpus",
    "read_database",
    "read_questions",
    "shown",
]

MAX_TEXT_CHARS = 20_000
"""Characters of each text embedded (``--max-chars``): MiniLM keeps its first 256 tokens, and
a tokenizer handed a text of tens of megabytes aborts the process."""


def shown(text: str) -> str:
    """``text`` printable on any UTF-8 stream: a lone surrogate is written as ``\\ud800``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# -- the corpus -------------------------------------------------------------------------------


def load_corpus(
    corpus: Path | None,
    databases: Sequence[str] | None,
    *,
    id_field: str = "id",
    text_field: str = "text",
    limit: int | None = None,
) -> list[CorpusObject]:
    """The objects of ``corpus`` (JSONL) or of every database of ``databases``, pooled as one
    corpus with ids ``"<db name>.<table>"``; two databases giving the same id (two files of one
    name) are refused, naming both."""
    if databases:
        objects: list[CorpusObject] = []
        source: dict[str, str] = {}
        for url in databases:
            for item in read_database(url):
                if item.id in source:
                    raise InputError(
                        f"--database {url}: table id {item.id!r} is also in --database "
                        f"{source[item.id]} (two databases of the same name cannot be pooled; "
                        "rename one file)"
                    )
                source[item.id] = url
                objects.append(item)
        return objects if limit is None else objects[:limit]
    if corpus is None:
        raise InputError("give --corpus FILE.jsonl or --database URL")
    from grapher_core.cli.enrich import read_corpus_lines

    records = read_corpus_lines(corpus, limit, id_field=id_field, text_field=text_field)
    return [
        CorpusObject(str(r[id_field]), r[text_field], r.get("metadata") or {}) for _, r in records
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
    where = parsed.render_as_string(hide_password=True)
    try:
        engine = _engine(sqlalchemy, parsed, where)
        try:
            return read_schema(engine)
        finally:
            engine.dispose()
    except ImportError as error:  # the dialect's driver (psycopg, pymysql...) is not installed
        from grapher_core.errors import MissingDependencyError

        raise MissingDependencyError(
            f"--database {where}: the {parsed.drivername!r} driver is not installed ({error})"
        ) from None
    except sqlalchemy.exc.NoSuchModuleError:
        raise InputError(
            f"--database {where}: unknown database dialect {parsed.drivername!r}"
        ) from None
    except sqlalchemy.exc.SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        raise InputError(f"--database {where}: cannot read the schema ({reason})") from None


def _engine(sqlalchemy: Any, url: Any, where: str) -> Any:
    """An engine for ``url``; a SQLite file must exist and is opened read-only."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return sqlalchemy.create_engine(url)
    if database.startswith("file:"):  # already a SQLite URI: the user chose its mode
        return sqlalchemy.create_engine(url)
    path = Path(database)
    if not path.exists():
        raise InputFileNotFoundError(f"--database {where}: {path} does not exist")
    if not path.is_file():
        raise InputError(f"--database {where}: {path} is not a file")
    from urllib.parse import quote

    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    return sqlalchemy.create_engine(url, creator=lambda: sqlite3.connect(uri, uri=True))


# -- questions --------------------------------------------------------------------------------


def read_questions(
    path: Path, corpus_ids: set[str], *, need_gold: bool, gold_key: str | None = None
) -> list[Question]:
    """Every line of ``path`` (``{"id", "text", "gold": [corpus ids]}``) checked before any
    work: a missing field, an empty text or gold list, a gold id not in the corpus (``corpus_ids``:
    its ids, or with ``gold_key`` its values of that key), a gold id listed twice or a duplicate
    question id is an ``InputError`` naming the file, the line, the field and the value.
    ``need_gold=False`` (``grapher rerank``) makes ``gold`` optional."""
    from grapher_core.evaluation.questions import read_questions as read

    return read(path, corpus_ids, need_gold=need_gold, gold_key=gold_key)


# -- progress ---------------------------------------------------------------------------------


# -- vectors, cached on disk ------------------------------------------------------------------


def embed_texts(
    embedder: Any,
    texts: Sequence[str],
    *,
    store: EmbeddingCache | None,
    label: str = "embedding",
    progress: bool = True,
    batch: int = 256,
) -> tuple[np.ndarray, int]:
    """One L2-normalised float32 row per text, and how many came from ``store``; the texts it
    lacks are embedded in batches of ``batch`` (a counter on stderr for long work) and kept."""
    name = str(getattr(embedder, "name", type(embedder).__name__))
    keys = [text_key(name, t) for t in texts]
    found = store.get_many(list(dict.fromkeys(keys))) if store is not None else {}
    cached = sum(1 for k in keys if k in found)
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    if missing:
        text_of = dict(zip(keys, texts, strict=True))
        counter = Progress(len(missing), label, enabled=progress)
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            rows = check_batch(
                embedder.embed_documents([text_of[k] for k in chunk]), len(chunk), model=name
            )  # checked before the cache keeps any of it
            new = dict(zip(chunk, rows, strict=True))
            if store is not None:
                store.put_many(new)
            found.update(new)
            counter.update(len(chunk))
        counter.close()
    if not texts:
        return np.zeros((0, 0), dtype=np.float32), 0
    matrix = np.vstack([found[k] for k in keys]).astype(np.float32, copy=False)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0), cached
