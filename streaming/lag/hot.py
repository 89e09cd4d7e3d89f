"""Hot partitions: a partition whose produce rate stands out from its topic's, named so operators
know to repartition or key differently instead of waiting for a rebalance.

The rule (:func:`hot`), per topic of at least two partitions with known rates: partition p is hot
when

- its rate is above :data:`FACTOR` (3) times the topic's **median** partition rate, and
- it carries at least :data:`SHARE` (2) times a fair share of the topic's rate (its total /
  partition count), and
- it is at least :data:`MIN_RATE` (1 record/s).

Why the median and not k standard deviations: the median does not move with the outlier it is meant
to find, while the mean and the deviation both grow with it; with n partitions one outlier's z-score
can never exceed (n-1)/sqrt(n) (1.5 for four partitions), so a "3 sigma" rule never fires on a small
topic however hot one partition is. Why also a share: a topic whose partitions are mostly idle has a
median near 0, and any trickle would be "3 x the median"; the share says the partition carries real
weight of the topic, twice what an even spread gives it. The floor keeps idle topics' noise out.
What the rule cannot see: when half or more of a topic's partitions are equally busy the median is
theirs and none stands out; the topic is busy, not skewed.

Why it matters: no assignment splits one partition (one consumer of a group reads it), so a
partition's owner at best owns it alone; when a hot partition's rate exceeds what one consumer does,
no rebalance keeps up with it.

Example: rates 100, 10, 10, 10 records/s: median 10, fair share 32.5; 100 > 30 and 100 >= 65, so
partition 0 is hot (share 0.77). Rates 30, 10, 10, 10: 30 is not above 30: none. Rates 100, 100, 10,
10: median 55: none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

FACTOR = 3.0
"""A hot partition's rate is above this many times its topic's median partition rate."""
SHARE = 2.0
"""... and at least this many fair shares (topic rate / partitions) of its topic's rate."""
MIN_RATE = 1.0
"""... and at least this many records/s."""
NOTE = ("no assignment splits one partition: its owner at best owns it alone; repartition or key "
        "differently if that owner cannot keep up")
"""What a report of hot partitions says with them."""


@dataclass(frozen=True)
class HotPartition:
    topic: str
    partition: int
    records_per_s: float
    topic_median_per_s: float
    share: float
    """Fraction of the topic's produce rate."""

    def as_dict(self) -> dict[str, object]:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}


def hot(rates: np.ndarray) -> np.ndarray:
    """Per partition of one topic (records/s; nan: unknown, left out of the median and never hot),
    whether hot."""
    r = np.asarray(rates, dtype=np.float64)
    known = ~np.isnan(r)
    if known.sum() < 2:
        return np.zeros(len(r), dtype=bool)
    median = float(np.median(r[known]))
    fair = float(r[known].sum()) / int(known.sum())
    return known & (r > FACTOR * median) & (r >= SHARE * fair) & (r >= MIN_RATE)


def hot_partitions(rates: Mapping[str, Sequence[float] | np.ndarray]) -> list[HotPartition]:
    """The hot partitions of each topic (``rates``: topic -> rate of partition 0, 1, ...), by topic
    and partition."""
    out = []
    for topic in sorted(rates):
        r = np.asarray(rates[topic], dtype=np.float64)
        found = np.flatnonzero(hot(r))
        if not len(found):
            continue
        known = r[~np.isnan(r)]
        median, total = float(np.median(known)), float(known.sum())
        out += [HotPartition(topic, int(p), float(r[p]), median, float(r[p]) / total)
                for p in found.tolist()]
    return out
