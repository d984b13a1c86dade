"""What a certification finds, whatever the policy: a divergence, a finding and a policy's outcome
(divergence), the clauses a report covers, derived from the spec and the checking modules'
citations (clauses, PROTO-34), an implementation's faults (faults) and its configuration
findings (configurations).

The first layer of conformance/certification/: it imports none of the other subpackages
(tests/test_layers.py)."""
