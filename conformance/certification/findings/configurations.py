"""Configuration findings: a configuration the implementation and the spec disagree on (one
accepts it, the other refuses it), or one it fails at (a crash, a hang), is a finding of its own,
and the certification goes on with the configurations both accept, so that every clause of the
behaviour is still decided (docs/certification.md, "Configuration findings").

Each kind is reported once: a disagreement by which way it goes and the clauses it names, a
failure by the clause and the whole-domain knob values it happened at (of those that include one
another, the fewest). A configuration with the
knob values an implementation failed at is not offered again, so a hang is waited out once for
each, not on every example. A failure at a configuration with no whole-domain knob (one any cache
must take), or one that the same configuration with those knobs usual fails too, is no
configuration finding: it ends the example as any fault does.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from kvspec.conformance.certification.findings.divergence import Divergence, Knobs
from kvspec.conformance.certification.findings.faults import Fault, Unshrinkable


@dataclass
class ConfigurationFindings:
    """One certification's configuration findings, the first of each kind in the order met, and
    the knob values the implementation failed at. ``wide`` gives a configuration's knobs that take
    a value from the whole domain; ``base`` is a configuration every implementation must accept,
    towards which a disagreement is made as simple as it stays."""

    wide: Callable[[Any], Knobs]
    base: Any
    found: dict[tuple[object, ...], Divergence] = field(default_factory=dict)
    failed_at: list[Knobs] = field(default_factory=list)

    def offered(self, config: Any) -> bool:
        """Whether ``config`` may be offered: it has not all the knob values of one the implementation failed at."""
        knobs = set(self.wide(config))
        return not any(set(failed) <= knobs for failed in self.failed_at)

    def kept(self, stop: Divergence | Unshrinkable, config: Any, offer: Callable[[Any], Divergence | None]) -> bool:
        """Keep a configuration finding (``offer`` offers a configuration to both again, to make a
        new kind's as simple as it stays); False when ``stop`` is not one, and must be raised."""
        divergence = stop.fault if isinstance(stop, Unshrinkable) else stop
        if isinstance(divergence, Fault):
            knobs = self.wide(config)
            if not knobs or fails_without(knobs, config, self.base, offer):
                return False
            self.failed_at.append(knobs)
            self.keep_failure(divergence, knobs)
            return True
        kind = kind_of(divergence)
        if kind not in self.found:
            self.found[kind] = simplest(divergence, config, self.base, offer)
        return True

    def keep_failure(self, fault: Fault, knobs: Knobs) -> None:
        """One failure of each clause for knob values that include one another: the one at the
        fewest (a hang at capacity 2^63 - 1 alone, not also at capacity 2^63 - 1 with block_size 0)."""
        related = [kind for kind in self.found if kind[:2] == ("failed", fault.clauses) and
                   (set(kind[2]) <= set(knobs) or set(kind[2]) >= set(knobs))]  # type: ignore[arg-type]
        if any(set(kind[2]) <= set(knobs) for kind in related):  # type: ignore[arg-type]
            return
        for kind in related:
            del self.found[kind]
        self.found[("failed", fault.clauses, knobs)] = fault

    def findings(self) -> list[Divergence]:
        return list(self.found.values())


def fails_without(knobs: Knobs, config: Any, base: Any, offer: Callable[[Any], Divergence | None]) -> bool:
    """Whether the implementation fails at ``config`` with its whole-domain knobs set to ``base``'s
    too: then the failure is not theirs, and no configuration finding (a fresh implementation is
    offered it: the one that failed is done with)."""
    try:
        again = offer(replace(config, **{knob: getattr(base, knob) for knob, _ in knobs}))
    except Unshrinkable:
        return True
    return isinstance(again, Fault)


def kind_of(disagreement: Divergence) -> tuple[object, ...]:
    """A disagreement's kind: which way it goes (the spec's answer) and the clauses it names."""
    return (disagreement.expected, disagreement.clauses)


def simplest(disagreement: Divergence, config: Any, base: Any, offer: Callable[[Any], Divergence | None]) -> Divergence:
    """The disagreement with each knob set to ``base``'s in turn, wherever the same kind stays: the
    knobs it keeps are those it depends on. ``offer`` gives what offering a configuration to both
    raised, or None; a fault on the way ends the search (if it is one to report, the examples
    meet it again)."""
    kind = kind_of(disagreement)
    for knob in (f.name for f in fields(config)):
        simpler = replace(config, **{knob: getattr(base, knob)})
        if simpler == config:
            continue
        try:
            again = offer(simpler)
        except Unshrinkable:
            return disagreement
        if isinstance(again, Fault):
            return disagreement
        if again is not None and kind_of(again) == kind:
            config, disagreement = simpler, again
    return disagreement
