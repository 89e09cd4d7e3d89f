"""Production Kafka plumbing: client properties in Kafka's own names with
:class:`~.properties.Secret` (:mod:`.properties`), SASL/SSL settings (:mod:`.security`), the client
factories and the rebalancer's topics (:mod:`.factories`), and retry with backoff (:mod:`.retry`).
Nothing here knows the embedded cluster."""
