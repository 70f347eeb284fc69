"""Tables of a real database as corpus objects, read through SQLAlchemy's inspector.

Shared by the demo, the LangChain schema loader and the LlamaIndex schema reader, so all three
describe a table the same way as the benchmark corpora do: ``id = "<db_id>.<table>"``, text
``"Table: <name>\\nColumns: c1 (type), ..."`` and foreign keys in ``metadata["foreign_keys"]``
(the ids of tables linked in either direction).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from grapher_core.candidates import CorpusObject
from grapher_core.errors import MissingDependencyError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


def read_schema(
    database: str | Engine, *, db_id: str | None = None, schema: str | None = None
) -> list[CorpusObject]:
    """One :class:`CorpusObject` per table of ``database`` (a SQLAlchemy URL or Engine).

    ``db_id`` prefixes the table ids (default: the database name, or ``"db"``).
    """
    try:
        import sqlalchemy
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "reading a schema needs: pip install 'grapher-rerank[sql]'"
        ) from error

    engine = sqlalchemy.create_engine(database) if isinstance(database, str) else database
    try:
        inspector = sqlalchemy.inspect(engine)
        prefix = db_id or _database_name(engine)
        tables = sorted(inspector.get_table_names(schema=schema))
        columns = {t: inspector.get_columns(t, schema=schema) for t in tables}
        primary = {
            t: inspector.get_pk_constraint(t, schema=schema).get("constrained_columns") or []
            for t in tables
        }
        outgoing = {t: inspector.get_foreign_keys(t, schema=schema) for t in tables}
    finally:
        if isinstance(database, str):
            engine.dispose()

    linked: dict[str, set[str]] = defaultdict(set)
    pairs: dict[str, list[list[str]]] = defaultdict(list)
    for table, keys in outgoing.items():
        for key in keys:
            other = key.get("referred_table")
            if not other:
                continue
            linked[table].add(other)
            linked[other].add(table)
            for mine, theirs in zip(
                key.get("constrained_columns", []), key.get("referred_columns", []), strict=False
            ):
                pairs[table].append([mine, f"{prefix}.{other}", theirs])

    objects = []
    for table in tables:
        names = [str(c["name"]) for c in columns[table]]
        types = [_type_name(c.get("type")) for c in columns[table]]
        text = f"Table: {table}\nColumns: " + ", ".join(
            f"{name} ({kind})" for name, kind in zip(names, types, strict=True)
        )
        metadata: dict[str, Any] = {
            "table": table,
            "db_id": prefix,
            "foreign_keys": sorted(f"{prefix}.{t}" for t in linked[table] if t != table),
            "columns": names,
            "column_types": types,
            "primary_keys": list(primary[table]),
            "fk_pairs": pairs[table],
        }
        objects.append(CorpusObject(id=f"{prefix}.{table}", text=text, metadata=metadata))
    return objects


def _database_name(engine: Engine) -> str:
    database = engine.url.database
    if not database or database == ":memory:":
        return "db"
    name = database.replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def _type_name(column_type: Any) -> str:
    try:
        return str(column_type).lower() or "unknown"
    except Exception:  # some dialect types cannot render without a dialect
        return type(column_type).__name__.lower()
