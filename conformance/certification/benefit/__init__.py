"""The certification of the benefit policy: its stateful machine (machine) and the diagnosis of a
divergence (diagnosis), built on the block machine's lockstep and strategies.

Imports findings/ and block/, and no other subpackage of conformance/certification/
(tests/test_layers.py)."""
