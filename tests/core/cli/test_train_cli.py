"""`grapher train` on tiny real data: a JSONL corpus and 42 labelled questions written here,
the shipped GAT fine-tuned for real (2 folds, a few epochs, CPU), scored through the same
reranker call a deployment runs.

The corpus is built so that each outcome is certain, not lucky. Per question, five decoys share
both of its words (the retriever ranks them 1-5) and its gold object shares one:

* ``marked``: every gold object also says "target", a word no question and no decoy holds --
  nothing the retriever, GCS or the shipped checkpoint reads, and one linear feature of the
  object vector for a fine-tune to learn. The fine-tuned GAT lifts gold into the top 5 on held-out
  questions; nothing else can.
* ``easy``: the gold object repeats both words: the retriever already ranks it first, so no
  reranker can win a question and the fine-tuned one cannot beat anything.

The embedder is the bag-of-words hashing model of ``conftest.py`` at MiniLM's size and name (the
shipped checkpoint refuses other vectors), so no model is loaded.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from helpers_train import FAST, MINILM, write_data, write_jsonl

from grapher_core import Candidate, GraphReranker
from grapher_core.cli import main
from grapher_core.cli.main import build_parser
from grapher_core.errors import GraphERError, InputError, InputFileNotFoundError
from grapher_core.evaluation.choice import choose
from grapher_core.evaluation.measure import Measurement
from grapher_core.learned.finetune import assign_folds
from grapher_core.request.settings import RerankSettings

if TYPE_CHECKING:
    from conftest import HashEmbedder

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")


@pytest.fixture
def minilm(embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch) -> HashEmbedder:
    """The hashing model at MiniLM's dimension and name, so the GAT checkpoints accept it."""
    embedder.dim = 384
    monkeypatch.setattr(embedder, "name", MINILM, raising=False)
    return embedder


def train(corpus: Path, questions: Path, *extra: str) -> list[str]:
    return ["train", "--corpus", str(corpus), "--questions", str(questions), *FAST, *extra]


def test_a_fine_tune_that_wins_writes_a_checkpoint_and_a_config_that_ranks(
    tmp_path: Path, minilm: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, questions = write_data(tmp_path, "marked")
    out = tmp_path / "out"
    assert main(train(corpus, questions, "--out", str(out))) == 0
    printed = capsys.readouterr()
    assert "the fine-tuned GAT beats both on PR@5" in printed.out
    assert "fold 1/2: epoch   1" in printed.err  # progress per fold and epoch
    names = ("gat_finetuned.safetensors", "gat_finetuned.json", "grapher_config.json")
    weights, meta, config = (out / name for name in names)
    saved = json.loads(meta.read_text())
    decision = saved["metrics"]["decision"]
    assert decision["ships"] is True
    for key in ("PR@5_vs_gcs", "PR@5_vs_shipped"):  # significant without a lowered bar
        assert decision[key]["p"] < 0.05 and decision[key]["wins"] > decision[key]["losses"]
    held = saved["metrics"]["metrics"]
    assert held["finetuned"]["PR@5"] > held["gcs"]["PR@5"] + 0.3
    assert saved["training"]["lr"] == 0.01 and saved["training"]["questions"] == 42
    written = json.loads(config.read_text())
    assert written["ranker"] == "gat"
    assert written["ranker_options"] == {"checkpoint": weights.name}  # beside the config
    moved = tmp_path / "elsewhere" / "model"  # the folder moved whole (shared, deployed)
    moved.parent.mkdir()
    out.rename(moved)
    weights, config = moved / weights.name, moved / config.name
    settings = RerankSettings.from_config(config)  # what both wrappers' from_config build on
    assert settings.ranker == "gat" and settings.seed_transform == "rank"
    assert Path(settings.ranker_options["checkpoint"]).resolve() == weights.resolve()
    reranker = GraphReranker.from_config(config)
    assert Path(reranker.ranker.path).resolve() == weights.resolve()  # type: ignore[attr-defined]
    pool, query = fresh_pool(minilm)
    assert [c.id for c in pool].index("gold") == 5  # the retriever ranks it sixth
    ranked = reranker.rerank(pool, query_embedding=query, top_n=5)
    assert "gold" in [r.id for r in ranked]  # the fine-tuned model lifts it into the top 5


def fresh_pool(embedder: HashEmbedder) -> tuple[list[Candidate], np.ndarray]:
    """A question none of the training ones is, in the corpus's pattern: five linked decoys
    sharing both its words, the marked gold object one, four objects none; best first by
    cosine, and the question's vector."""
    words = ["ab", "cd", "ef", "gh", "ij"]
    texts = {f"d{i}": f"quokka wombat {word}" for i, word in enumerate(words)}
    texts |= {"gold": "quokka target kl"}
    texts |= {f"f{i}": f"lemur zebra {word}" for i, word in enumerate(words[:4])}
    decoys = [f"d{i}" for i in range(5)]
    vectors = embedder.embed_documents(list(texts.values()))
    query = embedder.embed_documents(["quokka wombat"])[0]
    scores = vectors @ query
    pool = []
    for i in np.argsort(-scores, kind="stable"):
        key = list(texts)[i]
        links = [d for d in decoys if d != key] if key in decoys else []
        meta = {"db_id": "zoo", "links": links}
        pool.append(Candidate(key, texts[key], float(scores[i]), meta, vectors[i]))
    return pool, query


def test_a_fine_tune_that_does_not_win_writes_nothing_and_says_why(
    tmp_path: Path, minilm: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, questions = write_data(tmp_path, "easy")
    out = tmp_path / "out"
    assert main(train(corpus, questions, "--out", str(out), "--quiet")) == 0
    printed = capsys.readouterr()
    assert "does not beat both GCS and the shipped GAT on PR@5" in printed.out
    assert "against GCS +0/-0 questions, McNemar p=1" in printed.out
    assert "nothing written" in printed.out
    assert re.search(r"retriever \(cosine\) +100\.0 ", printed.out)  # the table's numbers
    assert printed.err == ""  # --quiet
    assert not out.exists()


def test_fewer_than_30_questions_is_refused_naming_both_counts(
    tmp_path: Path, minilm: HashEmbedder
) -> None:
    corpus, questions = write_data(tmp_path, "marked", questions=29)
    args = build_parser().parse_args(train(corpus, questions))
    with pytest.raises(InputError, match=r"29 labelled questions; grapher train needs at least 30"):
        args.func(args)
    assert minilm.embedded == 0  # refused before anything was embedded


def test_a_missing_corpus_is_a_grapher_error_naming_it(
    tmp_path: Path, minilm: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    _, questions = write_data(tmp_path, "marked")
    missing = tmp_path / "nowhere.jsonl"
    args = build_parser().parse_args(train(missing, questions))
    with pytest.raises(InputFileNotFoundError, match=r"nowhere\.jsonl"):
        args.func(args)
    assert main(train(missing, questions)) == 2
    assert "grapher train: error:" in capsys.readouterr().err


def test_without_the_gat_extra_it_exits_2_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "torch_geometric", None)  # import fails as if absent
    corpus, questions = write_data(tmp_path, "marked")
    assert main(train(corpus, questions)) == 2
    assert "pip install 'grapher-rerank[gat]'" in capsys.readouterr().err


def test_a_rerun_with_work_skips_finished_folds_and_refuses_damaged_ones(
    tmp_path: Path, minilm: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, questions = write_data(tmp_path, "marked")
    work = tmp_path / "work"
    command = train(
        corpus,
        questions,
        "--split-by",
        "source",
        "--work",
        str(work),
        "--out",
        str(tmp_path / "out"),
    )
    assert main(command) == 0
    first = capsys.readouterr()
    assert "2 folds by source" in first.out
    assert {p.name for p in work.glob("fold-*")} >= {
        "fold-0.json",
        "fold-1.json",
        "fold-0-model.safetensors",
        "fold-1-model.safetensors",
    }
    assert main(command) == 0
    again = capsys.readouterr()
    for fold in (1, 2):
        assert f"fold {fold}/2: finished in an earlier run" in again.err
    assert "fold 1/2: epoch" not in again.err  # no fold was trained again
    table = first.out.split("pooled:")[1].split("\n\n")[1]
    assert table in again.out  # the same held-out numbers, read back
    damaged = json.loads((work / "fold-1.json").read_text())
    damaged["ranks"]["finetuned"][0] = [0]
    write_jsonl(work / "fold-1.json", [damaged])
    args = build_parser().parse_args(command)
    with pytest.raises(GraphERError, match=r"fold-1.json: field 'ranks.finetuned\[0\]'"):
        args.func(args)
    args = build_parser().parse_args([*command, "--epochs", "2"])
    with pytest.raises(InputError, match=r"plan\.json: field 'recipe'"):
        args.func(args)


def test_folds_by_source_keep_each_source_whole_and_balanced() -> None:
    groups = [f"db{i % 7}" for i in range(70)] + ["big"] * 20
    folds = assign_folds(groups, 3, seed=1)
    for source in set(groups):
        assert len({f for f, g in zip(folds, groups, strict=True) if g == source}) == 1
    sizes = sorted(folds.count(f) for f in range(3))
    assert sizes[-1] - sizes[0] <= 10
    with pytest.raises(InputError, match="--folds 9 needs at least 9 groups to split by, got 8"):
        assign_folds(groups, 9, seed=1)


def rows_for(questions: int) -> list[Measurement]:
    """The retriever, then the default GCS one question ahead of it (gold ranks)."""
    retriever = tuple((2,) for _ in range(questions))
    default = ((1,), *retriever[1:])
    from grapher_core.evaluation.grid import DEFAULT

    return [Measurement("retriever", None, retriever), Measurement(DEFAULT.label, DEFAULT, default)]


def test_eval_advice_mentions_grapher_train_from_30_questions_with_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "`grapher train` can fine-tune the GAT" in str(choose(rows_for(30), 1).hint)
    assert "grapher train" not in str(choose(rows_for(29), 1).hint)
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    assert "grapher train" not in str(choose(rows_for(30), 1).hint)


def test_keep_writes_a_losing_model_whose_config_says_so_when_loaded(
    tmp_path: Path, minilm: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    from grapher_core.diagnostics import GraphERWarning
    from grapher_core.utils import callsite

    corpus, questions = write_data(tmp_path, "easy")
    out = tmp_path / "out"
    assert main(train(corpus, questions, "--out", str(out), "--quiet", "--keep")) == 0
    printed = capsys.readouterr().out
    assert "does not beat both GCS and the shipped GAT" in printed and "kept (--keep)" in printed
    config = out / "grapher_config.json"
    written = json.loads(config.read_text())
    assert written["verdict"]["wins"] is False
    assert "does not beat both" in written["verdict"]["reason"]
    assert (out / "gat_finetuned.safetensors").is_file()
    callsite._said.clear()  # said once per file and process: hear it afresh here
    with pytest.warns(GraphERWarning, match="kept although it does not win"):
        reranker = GraphReranker.from_config(config)
    assert reranker.ranker.name == "gat"


def test_too_few_questions_are_refused_before_torch_is_imported(tmp_path: Path) -> None:
    import subprocess

    corpus, questions = write_data(tmp_path, "marked", questions=29)
    script = (
        "import sys\n"
        "from grapher_core.cli import main\n"
        f"code = main(['train', '--corpus', {str(corpus)!r}, '--questions', {str(questions)!r},"
        " '--no-cache'])\n"
        "print(code, 'torch' in sys.modules, 'torch_geometric' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    assert "29 labelled questions; grapher train needs at least 30" in done.stderr


def test_gold_key_trains_and_measures_at_the_level_given(
    tmp_path: Path, minilm: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, questions = write_data(tmp_path, "easy")
    rows = [json.loads(line) for line in questions.read_text().splitlines()]
    by_source = [{**q, "gold": [f"db{n % 6}"]} for n, q in enumerate(rows)]  # the gold's db_id
    pages = write_jsonl(tmp_path / "pages.jsonl", by_source)
    out = tmp_path / "out"
    args = train(corpus, pages, "--out", str(out), "--quiet", "--gold-key", "db_id")
    assert main(args) == 0
    printed = capsys.readouterr().out
    # every candidate of a question shares its db_id: the retriever already has it first
    assert re.search(r"retriever \(cosine\) +100\.0 ", printed)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{**by_source[0], "gold": ["db9"]}, *by_source[1:]])
    assert main(train(corpus, bad, "--gold-key", "db_id")) == 2
    assert "is not a value of metadata key 'db_id'" in capsys.readouterr().err
