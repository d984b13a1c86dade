"""`kvspec certify`: the Hypothesis strategies and the two stateful machines (machine: the block
policies, benefit_machine), the lockstep comparison with the reference (lockstep) and the
diagnosis of a divergence (diagnosis, benefit_diagnosis), an implementation's faults (faults),
the run itself (certify), its report (report) and the pytest plugin (plugin).

Kept free of imports: the plugin is imported by every pytest run before typeguard's import hook
and before a conftest sets KVSPEC_CONTRACTS (see plugin.py)."""
