"""Settings of the balanced assignor, and the group sizes at which its search changes shape."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

# Up to this many partitions the search is exhaustive (every member is a swap partner).
SMALL = 2000
# Up to this many partitions the peers' own results (range, roundrobin, lag, sticky) are added as
# starting candidates. Above it the local search alone is relied upon (it is also what keeps speed).
PEER_SEED_MAX_PARTITIONS = 2000
# Above this many partitions the search is cut to what keeps 100,000 partitions under a few seconds:
# no plain-LPT candidate, bounded local search and polish (bounded by counts, so still
# deterministic).
LARGE = 20000
# Up to this many partitions on a member, the search's steps on it run in plain Python: on arrays
# this short numpy's fixed cost per call is most of the work (the results are the same either way).
# The polish's swap search does more per partition (two costs each): it crosses over sooner (50
# partitions a member: Python 59 ms against 78; 100: numpy 5 % ahead;
# benchmarks/results/dense-step.txt, 2026-11-26).
FEW = 128
POLISH_FEW = 64


@dataclass(frozen=True, slots=True)
class BalancedOptions:
    """Settings of the balanced assignor. Every field can also be passed to
    :func:`~assignors.balanced.assign` as a keyword.

    ``max_count_skew``: bound on the partition-count skew between members with identical
    subscriptions. ``0`` = counts differ by at most one, as balanced as Kafka's assignors; ``k`` =
    they differ by at most ``1 + k``; ``None`` (default) = no hard bound: load decides, and counts
    are then evened out only as far as it costs no max load.

    ``load_tolerance``: fraction above the best max load found that rack locality and stickiness may
    cost (default 0.02, i.e. 2 %). ``0`` = balance strictly first.

    ``cross_rack_cost``, ``move_cost``: relative costs of one cross-rack partition and of one moved
    partition, as KIP-925's ``traffic_cost`` and ``non_overlap_cost``. Only their ratio matters. The
    default 10 : 1 (Kafka Streams' high-availability default) prefers fewer cross-rack reads over
    fewer moves; 1 : 10 (its sticky default) prefers fewer moves.

    ``horizon_s``: seconds of production to add to the lag: load = ``lag + produce_rate *
    horizon_s`` (default 0: lag alone; a topic without rates contributes lag alone).

    ``target_utilisation``: with member capacities and produce rates known, no member is handed
    more production than this fraction of its capacity where some plan allows it, and as little
    over it as the group allows where none does (:mod:`.utilisation`). ``None`` (default): the max
    member time alone decides.
    """

    max_count_skew: int | None = None
    load_tolerance: float = 0.02
    cross_rack_cost: float = 10.0
    move_cost: float = 1.0
    horizon_s: float = 0.0
    target_utilisation: float | None = None

    def __post_init__(self) -> None:
        k = self.max_count_skew
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 0):
            raise ValueError(f"max_count_skew must be None or an integer >= 0, got {k!r}")
        for name in ("load_tolerance", "cross_rack_cost", "move_cost", "horizon_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        u = self.target_utilisation
        if u is not None and (isinstance(u, bool) or not isinstance(u, int | float)
                              or not 0.01 <= u < np.inf):
            raise ValueError(f"target_utilisation must be None or a finite number >= 0.01, "
                             f"got {u!r}")

    @classmethod
    def of(cls, options: BalancedOptions | None = None, **kwargs: Any) -> BalancedOptions:
        """``options`` (default: the defaults) with ``kwargs`` applied; :class:`TypeError` names an
        unknown one."""
        base = options if options is not None else cls()
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown option(s) for the balanced assignor: {', '.join(unknown)}; "
                            f"it takes {', '.join(sorted(known))}")
        return dataclasses.replace(base, **kwargs) if kwargs else base
