"""What every concern of the conformance tooling shares, and nothing above it: the standard streams
made sound as the command starts (streams), writing files whole (output), the install command of an
optional extra (extras), reading the clause citations of the code (citations) and the annotated spec
built from them (annotated_spec), the workloads every side sends (workloads: numberings, the
conversation generator, the fixed probes), the benefit policy's requests as JSON (benefit_requests), and
the interruption that ends kvspec, a SIGINT or SIGTERM, wherever it lands (interruption)."""
