"""The job's tables by name in Spark's catalog, and views for the common questions (``[catalog]``).

The tables stay where ``paths.tables`` puts them and the job writes them there; the catalog holds
*external* tables over those locations (``CREATE TABLE ... USING DELTA LOCATION``), so a reader by
name and a reader by path see the same table, and a catalog that is lost or rebuilt loses no row.
With ``catalog.schema = "ops"``:

- ``ops.recommendations`` and ``ops.rejected_events``: the tables;
- ``ops.latest_recommendations``: each group's latest recommendation (the row with its highest
  version);
- ``ops.recommendation_status``: every recommendation with where it stands as the table knows it:
  ``superseded`` (a later version exists), ``observed`` (made in observe mode), ``published`` (auto:
  for the consumers to apply), ``proposed`` or ``expired`` (approve mode: older than
  ``policy.proposal_expiry_s``, as the view was made with; a change of members or partitions also
  expires one, which only the live group shows). Approvals live on the trigger feed and what is
  applied in the group itself: ``rebalancer verify`` and the collector's ``/metrics`` say those;
- ``ops.rejected_last_day``: rejected records of the last 24 hours by reason (its kind, the text
  before ``:``).

Without a catalog set, Spark's session catalog is a Hive metastore on embedded Derby whose files
stay under ``paths.tables`` (:func:`embedded_metastore`): Spark ships Derby and Hive's client, so
nothing more is needed, but embedded Derby admits one JVM at a time
(docs/operating.md#tables-by-name)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from streaming.config import Config
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED, REJECTED_TIME

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

METASTORE_DIR = "_catalog"
"""Under ``paths.tables`` (or the data folder when that is no local path): Derby's metastore_db, the
warehouse
folder and derby.log."""
USER_METASTORE = (
    "spark.sql.catalogImplementation",
    "spark.hadoop.hive.metastore.uris",
    "spark.hadoop.javax.jdo.option.ConnectionURL",
    "spark.sql.warehouse.dir",
)
"""Settings by which [spark.conf] chooses a metastore of its own: then none is set up here."""


def enabled(cfg: Config) -> bool:
    return bool(cfg.catalog.schema)


def schema_name(cfg: Config) -> str:
    c = cfg.catalog
    return f"`{c.catalog}`.`{c.schema}`" if c.catalog else f"`{c.schema}`"


def name(cfg: Config, table: str) -> str:
    """The qualified name of a table (``recommendations``, ``rejected_events``) or view."""
    own = {RECOMMENDATIONS: cfg.catalog.recommendations, REJECTED: cfg.catalog.rejected_events}.get(
        table, table
    )
    return f"{schema_name(cfg)}.`{own}`"


def embedded_metastore(cfg: Config, extra_java: str = "") -> dict[str, str]:
    """Spark settings for a Hive metastore on embedded Derby under the configured paths; {} when no
    schema is set, a catalog is named or [spark.conf] chooses a metastore itself."""
    from streaming.paths import DATA_DIR, local_path

    if not enabled(cfg) or cfg.catalog.catalog or any(k in cfg.spark.conf for k in USER_METASTORE):
        return {}
    tables = local_path(cfg.paths.tables)
    home = (tables if tables is not None else DATA_DIR) / METASTORE_DIR
    derby = f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
    java = f"{extra_java} -Dderby.stream.error.file={home / 'derby.log'}".strip()
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": (home / "warehouse").as_uri(),
        "spark.hadoop.javax.jdo.option.ConnectionURL": derby,
        "spark.driver.extraJavaOptions": java,
    }


def views(cfg: Config) -> Mapping[str, str]:
    """View name -> its query."""
    recs, rejected = name(cfg, RECOMMENDATIONS), name(cfg, REJECTED)
    latest = f"SELECT `group`, max(version) AS latest FROM {recs} GROUP BY `group`"
    expires = f"r.event_time + make_dt_interval(0, 0, 0, {float(cfg.policy.proposal_expiry_s)})"
    return {
        "latest_recommendations": f"SELECT r.* FROM {recs} r JOIN ({latest}) l "
        "ON r.`group` = l.`group` AND r.version = l.latest",
        "recommendation_status": f"""
            SELECT r.`group`, r.version, r.recommendation_id, r.event_time, r.triggers, r.mode,
                   CASE WHEN r.version < l.latest THEN 'superseded'
                        WHEN r.mode = 'observe' THEN 'observed'
                        WHEN coalesce(r.mode, 'auto') = 'auto' THEN 'published'
                        WHEN r.mode = 'approve' AND {expires} <= current_timestamp() THEN 'expired'
                        ELSE 'proposed' END AS status,
                   CASE WHEN r.mode = 'approve' THEN {expires} END AS expires_at
            FROM {recs} r JOIN ({latest}) l ON r.`group` = l.`group`""",
        "rejected_last_day": f"""
            SELECT trim(substring_index(reason, ':', 1)) AS reason, count(*) AS records,
                   min({REJECTED_TIME}) AS first_record, max({REJECTED_TIME}) AS last_record
            FROM {rejected} WHERE {REJECTED_TIME} >= current_timestamp() - INTERVAL 1 DAY
            GROUP BY 1""",
    }


def register(spark: SparkSession, cfg: Config, out=print) -> list[str]:
    """The schema, the tables over their locations and the views, made where missing (views
    replaced, so a new release's definitions win); the names registered. Nothing without
    ``catalog.schema``."""
    if not enabled(cfg):
        return []
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema_name(cfg)}")
    done = []
    for table in (RECOMMENDATIONS, REJECTED):
        location = cfg.table_path(table).replace("'", "\\'")
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {name(cfg, table)} USING DELTA LOCATION '{location}'"
        )
        done.append(name(cfg, table))
    for view, query in views(cfg).items():
        spark.sql(f"CREATE OR REPLACE VIEW {name(cfg, view)} AS {query}")
        done.append(name(cfg, view))
    out(f"catalog: {', '.join(done)}")
    return done


def location(spark: SparkSession, cfg: Config, table: str) -> str:
    """Where the catalog's table is (``DESCRIBE DETAIL`` by name); without a catalog, the configured
    path."""
    if not enabled(cfg) or not spark.catalog.tableExists(name(cfg, table).replace("`", "")):
        return cfg.table_path(table)
    row = spark.sql(f"DESCRIBE DETAIL {name(cfg, table)}").first()
    return str(row["location"]) if row is not None else cfg.table_path(table)
