"""Lag over time, one home: the rules that read a window of lag observations (time to catch up,
age of the oldest record, stuck partitions: :mod:`.rules`; records lost to log retention:
:mod:`.loss_risk`), who owns what under an assignment and each member's capacity (:mod:`.owners`,
:mod:`.capacity`), the job's per-group ring buffer (:mod:`.history`) and the collector's live
window for ``/metrics`` (:mod:`.window`). Below the state, the operator's view and the exporter,
so all use the same rules."""
