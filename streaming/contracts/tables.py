"""The job's two Delta tables: their names and columns (Spark SQL DDL), without Spark.

The one place the tables are declared: the job creates and checks them from here
(:mod:`streaming.operations.delta_tables`), and the commands that read them (``recommendations``,
``describe``, ``verify``, ``maintain``) name them from here without importing pyspark.
"""

from __future__ import annotations

from streaming.contracts.recommendation import (
    ASSIGNMENT_TYPE,
    CAPACITY_TYPE,
    HOT_TYPE,
    MEMBER_FIGURES_TYPE,
    RECORDS_COLUMNS,
    STUCK_TYPE,
)
from streaming.contracts.validated import MAX_TS_MS

RECOMMENDATIONS = "recommendations"
REJECTED = "rejected_events"
NAMES = (RECOMMENDATIONS, REJECTED)

RECOMMENDATIONS_DDL = (
    "batch_id LONG, `group` STRING, version LONG, recommendation_id STRING, event_time TIMESTAMP, "
    "generation INT, triggers ARRAY<STRING>, trigger_details STRING, assignor STRING, "
    f"assignment {ASSIGNMENT_TYPE}, "
    "before_max_lag BIGINT, after_max_lag BIGINT, before_imbalance DOUBLE, after_imbalance DOUBLE, "
    "lower_bound DOUBLE, before_cross_rack INT, after_cross_rack INT, partitions_moved INT, "
    f"lag_moved BIGINT, stuck_partitions {STUCK_TYPE}, mode STRING, "
    "before_catch_up_s DOUBLE, after_catch_up_s DOUBLE, lag_age_s DOUBLE, "
    f"member_capacity {CAPACITY_TYPE}, rack_placement STRING, serving STRING, "
    f"member_figures {MEMBER_FIGURES_TYPE}, hot_partitions {HOT_TYPE}"
)
ADDED_COLUMNS = {"mode": "STRING", "before_catch_up_s": "DOUBLE", "after_catch_up_s": "DOUBLE",
                 "lag_age_s": "DOUBLE", "member_capacity": CAPACITY_TYPE,
                 "rack_placement": "STRING", "serving": "STRING",
                 "member_figures": MEMBER_FIGURES_TYPE, "hot_partitions": HOT_TYPE}
"""Columns added to the recommendations table since its first release, all nullable: an older table
gets the ones it lacks at start (its rows read NULL: for ``mode`` that means ``auto``, they were all
published for application; for the lag seconds, the capacities, the rack placement verdict,
``serving``, the member figures and the hot partitions, not computed then)."""
OLDER_TYPES = {c: "double" for c in RECORDS_COLUMNS}
"""Columns whose type changed since the first release, and the type a table made before keeps: the
figures in records were DOUBLE, and are exact BIGINT now. An older table is not rewritten (its
readers may expect the type); the batch writer casts to the table's type
(:data:`streaming.operations.delta_tables.KEPT_TYPES`), so above 2^53 its values round to the
nearest double, as they always did there. A table created now gets BIGINT."""
REJECTED_DDL = """
    batch_id LONG, `group` STRING, reason STRING, raw_value STRING, source_topic STRING,
    source_partition INT, source_offset LONG, kafka_timestamp TIMESTAMP
"""

_RECORD_TS = "try_cast(get_json_object(raw_value, '$.ts') AS BIGINT)"
REJECTED_TIME = (f"coalesce(kafka_timestamp, timestamp_millis(CASE WHEN {_RECORD_TS} BETWEEN 1 "
                 f"AND {MAX_TS_MS} THEN {_RECORD_TS} END))")
"""When a rejected row's record was made (SQL): its Kafka timestamp, else (a record without one, or
a row rejected after validation) the event's own ``ts`` where it is a Spark timestamp, else null."""
