"""Measurements on traces: hit rate against capacity (sweep, `kvspec sweep`), the benefit policy
against the block policies and LRU (comparison, `kvspec compare`), and their plots (plots)."""
