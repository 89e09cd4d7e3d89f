"""Which members a ``lag_skew`` recommendation is about: a slow member, or a hot partition.

Lag skews for two reasons that call for different moves. A *hot partition* has more arriving than
the others; its owner keeps pace or not, and the cure is to spread partitions by load. A *slow
member* cannot consume what its partitions receive: it is over its capacity (backlogged, and more
arriving than it consumes: :attr:`streaming.lag.capacity.Found.over`; or more arriving than the
capacity measured for it, an estimate kept after its backlog's window has moved on), and the cure
is to give it less than it can do. The trigger names each member over its capacity at the
observation it was decided on, with its measured rate against its peers' (the median of the other
members' capacity estimates, :mod:`streaming.lag.capacity`):

``{"member_id": "C1", "client_id": "c-C1", "records_per_s": 60.0, "peers_records_per_s": 150.0}``

No member over its capacity: the skew is the partitions' (the recommendation's ``hot_partitions``
says which, :mod:`streaming.lag.hot`). Capacities unknown (no estimate rests on
:data:`streaming.lag.capacity.CONFIDENT_S` yet): nobody is named.
"""

from __future__ import annotations

import statistics

from streaming.lag import capacity
from streaming.lag.owners import Owners
from streaming.state.group_state import GroupState


def over_capacity(state: GroupState, owners: Owners, stuck_after: int, headroom: float
                  ) -> list[dict[str, object]]:
    """The members over their capacity now, each with its measured rate and its peers'; empty when
    none is, or the capacities are unknown."""
    estimates = capacity.estimates(state.known_capacity(), state.lag, lambda: owners, stuck_after,
                                   headroom)
    if estimates is None:
        return []
    over = capacity.window(state.lag, owners.by_topic, owners.count, stuck_after).over
    arriving = capacity.inflow(state.lag, owners.by_topic, owners.count, stuck_after)
    client = {m.member_id: m.client_id for m in state.members or []}
    out: list[dict[str, object]] = []
    for i, mid in enumerate(owners.ids):
        held = estimates.get(mid)
        # the same margin as the window's own rule (capacity.RISE)
        beyond = (held is not None and held.measured
                  and arriving[i] > held.records_per_s * (1.0 + capacity.RISE))
        if not (over[i] or beyond):
            continue
        peers = [c.records_per_s for other, c in estimates.items() if other != mid]
        out.append({"member_id": mid, "client_id": client.get(mid),
                    "records_per_s": round(estimates[mid].records_per_s, 3),
                    "peers_records_per_s": round(statistics.median(peers), 3) if peers else None})
    return out
