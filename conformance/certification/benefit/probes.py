"""The fixed probes the benefit certification sends after its machine (``probe_divergence``): each
whole-domain knob alone, counts of 257, ghosts of every age, scores of zero, the bytes held at
2**53, an offer of nothing; too rare to be drawn, sent once."""

from dataclasses import replace

from kvspec.adapters import Implementation
from kvspec.conformance.certification.benefit.machine import benefit_machine_for
from kvspec.conformance.certification.benefit.strategies import ABOVE_SMALL_INTS, FIXED_COSTS, WIDE_ALONE
from kvspec.conformance.certification.findings.configurations import ConfigurationFindings
from kvspec.conformance.certification.findings.divergence import Divergence
from kvspec.conformance.certification.findings.faults import Unshrinkable
from kvspec.conformance.core.workloads import KEY_NUMBERINGS
from kvspec.reference.benefit import BenefitConfig


def probe_divergence(implementation: Implementation, configurations: ConfigurationFindings | None = None,
                     behaviour: bool = True, fresh: bool = False) -> Divergence | None:
    """The probes, in order, on the running implementation (a fresh one after a failure): WIDE_ALONE,
    every one; then, where a count is 257 (just above the ints CPython keeps one object for), a
    ghost table overflowed, a threshold reached and an offer of that many segments; an offer that
    names one segment twice; ghosts of every age up to well past the limit; scores of zero, one
    from a sample (-0.0, 0.0); the bytes held at 2**53; an offer of nothing, and a ghost decayed
    before its take-over. The first
    Divergence (a Fault where the implementation failed), or None. Drawn in the examples, some
    would go unmet in a quick run, and each would make every example dearer to draw and shrink;
    sent after the machine, they cost nothing to an implementation it has already caught. Configuration
    findings go to ``configurations``, and the probes go on; without ``behaviour``, only WIDE_ALONE
    is offered (the machine has found the behaviour wanting already)."""
    machine_class = benefit_machine_for(implementation, fresh)  # a fresh implementation for each configuration, if ``fresh``
    if configurations is not None:
        machine_class.configurations = configurations
    machine = machine_class()
    machine.number_keys(KEY_NUMBERINGS[0])
    try:
        for probe in WIDE_ALONE:
            machine.configure(probe)
        if not behaviour:
            return None
        machine.configure(replace(BenefitConfig(), ghost_capacity=ABOVE_SMALL_INTS))
        machine.fill_ghosts()
        machine.configure(replace(BenefitConfig(), persistence_hit_threshold=ABOVE_SMALL_INTS))
        machine.hit_to_threshold(1)
        machine.configure(BenefitConfig())
        machine.offer_many_segments()
        machine.offer(machine.numbering(1), 1, [(machine.numbering(1), 4)] * 2, FIXED_COSTS[0], frozenset())  # BEN-ADMIT-1
        machine.configure(replace(BenefitConfig(), ghost_max_age_observations=2))
        machine.ghosts_past_their_age()
        machine.configure(replace(BenefitConfig(), persistence_hit_threshold=1, grace_observations=0, min_reuse_probability=-0.0))
        machine.zero_scores()
        machine.configure(replace(BenefitConfig(), grace_observations=0))
        machine.bytes_at_the_bound()
        machine.configure(BenefitConfig())
        machine.nothing_offered_and_ghosts_decayed()
    except Unshrinkable as stop:
        return stop.fault
    except Divergence as divergence:
        return divergence
    return None
