"""The capacity rule's contract (streaming/lag/capacity.py), drawn from it: any estimates held, any
consume rates, any members over their capacity, any headroom in [0, 1).

- a measured member is taken at its measure, raised to what it consumes now;
- a member never measured is taken, while some member is over its capacity, as able as the ablest
  member the group shows: every measure, and what every unmeasured member consumes with the
  headroom to spare; otherwise at what it consumes, at least the slowest measure;
- nobody is taken below what it consumes, and never at a peers' median;
- until some estimate rests on CONFIDENT_S of backlog, or while an unmeasured member has no rate,
  nothing is known (the members count as alike).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from assignors.model import Member
from streaming.lag import capacity
from streaming.lag.owners import Owners

RATES = st.floats(0.0, 1e7, allow_nan=False)
HELD = st.one_of(
    st.none(),
    st.tuples(st.floats(1e-3, 1e7), st.floats(0.0, 1e5), st.integers(0, 2**40)))
"""A member's memory: none, or (estimate, seconds of backlog it rests on, ts)."""


@st.composite
def groups(draw):
    n = draw(st.integers(1, 8))
    held = draw(st.lists(HELD, min_size=n, max_size=n))
    rates = np.array(draw(st.lists(st.one_of(RATES, st.just(math.nan)), min_size=n, max_size=n)))
    over = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    headroom = draw(st.floats(0.0, 0.99))
    members = [Member(f"m{i}", ("t",), owned=(("t", i),)) for i in range(n)]
    owners = Owners.of(members)
    memory = {key: [*h, None, None, None] for key, h in zip(owners.identities, held, strict=True)
              if h is not None}
    found = capacity.Found(over, rates, 20.0, over)
    return owners, memory, found, headroom


@given(groups())
def test_estimates_keep_the_rules_contract(group):
    owners, memory, now, headroom = group
    found = capacity.estimated(memory, owners, lambda: now, headroom)
    confident = {k: h for k, h in memory.items() if h[1] >= capacity.CONFIDENT_S}
    unmeasured = [r for key, r in zip(owners.identities, now.rates.tolist(), strict=True)
                  if key not in confident]
    if not confident or any(math.isnan(r) for r in unmeasured):
        assert found is None
        return
    assert found is not None and list(found) == list(owners.ids)
    rates = np.nan_to_num(now.rates).tolist()
    measures = [h[0] for h in confident.values()]
    ablest = max(max(measures), max(unmeasured, default=0.0) / (1 - headroom))
    for i, (mid, key) in enumerate(zip(owners.ids, owners.identities, strict=True)):
        c = found[mid]
        assert c.records_per_s >= rates[i], (mid, c, rates[i])
        if key in confident:
            h = confident[key]
            assert c == capacity.Capacity(max(h[0], rates[i]), h[1], True)
        elif now.over.any():
            assert c == capacity.Capacity(ablest, 0.0, False)
            assert c.records_per_s >= rates[i] / (1 - headroom)
        else:
            assert c == capacity.Capacity(max(rates[i], min(measures)), 0.0, False)
