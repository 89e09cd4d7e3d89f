"""Speed and memory of our assignors beside Kafka's own Java ones, on the sizes of Kafka's scale
tests.

    .venv/bin/python -m benchmarks.speed                 # full sizes (~10-15 min on 2 cores)
    .venv/bin/python -m benchmarks.speed --quick         # small sizes, a minute
    .venv/bin/python -m benchmarks.speed --assignors range,sticky --save
    .venv/bin/python -m benchmarks.speed --assignors sticky,cooperative-sticky
                                         --cases uniform-1M,one-single-1M --rounds
    .venv/bin/python -m benchmarks.speed --cases many-topics-r1  # sticky family, round 1 only (#31)

Cases (``AbstractStickyAssignorTest`` in apache/kafka, run there for Sticky and CooperativeSticky):

* ``uniform-1M``: 500 topics x 2000 partitions (1,000,000), 2000 consumers, all subscribed to every
  topic (``testLargeAssignmentAndGroupWithUniformSubscription``, 30 s timeout).
* ``many-topics-r1``: the same group, the sticky family's first round alone (a fresh assignment of
  many topics, where the constrained builder's cost is making a million partitions; round 2 is in
  ``uniform-1M``).
* ``one-single-1M``: the same, but the last consumer subscribes to topic 0 only
  (``testLargeAssignmentAndGroupWithNonEqualSubscription``, 90 s timeout).
* ``split-20k``: 100 topics x 200 partitions, 500 consumers; i % 4 == 0 take the first half of the
  topics, the others the second half (``testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout``,
  90 s).
* ``balanced-100k``: ours alone, 100 topics x 1000 partitions, 1000 members on 3 racks, random lags,
  replicas on 2 of 3 racks, owned partitions from a previous round-robin assignment.

Names are Kafka's (``t``/``c`` + zero-padded index). Like Kafka's tests, the sticky family runs two
rounds: a fresh assignment, then every member but member 0 re-joins owning what it got (generation
1); a time is both rounds together (``--rounds`` prints each round too).

Each side is timed **cold** and **warm**, JMH-style. Cold: the first assign call in a fresh process
(ours: a fresh Python subprocess, the module imported; Java: a fresh JVM, no warm-up, so mostly
interpretation and JIT compilation). Warm: then ``--warmups`` more calls that are not timed and the
median of ``--repeats`` timed calls in the same process, which is what a group leader's long-running
JVM does. The headline ratio is ours (warm) / Java (warm). ``ru_maxrss`` of our subprocess is that
case's peak RSS (interpreter and input snapshot included; ``base`` is RSS before the first assign
call); Java's peak heap is the sum of the heap pools' peaks during the cold call (benchmarks/javaref
``timing`` mode, the group generated in Java). ``lag`` and ``balanced`` have no counterpart in
kafka-clients: ``lag`` is compared with Java's RangeAssignor on the same input.

The package: :mod:`.cases` (the cases, names and subscriptions), :mod:`.child` (our side in a child
process), :mod:`.runs` (a run of ours and of Java's), :mod:`.table` (the rows and verdicts),
:mod:`.command` (``python -m benchmarks.speed``; ``rebalancer bench speed`` calls its :func:`main`).
"""

from __future__ import annotations

from .cases import GIB, JAVA, MIB, RESULTS_DIR, ROOT, STICKY, Case, canonical, cases, topics_for
from .child import child
from .command import main
from .runs import run_java, run_ours
from .table import HEADER, round_rows, row, verdict

__all__ = ["GIB", "HEADER", "JAVA", "MIB", "RESULTS_DIR", "ROOT", "STICKY", "Case", "canonical",
           "cases", "child", "main", "round_rows", "row", "run_java", "run_ours", "topics_for",
           "verdict"]
