"""What a run measures at: the scale, and the job's configuration against the embedded cluster."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from streaming import config
from streaming.embedded.cluster import KafkaCluster


@dataclasses.dataclass(frozen=True)
class Scale:
    """``groups x partitions``: how many groups, each with this many partitions."""

    groups: int
    partitions: int

    @property
    def tag(self) -> str:
        return f"{self.groups}x{self.partitions}"

    @classmethod
    def parse(cls, text: str) -> Scale:
        g, _, p = text.strip().partition("x")
        return cls(int(g), int(p))


def bench_config(cluster: KafkaCluster, work: Path) -> config.Config:
    """The default configuration against ``cluster``, paths under ``work``, Spark local[2] with 4
    shuffle partitions, mode ``auto`` (the feed write is part of what is measured)."""
    base = config.load()
    return dataclasses.replace(
        base,
        kafka=dataclasses.replace(base.kafka, bootstrap_servers=cluster.bootstrap_servers),
        paths=config.PathSettings(checkpoints=str(work / "checkpoints"),
                                  tables=str(work / "tables")),
        spark=dataclasses.replace(base.spark, master="local[2]",
                                  conf={"spark.sql.shuffle.partitions": "4"}),
        policy=dataclasses.replace(base.policy, mode=config.AUTO),
    )


def keyed(cfg: config.Config, scale: Scale, buckets: int, suffix: str) -> config.Config:
    """``cfg`` for one run: its own topics (per scale; ``suffix`` for a live run), tables and
    keying."""
    name = f".{scale.tag}{suffix}"
    return dataclasses.replace(
        cfg, job=dataclasses.replace(cfg.job, state_buckets=buckets),
        kafka=dataclasses.replace(cfg.kafka, lag_topic=cfg.kafka.lag_topic + name,
                                  metadata_topic=cfg.kafka.metadata_topic + name),
        paths=dataclasses.replace(cfg.paths,
                                  tables=f"{cfg.paths.tables}-{scale.tag}-{buckets}{suffix}"))
