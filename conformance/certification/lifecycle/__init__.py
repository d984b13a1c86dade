"""The certification of requests in flight (spec/lifecycle.md sections 1 to 5): the lifecycle's
operations sent to the implementation and to the reference's pool in lockstep (lockstep.py), drawn
by a stateful machine (machine.py), each difference read by the diagnosis (diagnosis.py)."""
