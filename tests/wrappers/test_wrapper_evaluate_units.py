"""``evaluate_retriever`` on retrievers with fixed answers (real ``BaseRetriever`` subclasses of
each framework, no model): page-level numbers counted by hand, LlamaIndex's PREVIOUS/NEXT
relationships lifting a chunk as the postprocessor would, and the refusals."""

from __future__ import annotations

import pytest
from helpers_extras import needs

needs("langchain")
needs("llamaindex")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever as LangChainRetriever  # noqa: E402
from llama_index.core.base.base_retriever import BaseRetriever as LlamaRetriever  # noqa: E402
from llama_index.core.schema import (  # noqa: E402
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from grapher_core.errors import InputError, InputTypeError  # noqa: E402
from grapher_core.evaluation.outcome import Evaluation  # noqa: E402

# what the retriever returns for every question, best first: 3 chunks of page a, then c, b
LISTS = {
    "where are a and b?": ["a#0", "a#1", "a#2", "c#0", "b#0", "b#1"],
    "where is c?": ["b#1", "c#0", "a#0", "a#1", "a#2", "b#0"],
}


class FixedRetriever(LangChainRetriever):
    """A LangChain retriever answering from :data:`LISTS`, scores in ``metadata["score"]``."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        ids = LISTS[query]
        return [
            Document(
                id=i,
                page_content=f"text of {i}",
                metadata={"source": i.split("#")[0], "score": 1.0 - n / 10},
            )
            for n, i in enumerate(ids)
        ]


QUESTIONS = [
    {"id": "ab", "text": "where are a and b?", "gold": ["a", "b"]},
    {"id": "c", "text": "where is c?", "gold": ["c"]},
]


def test_page_level_numbers_as_counted_by_hand() -> None:
    from langchain_grapher import evaluate_retriever

    result = evaluate_retriever(
        FixedRetriever(), QUESTIONS, gold_key="source", k=(3, 5), rankers=("gcs",), repeats=1
    )
    assert isinstance(result, Evaluation)
    base = result.rows[0].metrics([3, 5])
    # by hand: q1 -- a at 1, b at 5 (a's 2nd and 3rd chunks take places 2-3); q2 -- c at 2
    assert base["PR@3"] == 0.5 and base["PR@5"] == 1.0
    assert base["gold@3"] == pytest.approx(2 / 3) and base["gold@5"] == 1.0
    assert base["MRR"] == pytest.approx((1 + 1 / 2) / 2)
    text = str(result)
    assert "2 questions (3 gold ids of metadata key 'source'); retriever: FixedRetriever" in text
    assert "score seeds not tried" in text and "choice on PR@3" in text
    assert len(result.records()) == len(result.rows)
    assert result.to_dict()["gold_key"] == "source"
    # scores handed over: both seed policies are tried
    scored = evaluate_retriever(
        FixedRetriever(),
        QUESTIONS,
        gold_key="source",
        rankers=("gcs",),
        score_key="score",
        repeats=1,
    )
    assert {r.setting.seeds for r in scored.rows[1:]} == {"rank", "score"}


def test_refusals_name_the_fix() -> None:
    from langchain_grapher import evaluate_retriever

    with pytest.raises(InputError, match="gold_key=<the metadata key your gold names>"):
        evaluate_retriever(FixedRetriever(), QUESTIONS, rankers=("gcs",))  # page names, no key
    with pytest.raises(InputTypeError, match="needs a LangChain BaseRetriever"):
        evaluate_retriever(object(), QUESTIONS)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown ranker 'gsc'"):
        evaluate_retriever(FixedRetriever(), QUESTIONS, rankers=("gsc",))
    with pytest.raises(InputError, match="cost budget"):
        evaluate_retriever(FixedRetriever(), QUESTIONS, cost_budget="cheap")
    partial = [*QUESTIONS, {"id": "z", "text": "where is c?", "gold": ["z"]}]
    result = evaluate_retriever(
        FixedRetriever(), partial, gold_key="source", rankers=("gcs",), repeats=1
    )
    assert any(
        "1 gold id never among any question's candidates (e.g. 'z')" in r for r in result.remarks
    )


class ChunkRetriever(LlamaRetriever):
    """A LlamaIndex retriever returning six chunks of two pages: the answer's second half
    (p#2) is last, but it is the NEXT of the first hit (p#1)."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        order = ["p#1", "q#0", "q#1", "q#2", "q#3", "p#2"]
        nodes = {i: TextNode(id_=i, text=f"text {i}", metadata={"page": i[0]}) for i in order}
        nodes["p#1"].relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id="p#2")
        nodes["p#2"].relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id="p#1")
        return [NodeWithScore(node=nodes[i], score=1.0 - n / 10) for n, i in enumerate(order)]


def test_llamaindex_relationships_survive_into_the_grid() -> None:
    from llama_index_grapher import GraphERPostprocessor, evaluate_retriever

    questions = [{"id": "p", "text": "the answer", "gold": ["p#1", "p#2"]}]
    result = evaluate_retriever(ChunkRetriever(), questions, k=(2, 5), rankers=("gcs",), repeats=1)
    default = result.choice.default
    assert result.rows[0].gold_ranks == ((1, 6),)
    assert default is not None and default.gold_ranks[0][1] < 6  # lifted by its NEXT edge
    post = GraphERPostprocessor(top_n=None)
    nodes = post.postprocess_nodes(ChunkRetriever().retrieve("the answer"), query_str="the answer")
    assert tuple(n.node.node_id for n in nodes) == default.orders[0]


def test_a_index_or_retriever_is_required() -> None:
    from llama_index_grapher import evaluate_retriever

    with pytest.raises(InputTypeError, match="BaseRetriever or a VectorStoreIndex"):
        evaluate_retriever("index", [{"text": "a", "gold": ["a"]}])
