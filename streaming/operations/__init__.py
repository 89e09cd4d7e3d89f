"""The job's operations: running, stopping, recovering and keeping it, beside the query's data path
(:mod:`streaming.job`), which calls them; nothing here imports the data path.

- running: one job per checkpoint (:mod:`.lease`), the query kept going through faults that heal
  (:mod:`.supervisor`), stopped on a signal at a batch boundary (:mod:`.stopping`);
- recovering: side files next to the checkpoint written whole or not at all (:mod:`.hfs`)
  and rebuilt from the tables' logs when lost (:mod:`.recover`); named crash points for the
  chaos tests (:mod:`.faults`);
- keeping: the Delta tables created, checked and kept up (:mod:`.delta_tables`), old rows
  deleted between the job's own appends (:mod:`.row_retention`), checksum files of expired
  commits swept (:mod:`.log_orphans`).
"""
