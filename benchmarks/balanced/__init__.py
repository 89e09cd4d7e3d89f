"""The balanced assignor's own checks and timings: a seeded corpus and fixed shapes
(:mod:`.corpus`), the same results as another version of the package (:mod:`.same`), its speed
beside that version (:mod:`.speed`) and what that speed is worth in the job's stateful step
(:mod:`.job_step`)."""
