"""The query's data path, an event's way through the Spark edge: Kafka -> parse + validate -> the
stateful step (buckets of groups, or one group per key) -> Delta + trigger feed.

:mod:`.query` assembles it; :mod:`.validate` (with :mod:`.field_columns`, :mod:`.metadata_rules`,
:mod:`.canonical`, :mod:`.dense`, :mod:`.event_time` and :mod:`.variant_fields`) reads and checks
each record; :mod:`.buckets` and :mod:`.stateful` (with :mod:`.isolate`, :mod:`.rejection` and
:mod:`.convert`) run the step; :mod:`.sinks` (with :mod:`.driver_delta`) writes each batch out.
Running, stopping, recovering and keeping the job live in :mod:`streaming.operations`."""
