"""One name per meaning across the wrappers: LlamaIndex's former names still work, warned."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.schema import TextNode

from grapher_core.enrich import EntityCache
from grapher_core.enrich.links import URL_KEYS
from grapher_core.metadata import read_list
from llama_index_grapher import GraphEREntityExtractor, GraphERLinkExtractor

PAGE = TextNode(
    text="Read [the intro](intro.html), [this page](#top) and [more](https://other.example/x).",
    metadata={"url": "https://docs.example/guide/start.html"},
)


def links(extractor: GraphERLinkExtractor) -> list[str]:
    return read_list(extractor.extract([PAGE])[0].get("links"))


def test_url_keys_is_langchain_s_name_and_default() -> None:
    from langchain_grapher import LinkTransformer

    assert GraphERLinkExtractor().url_keys == LinkTransformer().url_keys == URL_KEYS
    assert URL_KEYS == ("source", "url", "file_path")  # LangChain loaders, web, LlamaIndex
    assert GraphERLinkExtractor(url_keys="url").url_keys == ("url",)
    assert LinkTransformer(url_keys="url").url_keys == ("url",)
    # The page's own URL resolves relative links and drops the link to itself ("#top").
    resolved = ["https://docs.example/guide/intro.html", "https://other.example/x"]
    assert links(GraphERLinkExtractor(url_keys="url")) == resolved
    assert links(GraphERLinkExtractor()) == resolved  # the default finds "url" too
    assert links(GraphERLinkExtractor(url_keys=())) == ["intro.html", "https://other.example/x"]


def test_base_field_is_a_deprecated_alias_of_url_keys() -> None:
    with pytest.warns(DeprecationWarning, match=r"base_field= is deprecated: use url_keys=") as w:
        old = GraphERLinkExtractor(base_field="url")
    assert w[0].filename == __file__  # points at the caller's line
    assert old.url_keys == ("url",) and links(old) == links(GraphERLinkExtractor(url_keys="url"))
    with pytest.warns(DeprecationWarning):
        assert GraphERLinkExtractor(base_field=None).url_keys == ()
    with pytest.warns(DeprecationWarning, match="use url_keys"):
        assert old.base_field == "url"
    with pytest.raises(ValueError, match="give url_keys= only"):
        GraphERLinkExtractor(base_field="url", url_keys=("url",))
    assert "base_field" not in old.to_dict()


def test_cache_is_langchain_s_name_and_cache_path_is_deprecated(tmp_path: Path) -> None:
    path = str(tmp_path / "entities.sqlite")
    with pytest.warns(DeprecationWarning, match=r"cache_path= is deprecated: use cache="):
        old = GraphEREntityExtractor(cache_path=path)
    assert old.cache == path and old.to_dict()["cache"] == path
    with pytest.warns(DeprecationWarning, match="use cache"):
        assert old.cache_path == path
    with EntityCache(tmp_path / "other.sqlite") as cache:
        extractor = GraphEREntityExtractor(cache=cache)
        assert extractor._resolved()[1] is cache  # an EntityCache is used as given
        assert extractor.to_dict()["cache"] == str(cache.path)
        with pytest.raises(ValueError, match="cache must be an EntityCache or a path"):
            GraphEREntityExtractor(cache=3)
        with pytest.raises(ValueError, match="give cache= only"):
            GraphEREntityExtractor(cache=path, cache_path=path)
