"""When a group gets a recommendation: one module per trigger, pure functions over plain values.

- ``rack_change``: a subscribed partition's set of replica racks changed (KIP-881's rule);
- ``membership``: members joined or left;
- ``partition_count``: a subscribed topic gained partitions;
- ``lag_skew``: the current assignment stays skewed for N observations and a better one exists;
- ``stuck``: partitions whose committed offset does not move while they have lag;
- ``decide``: puts them together for one observation of one group.
"""
