"""Evaluation corpora "like a user's", built from real installable software.

Four folders in the shared benchmark format (``corpus.jsonl`` + ``queries.jsonl``):

* ``ml_tracking_tables``: the tables that Optuna's ``RDBStorage`` and MLflow's
  ``SqlAlchemyStore`` create in SQLite, pooled (two applications, one pool).
* ``django_cms_tables``: the tables of two Django projects created by ``migrate``: a Wagtail
  CMS site and a site with Django's contrib apps plus django-allauth, pooled.
* ``pygame_docs``: the HTML reference pages shipped inside the pygame wheel, chunked by section.
* ``markdown_docs``: the Markdown documentation shipped in the Python-Markdown sdist, chunked by
  heading.

``build`` regenerates every ``corpus.jsonl`` from the installed packages (the questions are
hand-written and kept as committed JSONL); ``run`` measures the retriever's order and GraphER's
zero-config defaults through the LangChain and LlamaIndex wrappers. See ``docs/user_corpora.md``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CORPORA", "DOC_CORPORA", "HERE", "TABLE_CORPORA"]

HERE = Path(__file__).resolve().parent
TABLE_CORPORA: tuple[str, ...] = ("ml_tracking_tables", "django_cms_tables")
DOC_CORPORA: tuple[str, ...] = ("pygame_docs", "markdown_docs")
CORPORA: tuple[str, ...] = TABLE_CORPORA + DOC_CORPORA
