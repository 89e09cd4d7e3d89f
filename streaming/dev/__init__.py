"""Development tools, shipped apart from the rebalancer itself: the demo (``demo/``), the workload
generator (``workload/``), the smoke pipeline (``smoke.py``) and the test-data generators (``fuzz``,
``produce``).

Nothing outside this package imports it: not the collector, the job, the policy nor the consumer
side."""

SUITE_BROKERS = {
    "log.retention.check.interval.ms": "1000", "log.initial.task.delay.ms": "1000",
    "metadata.max.idle.interval.ms": "5000", "replica.fetch.wait.max.ms": "2000"}
"""The settings of the test suite's three-broker clusters (one per test worker,
``tests/integration/conftest.py``) beyond the embedded cluster's own, each measured by
``python -m benchmarks.broker_idle`` (``benchmarks/results/suite.txt``):

- retention checks every second from the start (Kafka's defaults: every 5 minutes, the first after
  30 s), so a topic with a tiny ``retention.bytes`` sees its log start move within a test
  (``test_operator_view``); topics of default retention lose nothing to it;
- the controller's no-op metadata record every 5 s, not every 0.5 s (KIP-835's default): each is
  replicated and applied by every broker (idle 0.080 -> 0.052 cores, holding 60 topics 0.125 ->
  0.103);
- a follower's fetch from a leader with nothing new waits up to 2 s, not 0.5 s: holding a run's
  topics, three replicas each, the empty fetches were a third of what the brokers burn while they
  wait (idle 0.096 -> 0.078 cores, holding 60 topics 0.148 -> 0.101). New records still complete
  a waiting fetch at once, and so does a high watermark that moved (KIP-392: a follower serving
  consumers learns it without waiting), so no record reaches a consumer later."""

QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
"""``JDK_JAVA_OPTIONS`` of every JVM the test suite starts, and of benchmarks that time starts as
the suite makes them (``benchmarks.cold_run``). C1 only: those JVMs live for seconds to minutes on
small inputs, so C2's compile threads, competing for the machine's two cores, never pay back (a
job's start, Spark to its tables and plan, took 56 s against 90 s under the same load). Behaviour is
the same; speed is for ``benchmarks/`` to measure, with production's options.

C1 alone gets a 48 MB code cache where tiered compilation gets 240. The suite's Spark sessions
filled 48 MB with the code of Spark's generated classes: HotSpot stopped compiling ("not enough
contiguous free space left") and its code cache sweeper, which sweeps at every allocation once less
than 10% is free, took 224 CPU-s of the sessions' 1,062 in a run. With 240 MB, three test modules of
in-process Spark took 148 s against 175, their JVMs 130 CPU-s against 180
(``benchmarks/results/suite.txt``)."""
