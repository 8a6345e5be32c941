"""Release sign-off (golden-eval §9.2; HCAT §1.2; issue 67): what a night's release decision rests on, fixed and hashed so a
reviewer's signature is bound to it and anyone can check it offline.

* ``plan`` — the bar set before the score: the night's plan (golden-set version and manifest hash, the shipped review,
  each system's configuration hash, the gates file and the level in force, the judge, the metric code, the seed) and its
  hash, written before any system answers; a later plan whose bar differs says what moved.
* ``bundle`` — the evidence: a Merkle-style manifest of the files a decision rests on (file → SHA-256, one root hash).
* ``signoff`` — the sign-off log: who, in which role, when, which decision on which bundle hash; each entry carries the
  hash of the one before, so an edited or reordered entry is found; a signature whose bundle changed since is stale.

Pure functions over files and JSON, no Dagster import; beside the gates it signs (layers: after ``gates``)."""
