"""`kvspec certify` and `kvspec campaign`, in layers, each subpackage importing only those before
it (tests/test_layers.py):

1. findings/: what a certification finds (a divergence, a finding, an outcome), the clauses a
   report covers, an implementation's faults and configuration findings;
2. block/: the block policies' machine, lockstep, diagnosis and dialect search;
3. benefit/: the benefit policy's machine and diagnosis;
4. lifecycle/: the machine, lockstep and diagnosis of requests in flight;
5. verdict/: the verdict built once and rendered, its badge, the matrix;
6. this package's own modules, the run: certify (one policy), job (a whole certification, as
   `kvspec certify` runs it), campaign (a campaign of them), and the pytest plugin (plugin).

Kept free of imports: the plugin is imported by every pytest run before typeguard's import hook
and before a conftest sets KVSPEC_CONTRACTS (see plugin.py)."""
