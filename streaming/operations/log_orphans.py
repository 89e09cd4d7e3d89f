"""Checksum files a local Delta log keeps after the commit they belong to is gone.

The job appends with delta-rs, whose expired-log cleanup (after the checkpoints it writes) deletes a
version's ``N.json`` and checkpoint but not the files Spark's writer left beside them: the version
checksum ``N.crc`` (Spark's commits: table creation, ``maintain``, the job's retention rounds) and
Hadoop's hidden sidecar checksums (``.N.json.crc``, ``.N.crc.crc``: Spark writes a local table
through Hadoop's checksummed file system). The 2,000-batch soak found ~100 such files per table
after 87 minutes, one set per Spark commit, never deleted.

The rule: in a ``_delta_log`` whose oldest commit kept is version ``V``, a file of a version below
``V`` is an orphan when it is a version checksum (``N.crc``), or a hidden sidecar (``.F.crc``) whose
``F`` is gone or is itself an orphan. Nothing at or above ``V`` is touched, so no commit being
written can be involved (versions only grow), and no reader needs a checksum of a version it can no
longer read.

Example: ``.00..57.json.crc``, ``00..57.crc``, ``.00..57.crc.crc``, ``00..90.checkpoint.parquet``,
``.00..90.checkpoint.parquet.crc``, ``00..90.json``, ``00..91.json``: the oldest commit kept is 90;
version 57's three files are orphans; the checkpoint's sidecar stays (its file is there).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

_VERSION = re.compile(r"^\.?(\d{20})\.")
_COMMIT = re.compile(r"^(\d{20})\.json$")


def orphans(names: Iterable[str]) -> list[str]:
    """The orphan checksum files among the names of one ``_delta_log`` directory, sorted."""
    present = set(names)
    commits = [int(m.group(1)) for n in present if (m := _COMMIT.match(n))]
    if not commits:
        return []
    oldest = min(commits)

    def below(name: str) -> bool:
        m = _VERSION.match(name)
        return m is not None and int(m.group(1)) < oldest

    gone = {n for n in present if below(n) and not n.startswith(".") and n.endswith(".crc")}
    kept = present - gone
    gone |= {n for n in present
             if below(n) and n.startswith(".") and n.endswith(".crc") and n[1:-4] not in kept}
    return sorted(gone)


def sweep(table: Path) -> int:
    """Delete the orphan checksum files of the local table at ``table``; how many went. A file
    already gone (another sweep) is not an error."""
    log_dir = table / "_delta_log"
    try:
        names = [p.name for p in log_dir.iterdir()]
    except FileNotFoundError:
        return 0
    count = 0
    for name in orphans(names):
        try:
            (log_dir / name).unlink()
            count += 1
        except FileNotFoundError:
            pass
    if count:
        log.info("%s: %d orphan checksum file(s) of expired commits deleted", log_dir, count)
    return count


def expire_log(table: Path) -> bool:
    """Checkpoint the local table at ``table`` when commits came since its last checkpoint,
    then delete the log entries its ``delta.logRetentionDuration`` has expired; whether a
    checkpoint was written.

    delta-rs cleans the log only when it writes a checkpoint of its own, every
    ``delta.checkpointInterval`` commits (100): a table that commits a few times a minute
    (``rejected_events``) kept every commit of the last 100 on top of its retention window, so its
    log grew for half an hour at a stretch (the soak of 2026-11-26, run 4). Checkpointed at each
    retention round, the log holds the retention window's commits."""
    from deltalake import DeltaTable

    if not (table / "_delta_log").is_dir():
        return False
    dt = DeltaTable(str(table))
    last = _last_checkpoint(table)
    wrote = last is None or last < dt.version()
    if wrote:
        dt.create_checkpoint()
    dt.cleanup_metadata()
    return wrote


def _last_checkpoint(table: Path) -> int | None:
    try:
        return int(json.loads((table / "_delta_log" / "_last_checkpoint").read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
