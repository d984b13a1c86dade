'use strict';
// What a comparison or prefix case needs beside the implementation, from spec/benefit.md: the
// seeded traces (BEN-TRACE-1 to BEN-TRACE-7), the LRU byte-budget baseline (BEN-LRU-1 to
// BEN-LRU-3), the net benefit (BEN-COST-2) and the cost model of a prefix (BEN-MODEL-1 to -4).

const MASK = 2n ** 64n - 1n;
const MIB = 2n ** 20n;

// BEN-TRACE-1.
function xorshift64(seed) {
  let x = seed > 1n ? seed : 1n;
  const u64 = () => {
    x ^= (x << 13n) & MASK;
    x ^= x >> 7n;
    x ^= (x << 17n) & MASK;
    return x;
  };
  return { u64, f64: () => Number(u64() >> 11n) / 2 ** 53 };
}

// BEN-TRACE-2: an access is [key, cold, restore, bytes], as FIX-9's `first` writes it.
function accessFor(rng, key) {
  const cold = 50 + rng.f64() * 400;
  const restore = 0.3 * cold;
  const bytes = (1n + (rng.u64() % 8n)) * MIB;
  return [BigInt(key), cold, restore, bytes];
}

const TRACES = {
  // BEN-TRACE-3
  zipf_hotset(rng, n) {
    const weights = Array.from({ length: 64 }, (_, i) => 1 / (i + 1));
    let total = 0;
    for (const w of weights) total += w;
    const out = [];
    for (let a = 0; a < n; a++) {
      const pick = rng.f64() * total;
      let running = 0;
      let key = weights.findIndex((w) => (running += w) >= pick);
      if (key < 0) key = 0;
      out.push(accessFor(rng, key));
    }
    return out;
  },
  // BEN-TRACE-4
  turn_growth(rng, sessions, turns) {
    const out = [];
    for (let s = 0; s < sessions; s++) {
      for (let t = 0; t < turns; t++) for (let e = 0; e <= t; e++) out.push(accessFor(rng, s * turns + e));
    }
    return out;
  },
  // BEN-TRACE-5
  one_shot(rng, n) {
    const out = [];
    for (let i = 0; i < n; i++) {
      if (i % 8 === 7) out.push(accessFor(rng, 0));
      out.push(accessFor(rng, 1000000 + i));
    }
    return out;
  },
  // BEN-TRACE-6
  mixed_size(rng, n) {
    const sizes = [64n * 1024n, 4n * MIB, 256n * MIB];
    return Array.from({ length: n }, (_, i) => {
      const cls = Math.floor(i / 32) % 3;
      const access = accessFor(rng, cls * 32 + (i % 32));
      access[3] = sizes[cls];
      return access;
    });
  },
  // BEN-TRACE-7
  mixed_reuse(rng, n) {
    const sizes = [64n * 1024n, 4n * MIB, 64n * MIB];
    return Array.from({ length: n }, (_, i) => {
      const cls = i % 3;
      const access = accessFor(rng, cls * 8 + Number(rng.u64() % 8n));
      access[3] = sizes[cls];
      return access;
    });
  },
};

// A comparison case's `trace`, "name(seed, arg, ...)" as BEN-CMP-1 writes the calls.
function seededTrace(call) {
  const m = /^([a-z_]+)\(([0-9]+(?:, [0-9]+)*)\)$/.exec(call);
  if (!m || !Object.hasOwn(TRACES, m[1])) return null;
  const [seed, ...args] = m[2].split(', ').map(BigInt);
  return TRACES[m[1]](xorshift64(seed), ...args.map(Number));
}

// BEN-COST-2: +0.0 unless the difference is positive.
function netBenefit(cold, restore) {
  const d = cold - restore;
  return d > 0 ? d : 0;
}

// BEN-LRU-1 to BEN-LRU-3 over a trace at a byte capacity. A Map keeps insertion order: its last
// key is the list's front (most recent), its first the back.
function lruBaseline(accesses, capacity) {
  const list = new Map();
  let used = 0n;
  const side = { accesses: BigInt(accesses.length), bytes_written: 0n, hits: 0n, saved: 0 };
  for (const [key, cold, restore, bytes] of accesses) {
    if (list.has(key)) {
      side.hits += 1n;
      side.saved += netBenefit(cold, restore);
      const size = list.get(key);
      list.delete(key);
      list.set(key, size);
      continue;
    }
    for (const [back, size] of list) {
      if (used + bytes <= capacity) break;
      list.delete(back);
      used -= size;
    }
    if (bytes <= capacity) {
      list.set(key, bytes);
      used += bytes;
      side.bytes_written += bytes;
    }
  }
  return side;
}

// BEN-MODEL-2: the bytes of one block.
const blockBytes = (model, blockSize) => blockSize * 2n * model.layers * model.kv_heads * model.head_dim * model.bytes_per_element;

// BEN-MODEL-3 and BEN-MODEL-4: the cost sample of the first m blocks of a request of L tokens.
function costSample(model, blockSize, m, L) {
  const t = BigInt(m) * blockSize < L ? BigInt(m) * blockSize : L;
  const flops = 2n * model.parameters * t + 2n * model.layers * model.hidden * t * (t - 1n);
  return {
    cold_prefill_cost: Number(flops) / (Number(model.prefill_flops_per_second) / 1000),
    restore_cost: Number(BigInt(m) * blockBytes(model, blockSize)) / (Number(model.restore_bytes_per_second) / 1000),
  };
}

module.exports = { seededTrace, lruBaseline, netBenefit, blockBytes, costSample };
