"""Do synthetic questions lead ``grapher eval`` to the decision hand-written ones lead it to?

For each user corpus (``grapher_bench/user_corpora/<name>``, hand-written ``queries.jsonl``)
``grapher eval`` runs twice, as a user would run it: on the hand-written questions, and with
``--synthesize N`` (questions written by an OpenAI-compatible LLM, the local reader for a real
run). Each run's decision -- keep the default, switch to another configuration, or keep the
retriever's order -- and the sign of default - retriever on PR@K are compared. The LLM's answers
are cached (``entities.sqlite`` in the cache folder), so a run stopped halfway resumes and a
rerun asks nothing; the evaluation's vectors are cached too.

    grapher-bench reader start --threads 1
    python -m grapher_bench.user_corpora.synthetic --base-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-coder-1.5b --n 30 --out docs/synthetic_questions.md

Each corpus's two reports and logs go to ``--work`` (``bench_out/synthetic``); the table goes
between the ``synthetic-agreement`` markers of ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grapher_bench.sections import write_section

__all__ = ["Decision", "decision_of", "main"]

HERE = Path(__file__).resolve().parent
CORPORA = ("ml_tracking_tables", "django_cms_tables", "markdown_docs", "pygame_docs")
START, END = "<!-- synthetic-agreement:start -->", "<!-- synthetic-agreement:end -->"


@dataclass(frozen=True)
class Decision:
    """What one ``grapher eval`` report decided, and the default's PR@K minus the
    retriever's."""

    questions: int
    choice: str  # "default", "retriever" or "switch: <row>"
    k: int
    delta: float  # default - retriever, PR@K

    @property
    def sign(self) -> str:
        return "+" if self.delta > 1e-12 else "-" if self.delta < -1e-12 else "0"


def decision_of(report: dict[str, Any]) -> Decision:
    """The decision in a ``grapher eval --json`` report."""
    k = int(report["for_k"])
    rows = {row["name"]: row for row in report["rows"]}
    retriever = report["rows"][0]["metrics"][f"PR@{k}"]
    default = rows[report["default"]]["metrics"][f"PR@{k}"] if report["default"] else retriever
    chosen = report["chosen"]
    if chosen is None:
        choice = "retriever"
    elif chosen == report["default"]:
        choice = "default"
    else:
        choice = f"switch: {chosen}"
    return Decision(int(report["questions"]), choice, k, float(default) - float(retriever))


def _eval(args: list[str], log: Path) -> tuple[int, str]:
    """``grapher eval`` in this process, its output kept in ``log``."""
    from grapher_core.cli import main as grapher

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = grapher(["eval", *args, "--no-progress"])
    log.write_text(buffer.getvalue(), encoding="utf-8")
    return code, buffer.getvalue()


_KIND = re.compile(r"^  (\w+) \((\d+) q\)$")
_ROW = re.compile(r"^    (.+?)\s+PR@\d+\s+([\d.]+)\s+gold@\d+\s+([\d.]+)")


def kinds_of(output: str) -> dict[str, tuple[int, float]]:
    """Kind -> (questions, default - retriever PR@K in points) from the printed breakdown."""
    found: dict[str, tuple[int, float]] = {}
    kind: str | None = None
    count = 0
    values: list[float] = []
    for line in output.splitlines():
        if (match := _KIND.match(line)) is not None:
            kind, count, values = match.group(1), int(match.group(2)), []
        elif kind is not None and (row := _ROW.match(line)) is not None:
            values.append(float(row.group(2)))
            if len(values) == 2:
                found[kind] = (count, values[1] - values[0])
    return found


@dataclass(frozen=True)
class CorpusResult:
    name: str
    hand: Decision
    synthetic: Decision
    kinds: dict[str, tuple[int, float]]
    summary: str
    seconds: float


def run_corpus(name: str, opts: argparse.Namespace) -> CorpusResult:
    """Both evaluations of one corpus; the synthetic questions rewritten from the cache."""
    folder = opts.data / name
    work = opts.work / name
    work.mkdir(parents=True, exist_ok=True)
    common = ["--corpus", str(folder / "corpus.jsonl"), "--k", opts.k, "--top-n", str(opts.top_n)]
    started = time.perf_counter()
    if not (opts.keep_hand and (work / "hand.json").is_file()):
        hand_args = [
            "--questions",
            str(folder / "queries.jsonl"),
            "--json",
            str(work / "hand.json"),
        ]
        code, _ = _eval([*common, *hand_args], work / "hand.log")
        if code != 0:
            raise SystemExit(f"{name}: grapher eval on the hand-written questions exited {code}")
    questions = work / "synthetic.jsonl"
    questions.unlink(missing_ok=True)  # rebuilt from the answer cache: nothing is asked again
    synth = ["--synthesize", str(opts.n), "--write-questions", str(questions)]
    synth += ["--llm-model", opts.model, "--llm-base-url", opts.base_url]
    synth += ["--llm-timeout", str(opts.timeout), "--llm-concurrency", "1"]
    code, output = _eval(
        [*common, *synth, "--json", str(work / "synthetic.json")], work / "synthetic.log"
    )
    if code != 0:
        raise SystemExit(f"{name}: grapher eval --synthesize exited {code} (see its log)")
    hand = decision_of(json.loads((work / "hand.json").read_text()))
    synthetic = decision_of(json.loads((work / "synthetic.json").read_text()))
    summary = next((line for line in output.splitlines() if line.startswith("synthesised:")), "")
    seconds = time.perf_counter() - started
    return CorpusResult(name, hand, synthetic, kinds_of(output), summary, seconds)


def _agree(a: str, b: str) -> str:
    return "yes" if a == b else "**no**"


def table(results: list[CorpusResult], command: str, seconds: float, done: str = "") -> str:
    """The section written into the doc."""
    k = results[0].hand.k if results else 5
    lines = [
        f"Command: `{command}` ({seconds:.0f} s wall time{done}; retrieve top 20, decide on "
        f"PR@{k}).",
        "",
        f"| corpus | questions (hand / synthetic) | decision, hand | decision, synthetic | "
        f"agree | default - retriever PR@{k}, hand | synthetic (pair / single) | sign agrees |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        by_kind = " / ".join(
            f"{r.kinds[kind][1]:+.1f} ({r.kinds[kind][0]} q)"
            for kind in ("pair", "single")
            if kind in r.kinds
        )
        lines.append(
            f"| {r.name} | {r.hand.questions} / {r.synthetic.questions} | {r.hand.choice} | "
            f"{r.synthetic.choice} | {_agree(r.hand.choice, r.synthetic.choice)} | "
            f"{100 * r.hand.delta:+.1f} | {100 * r.synthetic.delta:+.1f} ({by_kind}) | "
            f"{_agree(r.hand.sign, r.synthetic.sign)} |"
        )
    lines.append("")
    lines += [f"* {r.name} ({r.seconds:.0f} s): {r.summary}" for r in results]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible server")
    parser.add_argument("--model", required=True, help="the model name it answers to")
    parser.add_argument("--n", type=int, default=30, help="questions per corpus (30)")
    parser.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated")
    parser.add_argument("--k", default="5,10")
    parser.add_argument("--top-n", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per LLM request")
    parser.add_argument("--data", type=Path, default=HERE)
    parser.add_argument("--work", type=Path, default=Path("bench_out/synthetic"))
    parser.add_argument("--out", type=Path, help="doc whose synthetic-agreement section to write")
    parser.add_argument(
        "--keep-hand",
        action="store_true",
        help="reuse a corpus's hand-written report from --work when there is one",
    )
    opts = parser.parse_args(argv)
    command = "python -m grapher_bench.user_corpora.synthetic " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    names = [c.strip() for c in opts.corpora.split(",") if c.strip()]
    started = time.perf_counter()
    results: list[CorpusResult] = []
    for name in names:
        results.append(run_corpus(name, opts))
        done = "" if len(results) == len(names) else f"; {len(results)} of {len(names)} corpora"
        body = table(results, command.strip(), time.perf_counter() - started, done)
        print(body, flush=True)
        if opts.out is not None:  # after each corpus: a run stopped later keeps what it did
            write_section(opts.out, START, END, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
