"""Arguments every job command shares."""

from __future__ import annotations

import argparse


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--conf", action="append", default=[], metavar="FILE|KEY=VALUE",
        help="a configuration file (default conf/rebalancer.toml), or a KEY=VALUE override; "
             "repeatable. spark.* and kafka.* keys go to Spark and the Kafka clients",
    )
    p.add_argument(
        "--command-config", metavar="FILE", default=None,
        help="Kafka client settings in a Java .properties file, Kafka's own names (as Kafka's "
             "tools take it): bootstrap.servers, security.protocol, sasl.jaas.config, ...; ${NAME} "
             "is read from the environment",
    )


def load_config(args: argparse.Namespace):
    from streaming import config
    from streaming.errors import ConfigError

    files = [c for c in args.conf if "=" not in c]
    if len(files) > 1:
        raise ConfigError(f"--conf names more than one configuration file: {', '.join(files)}")
    return config.load(files[0] if files else None, [c for c in args.conf if "=" in c],
                       command_config=getattr(args, "command_config", None))
