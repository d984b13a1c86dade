"""The certification of a block policy (S3FIFO, LRU, FIFO and their dialects): the Hypothesis
strategies (strategies), the stateful machine (machine), the lockstep comparison with the
reference (lockstep; keep_going past a divergence), the diagnosis of a divergence over the
reference's own checks and its one-rule-broken variants (diagnosis, placement, variants), and
the search for a dialect (dialect_search).

Imports findings/ and no other subpackage of conformance/certification/ (tests/test_layers.py)."""
