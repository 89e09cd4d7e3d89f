"""Wire layouts of ConsumerGroupDescribe (API key 69, KIP-848) in the JSON form kafka-python's
protocol classes load; kafka-python 3.0.12 ships none for this API. See
:mod:`streaming.collector.kip848`."""
