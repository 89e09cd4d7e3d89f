"""``rebalancer kafka up|down|status``: an embedded Kafka cluster (KRaft) on loopback."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kafka", help="start or stop an embedded Kafka cluster on loopback")
    ops = p.add_subparsers(dest="op", metavar="OP", required=True)
    up = ops.add_parser("up",
                        help="start a cluster, print its bootstrap servers and leave it running")
    up.add_argument("--brokers", type=int, default=1,
                    help="1 (default) or 3 with broker.rack a, b, c")
    up.add_argument("--port", type=int, default=None,
                    help="client port of the first broker (default: a free one)")
    up.add_argument("--security", choices=("plaintext", "sasl-ssl"), default="plaintext",
                    help="sasl-ssl: TLS with a CA made on the fly, SCRAM-SHA-512 users, ACLs per "
                         "principal; a client .properties file per principal (for "
                         "--command-config) is written next to it")
    up.add_argument("--server-assignor", action="store_true",
                    help="load the project's KIP-848 server-side assignor (clients/java, built if "
                         "needed) as the default of group.consumer.assignors, with uniform and "
                         "range still available (docs/server-assignor.md)")
    up.set_defaults(func=_up)
    down = ops.add_parser("down", help="stop the cluster started by `kafka up`")
    down.set_defaults(func=_down)
    status = ops.add_parser("status", help="print the running cluster's bootstrap servers")
    status.set_defaults(func=_status)


def _up(args: argparse.Namespace) -> int:
    from streaming.embedded import cluster as kafka_cluster
    from streaming.embedded import detached
    from streaming.errors import KafkaClusterError

    running = detached.detached_state()
    if running:
        raise KafkaClusterError(
            f"a cluster is already running at {running['bootstrap_servers']}: "
            "`rebalancer kafka down` first")
    ports = None
    if args.port:
        ports = [args.port + i for i in range(args.brokers)]
    if args.server_assignor and args.security != "plaintext":
        # the assignor's own clients would need the broker's SCRAM credentials (rebalancer.client.*)
        raise KafkaClusterError("--server-assignor runs on a plaintext embedded cluster only; see "
                                "docs/server-assignor.md for the settings of a secured cluster")
    cluster: kafka_cluster.KafkaCluster
    if args.server_assignor:
        from streaming.embedded.broker_config import ServerAssignorCluster

        cluster = ServerAssignorCluster(brokers=args.brokers, ports=ports, outlives_owner=True)
    else:
        cluster = kafka_cluster.KafkaCluster(brokers=args.brokers, ports=ports,
                                               outlives_owner=True)
    if args.security == "sasl-ssl":
        from streaming.embedded.sasl_ssl import EmbeddedSecurity

        cluster.security = EmbeddedSecurity(cluster.base_dir / "security")
    bootstrap = cluster.start()
    cluster.save_state()
    print(bootstrap)
    if cluster.security:
        for principal, path in cluster.security.client_files().items():
            print(f"  {principal}: --command-config {path}")
    return 0


def _down(args: argparse.Namespace) -> int:
    from streaming.embedded import detached

    pids = detached.stop_detached()
    print(f"stopped {len(pids)} broker(s)" if pids else "no embedded cluster was running")
    return 0


def _status(args: argparse.Namespace) -> int:
    from streaming.embedded import detached

    state = detached.detached_state()
    if not state:
        print("no embedded cluster is running")
        return 1
    print(state["bootstrap_servers"])
    return 0
