"""What a recommendation gave each of our consumers, read from its trigger-feed message: the
partitions, the records/s they produce and the capacity the decision used for the consumer, by the
message's own load model (:mod:`streaming.contracts.load_model`). A shed too small is read against
what the job believed (#46): live, ``slowdown``'s first recommendation left c0 three partitions,
59.7/s, on a capacity of 69.7/s (``benchmarks/results/loop-slowdown-main.md``).

Example: an assignment giving ``c-0`` partitions 0 and 1 of ``t`` at 20/s each, with ``c-0`` taken
at 57.6/s, is ``{0: {"partitions": 2, "rate": 40.0, "capacity": 57.6}}`` for consumer index 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streaming.contracts import load_model


def per_consumer(rec: Mapping[str, Any], index_of: Mapping[str, int]) -> dict[str, Any]:
    """``{"given": consumer index (or client id, where unknown) -> figures}`` of a feed message; {}
    for one without an assignment. A partition without a rate in the model adds nothing; the
    capacity is null where the model has none (no model, or the members alike)."""
    model = load_model.read(rec.get("load_model"))
    rates = {} if model is None else model.rate
    capacity = {m.client_id: m.records_per_s for m in (model and model.members) or ()}
    given: dict[Any, dict[str, Any]] = {}
    for m in rec.get("assignment") or []:
        tps = [(t, p) for t, p in m.get("partitions") or []]
        known = [rates[t][p] for t, p in tps if t in rates and p < len(rates[t])]
        given[index_of.get(m.get("client_id"), m.get("client_id"))] = {
            "partitions": len(tps),
            "rate": round(sum(r or 0.0 for r in known), 1),
            "capacity": capacity.get(m.get("client_id"))}
    return {"given": given} if given else {}
