"""When an observation of a group is whole: every reading it will have has arrived.

The collector writes one poll of a group as one record per topic (``lag_dense``) or per partition
(``lag``), all with the poll's ``ts``, and Spark may cut them between micro-batches. A decision on a
poll's first part would differ from the one on the whole poll, so the policy decides on an
observation only once it is whole (:mod:`streaming.policy.recommend`):

- closed: an event of the group with a later ``ts`` has arrived (a poll's records all come before
  the next poll's: :func:`streaming.state.ingest.split_at`), or
- complete (:func:`complete`): the metadata events the poll's lag rows count
  (``metadata_events``, written before the lag: :mod:`streaming.contracts.events`) are held, and
  every partition of every topic the members subscribe to has its
  reading at ``ts``: all the partitions the topic's ``partitions`` event lists, or, for a topic
  known from members and lag alone (no ``partitions`` event yet), every partition a member holds
  and every partition the history reads; a topic with neither (one that does not exist) has none
  to wait for. (Such a topic's count is what its readings imply: a partition first seen in the rest
  of a poll, held by nobody, cannot be told from one that does not exist. The collector sends each
  subscribed topic's ``partitions`` event before its polls.)

Example: members subscribed to t0, whose ``partitions`` event lists 4 partitions; the poll at ts
1000 comes as partitions 0 and 1 in one micro-batch and 2 and 3 in the next. After the first, the
observation is neither closed nor complete and is held undecided; after the second it is complete
and decided on its four readings, as in one batch. Had the poll also brought a members event (its
lag rows then say ``metadata_events: 1``) that a micro-batch read after the lag (Spark lists the two
topics' offsets apart), the poll would wait for it too.

So the decision on a poll is the one on all of it whenever its metadata comes no later than the
next poll's first event, however the batches cut the two topics. Later than that (a batch cap,
``job.max_offsets_per_trigger``, that cuts the metadata topic a whole poll behind the lag topic)
the next poll closes it without its metadata.
"""

from __future__ import annotations

import numpy as np

from streaming.state.group_state import GroupState


def complete(state: GroupState, ts: int, metadata_events: int = 0) -> bool:
    """Whether the observation at ``ts`` holds the ``metadata_events`` its lag counts and a reading
    of every partition of every subscribed topic (all topics with lag when no member is known)."""
    if metadata_events and state.metadata_events_at(ts) < metadata_events:
        return False
    topics = state.subscribed_topics() or sorted(state.lag)
    owned = state.owners().by_topic if state.members else {}
    for topic in topics:
        hist = state.lag.get(topic)
        rows = hist.ids if hist is not None else _NONE
        read = rows[hist.latest_ts() == ts] if hist is not None else _NONE
        meta = state.partitions.get(topic)
        if meta is not None:
            # ids are unique and sorted: the rows read below the count are exactly 0..count-1
            if int(np.count_nonzero(read < len(meta))) != len(meta):
                return False
        # known from members and lag alone: every row read, and a row for each partition held
        # (a topic with neither, one that does not exist, has nothing to wait for)
        elif len(read) != len(rows) or not np.isin(owned.get(topic, (_NONE,))[0], read).all():
            return False
    return bool(topics)


_NONE = np.zeros(0, dtype=np.int64)
