"""The loopback development cluster: real Apache Kafka brokers (KRaft) from the cached jars
(:mod:`.cluster`), their optional SASL/SSL set-up (:mod:`.sasl_ssl`) and the server-side assignor's
broker settings (:mod:`.broker_config`). Used by ``rebalancer kafka``, the demo, tests and
benchmarks; production code never imports it."""
