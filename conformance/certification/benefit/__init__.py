"""The certification of the benefit policy: what its machine draws (strategies), the machine
(machine), the fixed probes sent after it (probes), and the diagnosis of a divergence (diagnosis)
over the reference benefit policy with one rule broken (variants); built on the block machine's
lockstep and strategies.

Imports findings/ and block/, and no other subpackage of conformance/certification/
(tests/test_layers.py)."""
