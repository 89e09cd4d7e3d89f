"""The job's configuration as one typed object, read from ``conf/rebalancer.toml``.

Overrides come as ``--conf key=value`` (the rules: :mod:`streaming.config_overrides`):

- ``spark.*`` keys go to the Spark session as they are (``--conf spark.sql.shuffle.partitions=8``);
- ``kafka.*`` keys go to every Kafka client, Spark's Kafka source and sink included; their values
  never logged;
- anything else is ``section.field`` of this file (``--conf job.trigger_interval=10 seconds``).
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming import config_overrides as overrides_of
from streaming import config_values as values
from streaming.errors import ConfigError
from streaming.java_properties import expand_env, read_properties_file
from streaming.paths import CHECKPOINTS_DIR, CONF_DIR, DATA_DIR, join_location

DEFAULT_FILE = CONF_DIR / "rebalancer.toml"
EMBEDDED = "embedded"
OBSERVE, APPROVE, AUTO = "observe", "approve", "auto"
MODES = (OBSERVE, APPROVE, AUTO)
RECORDS, SECONDS = "records", "seconds"
SKEW_UNITS = (RECORDS, SECONDS)
"""What ``policy.skew_on`` may name (:mod:`streaming.policy.lag_skew` reads them from here)."""

# kafka.* settings whose values must never reach a log line
SECRET_HINTS = ("password", "jaas", "secret", "token", "key")


@dataclass(frozen=True)
class KafkaSettings:
    bootstrap_servers: str = EMBEDDED
    """``host:port[,host:port]``, or ``embedded`` to start a loopback cluster."""
    embedded_brokers: int = 1
    lag_topic: str = "rebalancer.lag"
    metadata_topic: str = "rebalancer.metadata"
    trigger_topic: str = "rebalancer.triggers"
    member_load_topic: str = "rebalancer.member-load"
    options: dict[str, str] = field(default_factory=dict, repr=False)
    """Client settings without the ``kafka.`` prefix (security.protocol, sasl.mechanism, ...)."""

    def redacted(self) -> dict[str, str]:
        return {k: ("***" if any(h in k.lower() for h in SECRET_HINTS) else v)
                for k, v in self.options.items()}


@dataclass(frozen=True)
class SparkSettings:
    master: str = "local[*]"
    app_name: str = "kafka-rebalancer"
    log_level: str = "WARN"
    use_cached_jars: bool = True
    """Put the jars resolved into .cache/jars on spark.jars; false under spark-submit --packages."""
    conf: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PathSettings:
    """Local paths (relative ones under the project root, see streaming/paths.py) or Hadoop URIs
    (``file:///x``, ``s3a://bucket/x``, ``abfss://...``, ``hdfs://...``), read and written through
    Spark."""

    checkpoints: str = str(CHECKPOINTS_DIR)
    tables: str = str(DATA_DIR / "delta")


@dataclass(frozen=True)
class PolicySettings:
    """When a group gets a recommendation. All times are event time (the events' ``ts``)."""

    assignor: str = "balanced"
    """Assignor the recommendations use."""
    rack_change: bool = True
    """Recommend when a subscribed partition's set of replica racks changes and cross-rack reads
    drop."""
    membership_change: bool = True
    partition_count_change: bool = True
    utilisation: bool = True
    """Recommend when a member that reports its own load cannot keep up and the recommendation
    brings it within its target utilisation (1 - ``capacity_headroom``), or where all keep up
    (:mod:`streaming.policy.utilisation`)."""
    give_back: bool = True
    """Give load back, in bounded steps two cooldowns apart, to a member whose own reports show it
    recovered while a peer is at its target utilisation (:mod:`streaming.policy.give_back`)."""
    skew_threshold: float = 1.5
    """Imbalance (max member lag / mean member lag) of the current assignment that counts as
    skew."""
    skew_on: str = RECORDS
    """What a member's lag is measured in for the skew reading and the improvement check:
    ``records``, or ``seconds`` (its time to catch up at its rate, :mod:`streaming.policy.lag_skew`:
    members consume at different rates, so 10,000 records at 1,000/s is 10 s and 2,000 at 20/s is
    100 s). ``min_total_lag`` stays in records either way."""
    skew_observations: int = 3
    """Consecutive observations at or above the threshold before lag skew triggers."""
    min_total_lag: int = 1000
    """Below this total lag (records) a group is never skewed enough to matter."""
    min_improvement: float = 0.2
    """Fraction by which the recommendation must lower the max member lag for lag skew to
    trigger."""
    cooldown_s: float = 300.0
    """No lag-skew recommendation within this many seconds of the group's previous
    recommendation."""
    stuck_observations: int = 5
    """A partition with lag whose committed offset has not moved for this many observations is
    stuck."""
    capacity_headroom: float = 0.2
    """Fraction of each consumer's capacity kept free, in [0, 1): counting the consumers needed
    (:mod:`streaming.lag.sizing`), what a member that keeps up is assumed to have to spare
    (:mod:`streaming.lag.capacity`), and what a plan leaves each member
    (:mod:`assignors.balanced.utilisation`)."""
    retention_risk_s: float = 1800.0
    """Seconds to loss at or below which ``retention_risk`` fires
    (:mod:`streaming.policy.retention_risk`); 0: never."""
    rate_horizon_s: float = 0.0
    """Load of a partition = lag + produce rate x horizon; 0 counts lag alone."""
    lag_history: int = 8
    """Observations kept per partition for rates."""
    assignor_options: dict[str, Any] = field(default_factory=dict)
    """Options of ``assignor`` as ``assignors.registry`` declares them
    (``[policy.assignor_options]``, ``--conf policy.assignor_options.KEY=VALUE``). Where the
    assignor takes ``horizon_s``, it defaults to ``rate_horizon_s`` (the before/after figures always
    use ``rate_horizon_s``); where it takes ``target_utilisation``, to 1 - ``capacity_headroom``."""
    mode: str = OBSERVE
    """``observe`` (the table only), ``approve`` (published as a proposal that
    ``rebalancer approve`` turns into one to apply), ``auto`` (published to apply at once).
    ``observe`` by default: a first run moves nothing."""
    mode_overrides: dict[str, str] = field(default_factory=dict)
    """Group-id regex -> mode (``[policy.mode_overrides]``,
    ``--conf policy.mode_overrides.REGEX=MODE``); the first regex, in the order written, that
    matches anywhere in the group id (``re.search``) wins."""
    proposal_expiry_s: float = 3600.0
    """A proposal (mode ``approve``) expires this long after its observation, or once the group's
    members or partitions change (:mod:`streaming.proposals.expiry`): ``rebalancer approve`` refuses
    it then."""

    def __post_init__(self) -> None:
        # Checked at load, so a typo fails `rebalancer run` at once rather than every
        # recommendation.
        from assignors import registry

        try:
            registry.options(self.assignor)
        except registry.UnknownAssignor as e:
            raise ConfigError(f"policy.assignor: {e}") from None
        try:
            typed = registry.validate_options(self.assignor, self.assignor_options)
        except registry.InvalidOption as e:
            hint = ("" if e.key in registry.options(self.assignor) else
                    " (to switch assignor, clear the table first: --conf policy.assignor_options=)")
            raise ConfigError(f"policy.assignor_options.{e}{hint}") from None
        object.__setattr__(self, "assignor_options", typed)
        for name, value, allowed in (("mode", self.mode, MODES),
                                     ("skew_on", self.skew_on, SKEW_UNITS)):
            if value not in allowed:
                raise ConfigError(f"policy.{name}: {value!r} is not one of {', '.join(allowed)}")
        if not 0 <= self.capacity_headroom < 1:  # NaN fails too
            raise ConfigError(f"policy.capacity_headroom: {self.capacity_headroom} is not a "
                              "fraction in [0, 1)")
        # NaN and infinity fail too: the deadline is an epoch ms
        if not 0 < self.proposal_expiry_s < 1e12:
            raise ConfigError(f"policy.proposal_expiry_s: {self.proposal_expiry_s} is not a "
                              "positive number of seconds")
        for pattern, mode in self.mode_overrides.items():
            if mode not in MODES:
                raise ConfigError(
                    f"policy.mode_overrides.{pattern}: {mode!r} is not one of {', '.join(MODES)}")
            try:
                re.compile(pattern)
            except re.error as e:
                raise ConfigError(f"policy.mode_overrides: {pattern!r} is not a regular "
                                  f"expression: {e}") from None

    def mode_for(self, group: str) -> str:
        """The mode of ``group``: the first override whose regex matches it, else ``mode``."""
        for pattern, mode in self.mode_overrides.items():
            if re.search(pattern, group):
                return mode
        return self.mode

    def assignor_kwargs(self) -> dict[str, Any]:
        """The keyword options the recommendation's assignor is called with."""
        from assignors import registry

        takes = registry.options(self.assignor)
        implied = {"horizon_s": self.rate_horizon_s,
                   "target_utilisation": 1.0 - self.capacity_headroom}
        return {k: v for k, v in implied.items() if k in takes} | self.assignor_options


AUTO_WRITER = "auto"
"""``job.delta_writer``: delta-rs where it can (local tables), Spark otherwise."""
DELTA_WRITERS = (AUTO_WRITER, "spark")


@dataclass(frozen=True)
class JobSettings:
    """The streaming query."""

    trigger_interval: str = "5 seconds"
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    group_timeout_s: float = 3600.0
    """A group with no event for this long (event time) is dropped from state."""
    watermark_delay: str = "10 minutes"
    max_clock_skew_s: float = 120.0
    """An event whose ts leads its Kafka record's timestamp by more than this is rejected, so one
    bad clock cannot move the watermark (which every group's lateness and timeout follow). The
    collector stamps ts just before it produces, so ts trails the record timestamp in normal
    operation; 2 minutes covers clock differences between collector and broker and stays well inside
    ``watermark_delay``, so an event on time is never made late by one that leads. Events may trail
    their timestamp by any amount."""
    max_value_bytes: int = 4 * 1024 * 1024
    query_name: str = "rebalancer"
    start_retries: int = 8
    """Attempts to reach Kafka when the job starts (and restarts) before it gives up with an
    error."""
    start_timeout_s: float = 10.0
    """How long each of those attempts waits for a broker to answer."""
    retry_backoff_s: float = 2.0
    """First wait between attempts (Kafka at start, query restarts); doubled each time up to the
    max."""
    retry_backoff_max_s: float = 60.0
    max_restarts: int = 6
    """Consecutive query failures without a completed batch before the job gives up (0: never
    restart)."""
    lease_timeout_s: float = 120.0
    """A checkpoint lease not refreshed for this long (its job is gone) may be taken over by another
    job."""
    stop_grace_s: float = 20.0
    """On SIGTERM or Ctrl-C the running batch may finish for up to this long, then the job stops (a
    second signal: at once). Keep it below the platform's kill timeout (Kubernetes 30 s, systemd 90
    s by default)."""
    state_buckets: int = 64
    """The stateful step's key: groups spread over this many buckets (CRC-32 of the name), one call
    per bucket with rows, so a batch costs per event, not per group; 0 keys by group (older
    checkpoints' layout). Fixed for a checkpoint: a changed value needs a new one (the job says so
    at start)."""
    delta_writer: str = "auto"
    """Who appends a batch's rows to the Delta tables, and creates and reads them at start.
    ``auto``: a local table's rows are gathered on the driver and committed with delta-rs (~45 ms
    against Spark's ~0.7-1 s a commit), other locations and large batches through Spark; at start a
    local table is created and read by delta-rs (:mod:`streaming.operations.delta_log`). ``spark``:
    always Spark. Either way each commit is idempotent per batch."""

    def __post_init__(self) -> None:
        if self.state_buckets < 0:
            raise ConfigError(
                f"job.state_buckets: {self.state_buckets} is negative (0 keys the state by group)")
        if self.delta_writer not in DELTA_WRITERS:
            raise ConfigError(f"job.delta_writer: {self.delta_writer!r} is not one of "
                              f"{', '.join(DELTA_WRITERS)}")


@dataclass(frozen=True)
class MetricsSettings:
    """Prometheus ``/metrics`` of the job and the collector (see streaming/exporter)."""

    enabled: bool = False
    """Off by default: two jobs on one host would race for the port."""
    host: str = "127.0.0.1"
    """Loopback unless set: the page names every consumer group."""
    job_port: int = 9464
    collector_port: int = 9465
    """0 picks a free port (the log line says which)."""
    max_groups: int = 500
    """Groups with their own series; later ones are counted in
    kafka_rebalancer_metrics_dropped_groups."""
    max_topics_per_group: int = 50


@dataclass(frozen=True)
class MaintenanceSettings:
    """``rebalancer maintain``: Delta upkeep of the job's tables."""

    rejected_retention_days: float = 30.0
    """rejected_events rows whose record is older than this are deleted (0 keeps every row)."""
    recommendations_retention_days: float = 90.0
    """recommendations rows older than this go, each group's latest kept (0 keeps every row)."""
    expire_every_s: float = 600.0
    """The job deletes rows past both retentions itself this often (0: only ``rebalancer maintain``
    does)."""
    log_retention: str = "interval 30 days"
    """delta.logRetentionDuration set at creation (and by maintain on older tables)."""
    deleted_file_retention: str = "interval 7 days"
    """delta.deletedFileRetentionDuration, likewise: VACUUM keeps files unreferenced for less than
    this (Delta 4 ignores a RETAIN clause other than 0 hours and reads this property instead)."""
    auto_compact: bool = True
    """delta.autoOptimize.autoCompact: Delta compacts small files after a write once there are
    enough."""


@dataclass(frozen=True)
class CatalogSettings:
    """The tables by name in Spark's catalog (docs/operating.md#tables-by-name); empty ``schema``:
    by path only."""

    schema: str = ""
    """The schema (database) of the tables and views, e.g. ``ops``:
    ``SELECT * FROM ops.recommendations``."""
    catalog: str = ""
    """A catalog for it (Unity Catalog's, or one set with ``spark.sql.catalog.NAME``); empty:
    Spark's session catalog, a Hive metastore on embedded Derby under ``paths.tables`` unless
    [spark.conf] names another."""
    recommendations: str = "recommendations"
    rejected_events: str = "rejected_events"

    def __post_init__(self) -> None:
        for key in ("schema", "catalog", "recommendations", "rejected_events"):
            if not re.fullmatch(r"[A-Za-z0-9_]*", getattr(self, key)):
                raise ConfigError(
                    f"catalog.{key}: {getattr(self, key)!r}: letters, digits and _ only")


@dataclass(frozen=True)
class Config:
    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    spark: SparkSettings = field(default_factory=SparkSettings)
    paths: PathSettings = field(default_factory=PathSettings)
    policy: PolicySettings = field(default_factory=PolicySettings)
    job: JobSettings = field(default_factory=JobSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    maintenance: MaintenanceSettings = field(default_factory=MaintenanceSettings)
    catalog: CatalogSettings = field(default_factory=CatalogSettings)

    def table_path(self, name: str) -> str:
        return join_location(self.paths.tables, name)

    def checkpoint_path(self, name: str) -> str:
        return join_location(self.paths.checkpoints, name)

    def with_overrides(self, overrides: list[str] | dict[str, str]) -> Config:
        return overrides_of.apply(self, overrides)


def load(path: str | Path | None = None, overrides: list[str] | dict[str, str] | None = None,
         command_config: str | Path | None = None) -> Config:
    """Read the TOML file (default ``conf/rebalancer.toml``), then Kafka client settings from a
    ``.properties`` file (``--command-config``, Kafka's own names), then ``key=value`` overrides;
    finally expand ``${NAME}`` in the Kafka client settings from the environment."""
    file = Path(path) if path else DEFAULT_FILE
    raw: dict[str, Any] = {}
    if path or file.exists():
        try:
            raw = tomllib.loads(file.read_text())
        except FileNotFoundError:
            raise ConfigError(f"configuration file {file} does not exist") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{file}: not valid TOML: {e}") from None
    cfg = values.build(Config, raw, where=str(file))
    if command_config:
        cfg = with_client_properties(cfg, command_config)
    return expand_kafka_env(overrides_of.apply(cfg, overrides or []))


def with_client_properties(cfg: Config, file: str | Path) -> Config:
    """``cfg`` with the Kafka client settings of a Java ``.properties`` file (as
    ``--command-config`` of Kafka's tools): ``bootstrap.servers`` sets ``kafka.bootstrap_servers``,
    the rest joins ``kafka.options``."""
    props = read_properties_file(file)
    bootstrap = props.pop("bootstrap.servers", cfg.kafka.bootstrap_servers)
    return dataclasses.replace(cfg, kafka=dataclasses.replace(
        cfg.kafka, bootstrap_servers=bootstrap, options=cfg.kafka.options | props))


def expand_kafka_env(cfg: Config) -> Config:
    """``${NAME}`` in Kafka client settings replaced by the environment variable (for secrets)."""
    options = expand_env(cfg.kafka.options)
    bootstrap = expand_env({"bootstrap_servers": cfg.kafka.bootstrap_servers})["bootstrap_servers"]
    return dataclasses.replace(
        cfg, kafka=dataclasses.replace(cfg.kafka, bootstrap_servers=bootstrap, options=options))
