"""Side files rebuilt from the Delta tables' logs: the checkpoint's Delta app id and
its version floors.

The job's side files are written whole or not at all (:func:`streaming.operations.hfs.write_text`),
but a file left empty by an older release, damaged, or lost must not stop the job for good, nor
change its meaning silently. What this checkpoint wrote is in the tables' logs: every append carries
a ``txn`` action whose app id is ``<app id>/<table>`` (sinks.py), in the commit file
``_delta_log/<version>.json``. :func:`app_id` reads the checkpoint's own (made once).

- the app id: the one app id that committed to either table since the checkpoint began (its
  ``metadata`` file, Spark's first); none means this checkpoint wrote nothing yet, and a new id is
  safe; several is ambiguous and stops the job (:func:`app_id_from_log`);
- the floors ("highest version per group in the table when this checkpoint began"): the
  recommendations table as of the version before this checkpoint's first commit to it (time travel),
  or as it is when the checkpoint has not written to it (:func:`floors_before`).

Either needs the log from its first version (``delta.logRetentionDuration``, 30 days by default)
and, for time travel, the data files of that version (``delta.deletedFileRetentionDuration``);
otherwise the job stops with what to do.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from streaming.config import Config
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.errors import JobError
from streaming.operations import hfs

log = logging.getLogger(__name__)

APP_ID_FILE = "delta_app_id"
APP_ID = re.compile(r"^kafka-rebalancer-[0-9a-f]{32}$")
_COMMIT = re.compile(r"(\d{20})\.json$")


@dataclass(frozen=True)
class Txn:
    """One ``txn`` action of a table's log."""

    version: int
    """the table version (commit file) that holds it"""
    app: str
    modified_ms: int
    """the commit file's modification time (the store's clock)"""


def parse_floors(text: str | None) -> dict[str, int] | None:
    """The floors of a floors file's text, or None when it is empty or not a JSON
    object of integers."""
    try:
        value = json.loads(text or "")
    except ValueError:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, int) and not isinstance(v, bool)
                                              for v in value.values()):
        return None
    return {str(k): int(v) for k, v in value.items()}


def parse_app_id(text: str | None) -> str | None:
    """The app id of an app id file's text, or None when it is empty or not one the job makes."""
    value = (text or "").strip()
    return value if APP_ID.match(value) else None


def app_of(txn_app: str) -> str:
    """The checkpoint's app id of a txn app id (``<app id>/<table>``)."""
    return txn_app.rsplit("/", 1)[0]


def candidates(txns: list[Txn], since_ms: int) -> set[str]:
    """The job's app ids that committed at or after ``since_ms``."""
    return {app_of(t.app) for t in txns
            if t.modified_ms >= since_ms and APP_ID.match(app_of(t.app))}


def first_commit(txns: list[Txn], txn_app: str) -> int | None:
    """The first table version that holds a commit of ``txn_app``, or None."""
    return min((t.version for t in txns if t.app == txn_app), default=None)


def log_start(spark: SparkSession, location: str) -> int | None:
    """The first version whose commit file the table's log still holds (None: no commit file)."""
    fs, path = hfs._fs_path(spark, location, "_delta_log")
    versions = [int(m.group(1)) for s in (fs.listStatus(path) if fs.exists(path) else [])
                if (m := _COMMIT.search(str(s.getPath().getName())))]
    return min(versions, default=None)


def txns(spark: SparkSession, location: str) -> list[Txn]:
    """Every ``txn`` action in the table's commit files."""
    lines = (spark.read.text(f"{location}/_delta_log/*.json")
             .where(F.col("value").contains('"txn"'))
             .select(F.get_json_object("value", "$.txn.appId").alias("app"),
                     F.regexp_extract("_metadata.file_path", r"(\d{20})\.json$", 1).alias("v"),
                     F.col("_metadata.file_modification_time").alias("t"))
             .where(F.col("app").isNotNull()).collect())
    return [Txn(int(r["v"]), r["app"], int(r["t"].timestamp() * 1000)) for r in lines]


def app_id_from_log(spark: SparkSession, checkpoint: str, tables: list[str],
                    file: str) -> str | None:
    """The app id that wrote to ``tables`` since ``checkpoint`` began; None when none did (a new one
    is safe). Raises :class:`JobError` when that cannot be told."""
    began = hfs.modified_ms(spark, checkpoint, "metadata")
    if began is None:  # no query ever started on this checkpoint: it wrote nothing
        return None
    found: set[str] = set()
    for location in tables:
        start = log_start(spark, location)
        if start is None:
            continue
        found |= candidates(txns(spark, location), began)
    if len(found) > 1:
        raise JobError(
            f"{checkpoint}/{file} is empty or unreadable and the tables hold writes of "
            f"{len(found)} jobs since this checkpoint began ({', '.join(sorted(found))}): which "
            f"one is this checkpoint's cannot be told. Write the right one into {file}, or start "
            f"over with a new checkpoint")
    return found.pop() if found else None


def floors_before(spark: SparkSession, location: str, txn_app: str, file: str) -> dict[str, int]:
    """Highest version per group in the recommendations table before ``txn_app``'s first commit to
    it (the table as it is, when it has none). Raises :class:`JobError` when the log or files no
    longer tell."""
    start = log_start(spark, location)
    what = (f"cannot rebuild {file}: restore it, or start over with a new checkpoint (the new "
            "query reads Kafka from job.starting_offsets and continues versions after those in "
            "the table)")
    if start is None or start > 0:
        raise JobError(f"the log of {location} no longer holds its first commits; {what}")
    first = first_commit(txns(spark, location), txn_app)
    reader = spark.read.format("delta")
    if first is not None:
        reader = reader.option("versionAsOf", first - 1)
    try:
        rows = reader.load(location).groupBy("group").agg(F.max("version").alias("v")).collect()
    except Exception as e:
        raise JobError(f"{location} as of version {first - 1 if first else 'now'} cannot be read "
                       f"({type(e).__name__}); {what}") from e
    return {r["group"]: int(r["v"]) for r in rows if r["group"] is not None}


def app_id(checkpoint: str, spark: SparkSession | None = None, cfg: Config | None = None) -> str:
    """The Delta transaction app id of this checkpoint: made once, kept in the checkpoint folder;
    never empty.

    A new checkpoint restarts batch ids at 0, so it must get a new app id or Delta would skip its
    writes. Read and written with Hadoop's FileSystem, like the checkpoint itself (a local path,
    file:, s3a:, hdfs: ...); of two racing starts the second one's exclusive create fails and both
    read back the same id. A file left empty, damaged or lost (once a query ran) is rebuilt from the
    tables' logs (with ``cfg``; see :mod:`streaming.operations.recover`), never read as "" (that
    would change the meaning of every later idempotency tag)."""
    spark = spark or SparkSession.active()
    text = hfs.read_text(spark, checkpoint, APP_ID_FILE)
    # no query ran here yet: a new id
    if text is None and not hfs.exists(spark, checkpoint, "metadata"):
        hfs.write_text(spark, checkpoint, APP_ID_FILE, f"kafka-rebalancer-{uuid.uuid4().hex}\n",
                       overwrite=False)
        text = hfs.read_text(spark, checkpoint, APP_ID_FILE)
    found = parse_app_id(text)
    if found is not None:
        return found
    if cfg is None:
        raise JobError(f"{checkpoint}/{APP_ID_FILE} is empty or unreadable ({(text or '')[:40]!r})")
    tables = [cfg.table_path(t) for t in (RECOMMENDATIONS, REJECTED)]
    found = (app_id_from_log(spark, checkpoint, tables, APP_ID_FILE)
             or f"kafka-rebalancer-{uuid.uuid4().hex}")
    log.warning("%s/%s was empty or unreadable (%r); rewritten with %s", checkpoint, APP_ID_FILE,
                (text or "")[:40], found)
    hfs.write_text(spark, checkpoint, APP_ID_FILE, f"{found}\n", overwrite=True)
    return found
