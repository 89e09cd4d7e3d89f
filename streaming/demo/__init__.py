"""``rebalancer demo``: the closed loop on one machine (cluster, workload, collector, streaming job,
consumers applying the recommendations), shown live, summarised and plotted. See
:mod:`streaming.demo.runner`; the pieces are in :mod:`streaming.demo.loop`, the figures in
:mod:`streaming.demo.monitor` and the picture in :mod:`streaming.demo.plot`."""
