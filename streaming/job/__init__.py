"""The Structured Streaming query: Kafka -> parse + validate -> per-group state -> Delta + trigger feed."""
