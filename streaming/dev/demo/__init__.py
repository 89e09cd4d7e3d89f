"""``rebalancer demo``: the closed loop on one machine (cluster, workload, collector, streaming job,
consumers applying the recommendations), shown live, summarised and plotted. See
:mod:`streaming.dev.demo.runner`; the pieces are in :mod:`streaming.dev.demo.loop`, the figures in
:mod:`streaming.dev.demo.monitor` and the picture in :mod:`streaming.dev.demo.plot`."""
