"""Lag over time, one home: the rules that read a window of lag observations (time to catch up, age of the
oldest record, stuck partitions: :mod:`.rules`), the job's per-group ring buffer (:mod:`.history`) and the
collector's live window for ``/metrics`` (:mod:`.window`). Below the state and the exporter, so both use the
same rules."""
