"""`kvspec certify`: the Hypothesis strategies and the two stateful machines (machine: the block
policies, benefit_machine), the lockstep comparison with the reference (lockstep) and the
diagnosis of a divergence (diagnosis, benefit_diagnosis), an implementation's faults (faults),
what they find (findings: a Divergence, a Finding, a policy's Outcome), the run itself (certify:
one policy; job: a whole certification; campaign: a campaign of them), its verdict, built once
(report), rendered for the console, report.md and report.json by rendering alone, with the
commands that replay a counterexample (reproduction), and the pytest plugin (plugin).

Kept free of imports: the plugin is imported by every pytest run before typeguard's import hook
and before a conftest sets KVSPEC_CONTRACTS (see plugin.py)."""
