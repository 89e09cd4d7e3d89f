"""The balanced assignor's own checks and timings: a seeded corpus (:mod:`.corpus`), the same results as another
version of the package (:mod:`.same`), and its speed beside that version (:mod:`.speed`)."""
