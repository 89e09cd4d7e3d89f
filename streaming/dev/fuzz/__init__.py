"""Fuzzing, in one place: records that must each be valid or rejected with a reason, sent through
the real job, and what it did with each judged.

- :mod:`.kinds`: the hand-made kinds (malformed, extreme, adversarial, late, without a Kafka
  timestamp; about equally many of each), each labelled with what the job must do with it;
- :mod:`.contract`: Hypothesis strategies drawn from the event contract (every field at and
  beyond its bounds), for the property tests and the long run's ``--contract``;
- :mod:`.valid_rows`: Hypothesis strategies of the rows validation admits, drawn from
  :mod:`streaming.contracts.validated` alone (no such row may make the step raise);
- :mod:`.judge`: sends labelled records to the job's topics and compares each with the
  ``rejected_events`` row at its source offset;
- ``python -m streaming.dev.fuzz`` (:mod:`.__main__`): the long run of ``make test-long``, on an
  embedded one-broker cluster; its last results are in ``benchmarks/results/fuzz*.txt``.

The tests that run them: tests/integration/test_fuzz.py (a short run of the kinds in CI),
test_contract.py, test_contract_job.py, test_whole_record.py and tests/unit/streaming/dev/.
"""
