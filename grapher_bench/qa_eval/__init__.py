"""Answer-level evaluation (``grapher-bench qa-eval``): does better retrieval give better answers?

Prompts A.1.2 (answer) and A.1.3 (judge) of the GraphER paper over any OpenAI-compatible
endpoint, through the enrichment client's retries, concurrency and SQLite cache; SQuAD EM/F1
and answer-in-context beside the judge; exact McNemar tests between systems; each run's
``qa_meta.json`` (model file hash, server, prompt versions, command, times). ``reader`` brings
a local reader (llama.cpp server) up and down. See docs/qa_eval.md.
"""
