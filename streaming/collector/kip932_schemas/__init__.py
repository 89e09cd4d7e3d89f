"""Wire layouts of ShareGroupDescribe (API key 77) and DescribeShareGroupOffsets (API key 90,
KIP-932; v1 adds each share-partition's lag, KIP-1226) in the JSON form kafka-python's protocol
classes load; kafka-python 3.0.12 ships none for these APIs. See
:mod:`streaming.collector.kip932`."""
