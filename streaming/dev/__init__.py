"""Development tools, shipped apart from the rebalancer itself: the demo (``demo/``), the workload
generator (``workload/``), the smoke pipeline (``smoke.py``) and the test-data generators (``fuzz``,
``produce``).

Nothing outside this package imports it: not the collector, the job, the policy nor the consumer
side."""
