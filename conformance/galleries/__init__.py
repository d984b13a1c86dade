"""The mistakes kvspec must catch: deliberately wrong implementations behind the Adapter interface,
each seed 000's or seed 003's mistake with the clause it breaks (mutants: S3FIFO, LRU and FIFO;
benefit_mutants: the benefit policy). They import only the adapters and the reference."""
