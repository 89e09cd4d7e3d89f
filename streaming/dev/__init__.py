"""Development tools, shipped apart from the rebalancer itself: the demo (``demo/``), the workload
generator (``workload/``), the smoke pipeline (``smoke.py``) and the test-data generators (``fuzz``,
``produce``).

Nothing outside this package imports it: not the collector, the job, the policy nor the consumer
side."""

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
