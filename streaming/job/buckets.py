"""The stateful step keyed by buckets of groups: many groups per call, each group's
state kept apart.

Keyed by group, pyspark pays a fixed cost per group per micro-batch (a call, an Arrow slice, a
pandas frame, a state round trip through the JVM), whatever the group brings. Keyed by bucket
(``job.state_buckets`` buckets; a group's bucket is the CRC-32 of its UTF-8 name modulo the count,
the same in Spark's ``crc32`` and Python's ``zlib.crc32``, never ``hash()``), one call gets every
group of a bucket with rows in the batch:

- the rows are split by group with one stable sort, groups in name order, and each group goes
  through :func:`streaming.job.stateful.apply_group` exactly as when keyed by group: the same
  recommendations for the same events, the same rejected rows; a group whose call fails keeps its
  state as it was;
- the bucket's state value maps group -> (the group's event-time timeout, its
  ``GroupState.to_bytes()``), so a group is read and rewritten only when it has rows, and one
  group's blob never touches another's;
- per-group timeouts keep their meaning: a group whose timeout is below the watermark leaves the
  bucket (as a timed-out key leaves Spark's state), in the call of its bucket or in the bucket's own
  timeout call; the bucket's timeout is the earliest of its groups'.

A checkpoint's state layout (keyed by group, or by N buckets) is fixed when it starts: it is
recorded in ``state_layout.json`` beside the checkpoint's data, and :func:`check_layout` refuses,
with what to do, a configuration that would read it with another layout. A bucket value also carries
its bucket count, so a value read under another count is an internal error on its groups' rows,
never silently wrong state.
"""

from __future__ import annotations

import json
import logging
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from streaming.config import PolicySettings
from streaming.job import convert
from streaming.job.rejection import reencoded, rejected_row
from streaming.job.stateful import (
    Context,
    apply_group,
    current_watermark,
    internal_error,
    output_frame,
    read_columns,
    row_masks,
    set_timeout,
    validation_rejects,
)
from streaming.state.errors import UnreadableState

log = logging.getLogger(__name__)

MAGIC = b"RBK1"
_HEAD = struct.Struct("<4sIII")  # magic, bucket count, bucket, groups
Held = dict[str, tuple[int, bytes]]
"""A bucket's state: group -> (its event-time timeout in ms, its GroupState bytes)."""


def bucket_of(group: str, buckets: int) -> int:
    """The group's bucket: CRC-32 of its UTF-8 bytes modulo ``buckets`` (Spark:
    ``pmod(crc32(group), n)``)."""
    return zlib.crc32(group.encode("utf-8")) % buckets


def encode(buckets: int, bucket: int, held: Held) -> bytes:
    """The bucket's state value: a header, then per group (in name order) its timeout, name
    and blob lengths as arrays, then the names, then the blobs; no copy of a blob is decoded
    or compressed again."""
    names = sorted(held)
    encoded = [n.encode("utf-8") for n in names]
    blobs = [held[n][1] for n in names]
    return b"".join([
        _HEAD.pack(MAGIC, buckets, bucket, len(names)),
        np.array([held[n][0] for n in names], dtype="<i8").tobytes(),
        np.array([len(b) for b in encoded], dtype="<u4").tobytes(),
        np.array([len(b) for b in blobs], dtype="<u4").tobytes(),
        *encoded, *blobs])


def decode(value: bytes, buckets: int, bucket: int) -> Held:
    """A bucket's state value written by :func:`encode` for this bucket count and bucket."""
    if len(value) < _HEAD.size or value[:4] != MAGIC:
        raise UnreadableState(
            "the state value is not a bucket of groups (a checkpoint keyed otherwise?)")
    _, written_buckets, written_bucket, n = _HEAD.unpack_from(value)
    if (written_buckets, written_bucket) != (buckets, bucket):
        raise UnreadableState(f"state of bucket {written_bucket} of {written_buckets} read as "
                              f"bucket {bucket} of {buckets} (job.state_buckets changed?)")
    off = _HEAD.size + 16 * n  # names, then blobs
    try:
        timeouts = np.frombuffer(value, "<i8", n, _HEAD.size).tolist()
        lengths = np.frombuffer(value, "<u4", 2 * n, _HEAD.size + 8 * n).astype(np.int64)
    except ValueError:
        raise UnreadableState("the bucket's state value is truncated") from None
    ends = (off + np.cumsum(lengths)).tolist()  # n name ends, then n blob ends
    if (ends[-1] if n else off) != len(value):
        raise UnreadableState("the bucket's state value is truncated or has trailing bytes")
    held: Held = {}
    starts = [off, *ends[:-1]]
    try:
        for i, t in enumerate(timeouts):
            name = value[starts[i]:ends[i]].decode("utf-8")
            held[name] = (t, value[starts[n + i]:ends[n + i]])
    except UnicodeDecodeError:
        raise UnreadableState("a group name in the bucket's state value is not UTF-8") from None
    return held


def make_update(policy: PolicySettings, timeout_ms: int, buckets: int,
                version_floors: dict[str, int] | None = None, *, lag_topic: str = "rebalancer.lag",
                metadata_topic: str = "rebalancer.metadata"):
    """The update function keyed by bucket (``job.state_buckets`` > 0); arguments as
    :func:`streaming.job.stateful.make_update`. The key's one value is the bucket number."""
    ctx = Context(policy, timeout_ms, dict(version_floors or {}), lag_topic, metadata_topic,
                  convert.Options.of_session())
    return update_function(ctx, buckets)


def update_function(ctx: Context, buckets: int):
    """The update function keyed by bucket, for ``ctx``. Each group's recommendations are converted
    as pyspark will convert them before its state is kept, and the call's other rows at the end, as
    keyed by group."""

    def update(key: tuple, chunks: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        rows = bucket_rows(int(key[0]), buckets, chunks, state, ctx)
        if rows:
            yield output_frame(rows, ctx.arrow)

    return update


def bucket_rows(bucket: int, buckets: int, chunks: Iterator[pd.DataFrame], state,
                ctx: Context) -> list[dict[str, Any]]:
    """The output rows of one bucket's call; raises only for a state that cannot be read (the job
    stops, :mod:`streaming.job.stateful`). ``state`` is pyspark's GroupState (or alike)."""
    watermark = current_watermark(state)
    held = decode(state.get[0], buckets, bucket) if state.exists else {}
    rows: list[dict[str, Any]] = []
    if not state.hasTimedOut:  # a timeout call has no rows
        try:
            cols = read_columns(chunks, ("group",))
        except Exception as exc:  # the rows themselves are unreadable: one row says so
            rows = [rejected_row("", {"reason": internal_error(exc)})]
        else:
            try:
                updated = dict(held)
                rows = _apply_groups(cols, updated, watermark, ctx)
                held = updated
            except UnreadableState:
                raise
            except Exception as exc:
                # outside any group (apply_group raises only UnreadableState)
                try:
                    rows = _rejected_all(cols, watermark, ctx, internal_error(exc))
                except Exception:
                    rows = [rejected_row("", {"reason": internal_error(exc)})]
    # a group whose timeout the watermark passed leaves, as a timed-out key leaves Spark's state
    held = {g: entry for g, entry in held.items() if entry[0] >= watermark}
    if held:
        state.update((encode(buckets, bucket, held),))
        # every timeout kept is at or above the watermark, as setTimeoutTimestamp requires
        set_timeout(state, min(t for t, _ in held.values()), watermark, ctx.timeout_ms)
    elif state.exists:
        state.remove()
    return rows


def _apply_groups(cols: dict[str, np.ndarray], held: Held, watermark: int,
                  ctx: Context) -> list[dict[str, Any]]:
    """Every group's rows of the call through apply_group, groups in name order; ``held`` updated
    in place."""
    valid, late = row_masks(cols, watermark)
    groups = cols["group"]
    # validate.parse gives every row a group; "" stands in for a missing one
    if pd.isna(groups).any():
        groups = np.where(pd.isna(groups), "", groups)
    codes, uniques = pd.factorize(groups)
    names = [str(g) for g in uniques.tolist()]
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    ranks = rank[codes]
    perm = np.argsort(ranks, kind="stable")  # each group's rows together, in their arrival order
    cols = {c: v[perm] for c, v in cols.items()}
    valid, late = valid[perm], late[perm]
    ends = np.cumsum(np.bincount(ranks, minlength=len(names))).tolist()
    rows: list[dict[str, Any]] = []
    start = 0
    for i, end in zip(order, ends, strict=True):
        group, part = names[i], slice(start, end)
        entry = held.get(group)
        step = apply_group(group, {c: v[part] for c, v in cols.items()}, valid[part], late[part],
                           None if entry is None else entry[1], watermark, ctx)
        rows += step.rows
        if step.blob is not None and step.timeout is not None:
            held[group] = (step.timeout, step.blob)
        start = end
    return rows


def _rejected_all(cols: dict[str, np.ndarray], watermark: int, ctx: Context,
                  reason: str) -> list[dict[str, Any]]:
    """Every row of the call rejected: as validated (rejected already), late, or with ``reason``."""
    valid, late = row_masks(cols, watermark)
    groups = cols["group"]
    rows: list[dict[str, Any]] = [{"kind": "rejected", "group": groups[i] or None, "rejected": d}
                                  for i, d in validation_rejects(cols)]
    for i in np.flatnonzero(valid).tolist():
        group = str(groups[i] or "")
        why = "late" if late[i] else reason
        rows.append(rejected_row(group, reencoded(cols, i, group, why, ctx.topic_of)))
    return rows


# -- the checkpoint's layout -----------------------------------------------------------------------

LAYOUT_FILE = "state_layout.json"


def layout(buckets: int) -> dict[str, Any]:
    """The state layout of ``job.state_buckets = buckets``, as recorded in the checkpoint."""
    if buckets > 0:
        return {"keyed_by": "bucket", "buckets": buckets, "format": MAGIC.decode()}
    return {"keyed_by": "group"}


def describe(recorded: dict[str, Any]) -> str:
    if recorded.get("keyed_by") == "bucket":
        n = recorded.get("buckets")
        return f"in {n} buckets of groups (job.state_buckets = {n})"
    return ("by consumer group (job.state_buckets = 0, or a checkpoint from before "
            "job.state_buckets)")


def layout_problem(checkpoint: str, recorded_text: str | None, used: bool,
                   buckets: int) -> str | None:
    """Why this checkpoint cannot run with ``buckets``, or None. ``recorded_text``: its layout
    file (None: absent); ``used``: whether it holds a batch already (else whatever it records
    may be replaced)."""
    if not used:
        return None
    try:
        recorded = json.loads(recorded_text) if recorded_text is not None else layout(0)
    except ValueError:
        recorded = {"keyed_by": "unreadable"}
    if recorded == layout(buckets):
        return None
    keyed_by = recorded.get("keyed_by")
    count = recorded["buckets"] if keyed_by == "bucket" else 0
    go_on = (f"set job.state_buckets = {count} to go on with this checkpoint, or "
             if keyed_by in ("bucket", "group") else "")
    return (f"checkpoint {checkpoint} keeps its group state {describe(recorded)}, but the "
            f"configuration keys it {describe(layout(buckets))}; a checkpoint's state layout "
            f"cannot change. Either {go_on}start a new checkpoint (move or delete this one, or set "
            f"paths.checkpoints elsewhere): the new query reads Kafka from job.starting_offsets, "
            f"rebuilds each group's state from the events (a group's first snapshot is a baseline "
            f"again) and continues recommendation versions after those in the recommendations "
            f"table")


def check_layout(spark, checkpoint: str, buckets: int) -> None:
    """Refuse (:class:`~streaming.errors.JobError`) a checkpoint written with another state layout;
    record the layout of a checkpoint that has no batch yet, and rebuild an empty or damaged record
    from the state (:func:`layout_from_state`). Called with the checkpoint's lease held."""
    from streaming.errors import JobError
    from streaming.operations import hfs

    used = hfs.has_files(spark, checkpoint, "offsets") or hfs.has_files(spark, checkpoint, "state")
    text = hfs.read_text(spark, checkpoint, LAYOUT_FILE)
    if used and text is not None and parse_layout(text) is None:
        rebuilt = json.dumps(layout_from_state(spark, checkpoint, buckets), sort_keys=True)
        log.warning("%s/%s was empty or unreadable (%r); rebuilt as %s", checkpoint, LAYOUT_FILE,
                    text[:40], rebuilt)
        hfs.write_text(spark, checkpoint, LAYOUT_FILE, rebuilt, overwrite=True)
        text = rebuilt
    problem = layout_problem(checkpoint, text, used, buckets)
    if problem:
        raise JobError(problem)
    if not used:
        hfs.write_text(spark, checkpoint, LAYOUT_FILE, json.dumps(layout(buckets), sort_keys=True),
                       overwrite=True)


def parse_layout(text: str) -> dict[str, Any] | None:
    """A layout file's record, or None when it is not one :func:`layout` makes."""
    try:
        recorded = json.loads(text)
    except ValueError:
        return None
    if not isinstance(recorded, dict):
        return None
    n = recorded.get("buckets")
    return recorded if recorded == layout(n if isinstance(n, int) and n > 0 else 0) else None


def read_state(spark, checkpoint: str):
    """Spark's ``statestore`` source on ``checkpoint``. Its RocksDB provider reports to the
    driver's state store coordinator, which the session's streaming query manager registers when
    it is first used: in a process that has not used it yet (a restart rebuilding its layout file,
    a command) the read failed (``RpcEndpointNotFoundException: StateStoreCoordinator``)."""
    spark.streams  # noqa: B018 -- made on first use, it registers the coordinator
    return spark.read.format("statestore").load(checkpoint)


def layout_from_state(spark, checkpoint: str, buckets: int) -> dict[str, Any]:
    """The layout the checkpoint's state was written with: the configured one while no batch is
    committed (no state to read, or Spark's schema check guards it), else the state's key (group or
    bucket) and a bucket value's own count. Raises :class:`~streaming.errors.JobError` naming the
    file when it cannot."""
    from streaming.errors import JobError
    from streaming.operations import hfs

    if (not hfs.has_files(spark, checkpoint, "commits")
            or not hfs.has_files(spark, checkpoint, "state")):
        return layout(buckets)
    try:
        state = read_state(spark, checkpoint)
        keys = state.schema["key"].dataType.fieldNames()
        first = state.limit(1).collect()
    except Exception as e:
        raise JobError(f"{checkpoint}/{LAYOUT_FILE} is empty or unreadable and the state cannot "
                       f"be read to rebuild it ({type(e).__name__}); write it back "
                       f"({json.dumps(layout(buckets))} is the configured layout) or start a new "
                       "checkpoint") from e
    if "group" in keys:
        return layout(0)
    if not first and buckets > 0:
        # keyed by bucket, no group held: the configured count cannot contradict it
        return layout(buckets)
    if not first:
        raise JobError(f"{checkpoint}/{LAYOUT_FILE} is empty or unreadable and the state, keyed "
                       "by bucket, holds no group to tell the bucket count: set job.state_buckets "
                       "to the count it was started with, or start a new checkpoint")
    value = _state_bytes(first[0]["value"].asDict(recursive=True))
    return layout(_HEAD.unpack_from(value)[1])


def groups_in_state(spark, checkpoint: str, buckets: int) -> set[str]:
    """The groups a checkpoint's state holds (read with Spark's ``statestore`` source),
    in either layout."""
    rows = read_state(spark, checkpoint).collect()
    if not buckets:
        return {r["key"]["group"] for r in rows}
    return {g for r in rows
            for g in decode(_state_bytes(r["value"].asDict(recursive=True)), buckets,
                            r["key"]["bucket"])}


def _state_bytes(value: dict[str, Any]) -> bytes:
    """The state column of a ``statestore`` value row (Spark nests it as ``groupState``
    beside the timeout)."""
    return bytes(value["groupState"]["state"] if "groupState" in value else value["state"])
