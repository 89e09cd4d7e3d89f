"""What crosses a process boundary, with no Spark and no Kafka client: the events the collector
writes (:mod:`.events`, :mod:`.event_parts`) and the recommendation the job writes
(:mod:`.recommendation`)."""
