"""One request path for every door: settings -> engine -> a sans-IO call -> a reranking.

::

    settings = RerankSettings(...)                 # frozen, validated once
    engine = engine_for(settings)                  # GraphReranker | ExpandingReranker | ...
    call = engine.call(candidates, query=...)      # no IO inside
    result = run_call(call, DoorIO(...).answer)    # or: await arun_call(call, io.aanswer)

The call says which IO it needs next (:class:`Embed`, :class:`Fetch`, :class:`ReadStored`);
the door answers with its framework's models and stores, sync or awaited, and nothing else.
"""

from grapher_core.request.call import Call
from grapher_core.request.door import DoorIO, arun_call, run_call
from grapher_core.request.needs import Embed, Embedded, Fetch, Need, ReadStored

__all__ = [
    "Call",
    "DoorIO",
    "Embed",
    "Embedded",
    "Fetch",
    "Need",
    "ReadStored",
    "arun_call",
    "run_call",
]
