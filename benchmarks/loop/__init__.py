"""Closed-loop benchmark of live groups: the rebalancer's recommendations vs Kafka's assignors (see
``__main__``)."""
