'use strict';
// kvspec example: S3FIFO, LRU and FIFO (spec/s3fifo.md, spec/lru.md, spec/fifo.md) and the
// longest-prefix hit count of spec/replay.md, in plain JavaScript with no dependencies.
//
// Hash ids are the keys of the queues. The protocol server (server.js) passes them as the BigInts
// its JSON parser read (../kvspec-node/protocol.js), which Maps and Sets compare by value, so
// every signed 64-bit id stays exact; any value that is a valid Map key works when this module is
// used on its own.
//
// Queues are Maps (S, M: hash -> freq) and Sets (G, LRU, FIFO): both iterate in insertion order,
// so the head is the first key and appending is set()/add() of a key that is not there.
// Map.set() on a key already present keeps its position, which is what S3-ACCESS-1/2 need.

const INT64_MAX = (1n << 63n) - 1n;
const POLICIES = ['s3fifo', 'lru', 'fifo'];

class ConfigError extends Error {
  constructor(clause, message) {
    super(`${clause}: ${message}`);
    this.clause = clause;
  }
}

// S3-CONF-2: Python's round() on a double: the nearest integer, an exact tie to the even one.
// For x >= 1, floor(x) >= x / 2, so x - floor(x) is exact (Sterbenz); for 0 <= x < 1 it is x.
// A tie is possible only when that fraction is exactly 0.5. (Math.round sends ties up: wrong.)
function roundHalfEven(x) {
  if (!Number.isFinite(x)) throw new RangeError(`cannot round ${x}`);
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

// An integer in [low, 2**63 - 1], or null. Integers are BigInts: a Number is a double, as the
// JSON literal 4.0 is, and the spec refuses a double where it wants an integer (REPLAY-CONF-1).
function asCount(value, low) {
  return typeof value === 'bigint' && value >= low && value <= INT64_MAX ? value : null;
}

// A queue bound as a Number; one beyond 2**53 can never be reached by a Map's size.
function bound(v) {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : Infinity;
}

function show(v) {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined) return 'missing';
  return String(v);
}

function checkCount(value, low, clause, what) {
  const v = asCount(value, low);
  if (v === null) throw new ConfigError(clause, `${what} must be an integer in [${low}, 2**63 - 1], not ${show(value)}`);
  return v;
}

// S3-CONF-1 to S3-CONF-6: { smallCap, mainCap, ghostCap } (BigInts) or a ConfigError.
// small_ratio is any JSON number (PROTO-3): an integer literal reaches here as a BigInt, and `1`
// is the double 1.0.
function s3fifoCaps(capacity, rawRatio, maxFreq) {
  const cap = checkCount(capacity, 1n, 'REPLAY-CONF-1', 'capacity');
  const smallRatio = typeof rawRatio === 'bigint' ? Number(rawRatio) : rawRatio;
  if (typeof smallRatio !== 'number' || !Number.isFinite(smallRatio) || !(smallRatio >= 0 && smallRatio <= 1)) {
    throw new ConfigError('S3-CONF-1', `small_ratio must be a finite double in [0.0, 1.0], not ${show(smallRatio)}`);
  }
  const mf = checkCount(maxFreq, 0n, 'S3-CONF-6', 'max_freq');
  // S3-CONF-2: the IEEE-754 product (Number(BigInt) rounds to nearest, as Python's int * float
  // does), then round half to even. A product beyond 2**53 is already an integer.
  const product = Number(cap) * smallRatio;
  const smallCap = BigInt(roundHalfEven(product));
  const mainCap = cap - smallCap; // S3-CONF-3
  if (smallCap < 1n || mainCap < 1n) {
    throw new ConfigError(
      'S3-CONF-5',
      `capacity ${cap} at small_ratio ${smallRatio} gives small_cap = round(${cap} * ${smallRatio}) = ${smallCap}` +
        ` and main_cap = ${mainCap}; S3FIFO needs both >= 1`,
    );
  }
  return { smallCap, mainCap, ghostCap: mainCap /* S3-CONF-4 */, maxFreq: mf };
}

class S3FIFO {
  constructor(caps) {
    this.caps = caps;
    this.smallCap = bound(caps.smallCap);
    this.mainCap = bound(caps.mainCap);
    this.ghostCap = bound(caps.ghostCap);
    this.maxFreq = bound(caps.maxFreq); // freqs count accesses: they never come near 2**53
    this.small = new Map(); // S3-QUEUE-1: hash -> freq
    this.main = new Map();
    this.ghost = new Set(); // hashes alone
  }

  // S3-QUEUE-3: resident iff in S or M; the ghost never counts.
  isResident(h) {
    return this.small.has(h) || this.main.has(h);
  }

  // S3-ACCESS-1 to S3-ACCESS-4.
  access(h) {
    let f = this.small.get(h);
    if (f !== undefined) {
      this.small.set(h, Math.min(f + 1, this.maxFreq)); // S3-ACCESS-1, S3-FREQ-2: in place
      return;
    }
    f = this.main.get(h);
    if (f !== undefined) {
      this.main.set(h, Math.min(f + 1, this.maxFreq)); // S3-ACCESS-2: in place
      return;
    }
    if (this.ghost.has(h)) {
      this.ghost.delete(h); // S3-ACCESS-3
      this.admitToMain(h, 0);
      return;
    }
    this.admitToSmall(h); // S3-ACCESS-4
  }

  // S3-ADMIT-S-1 to S3-ADMIT-S-4.
  admitToSmall(h) {
    const small = this.small;
    while (small.size >= this.smallCap) {
      const [victim, vf] = small.entries().next().value; // the head
      small.delete(victim);
      if (vf >= 1) this.admitToMain(victim, vf); // S3-ADMIT-S-2: freq kept
      else this.insertToGhost(victim); // S3-ADMIT-S-3
    }
    small.set(h, 0); // S3-ADMIT-S-4
  }

  // S3-ADMIT-M-1 to S3-ADMIT-M-4: second chance, then exactly one real eviction.
  admitToMain(h, freq) {
    const main = this.main;
    while (main.size >= this.mainCap) {
      const [victim, vf] = main.entries().next().value; // the head
      main.delete(victim);
      if (vf >= 1) {
        main.set(victim, vf - 1); // S3-ADMIT-M-2: back at the tail
        continue;
      }
      this.insertToGhost(victim); // S3-ADMIT-M-3
      break;
    }
    main.set(h, freq); // S3-ADMIT-M-4
  }

  // S3-GHOST-1 to S3-GHOST-3.
  insertToGhost(h) {
    const ghost = this.ghost;
    if (ghost.has(h)) ghost.delete(h); // S3-GHOST-1
    else if (ghost.size >= this.ghostCap) ghost.delete(ghost.values().next().value); // S3-GHOST-2
    ghost.add(h); // S3-GHOST-3
  }

  // S3-FINAL-1.
  residentCount() {
    return this.small.size + this.main.size;
  }

  // Queues head first: [[h, f], ...], [[h, f], ...], [h, ...].
  snapshot() {
    return { small: [...this.small], main: [...this.main], ghost: [...this.ghost] };
  }
}

// LRU-CAP-1 to LRU-ADMIT-1.
class LRU {
  constructor(capacity) {
    this.capacity = bound(capacity);
    this.recency = new Set(); // head: least recently accessed
  }
  isResident(h) {
    return this.recency.has(h);
  }
  access(h) {
    const q = this.recency;
    if (q.has(h)) {
      q.delete(h); // LRU-ACCESS-1: requeue at the tail
      q.add(h);
      return;
    }
    if (q.size >= this.capacity) q.delete(q.values().next().value); // LRU-EVICT-1
    q.add(h); // LRU-ADMIT-1
  }
  residentCount() {
    return this.recency.size;
  }
  snapshot() {
    return { small: [], main: [...this.recency].map((h) => [h, 0]), ghost: [] };
  }
}

// FIFO-CAP-1 to FIFO-ADMIT-1.
class FIFO {
  constructor(capacity) {
    this.capacity = bound(capacity);
    this.arrival = new Set(); // head: admitted first
  }
  isResident(h) {
    return this.arrival.has(h);
  }
  access(h) {
    const q = this.arrival;
    if (q.has(h)) return; // FIFO-ACCESS-1
    if (q.size >= this.capacity) q.delete(q.values().next().value); // FIFO-EVICT-1
    q.add(h); // FIFO-ADMIT-1
  }
  residentCount() {
    return this.arrival.size;
  }
  snapshot() {
    return { small: [], main: [...this.arrival].map((h) => [h, 0]), ghost: [] };
  }
}

// REPLAY-CONF-1 to REPLAY-CONF-3 (and the policy's own clauses), checked in the reference's
// order: policy, block_size, capacity, then S3FIFO's small_ratio, max_freq and S3-CONF-5.
// Missing S3FIFO knobs take the spec's defaults (0.1 and 3). Returns { cache, blockSize }.
function makeCache(config) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new ConfigError('REPLAY-CONF-3', 'config must be an object');
  }
  const policy = config.policy;
  if (!POLICIES.includes(policy)) {
    throw new ConfigError('REPLAY-CONF-3', `policy must be one of ${POLICIES.join(', ')}, not ${show(policy)}`);
  }
  const blockSize = checkCount(config.block_size, 1n, 'REPLAY-CONF-2', 'block_size');
  if (policy === 'lru') return { cache: new LRU(checkCount(config.capacity, 1n, 'REPLAY-CONF-1', 'capacity')), blockSize };
  if (policy === 'fifo') return { cache: new FIFO(checkCount(config.capacity, 1n, 'REPLAY-CONF-1', 'capacity')), blockSize };
  const smallRatio = config.small_ratio === undefined ? 0.1 : config.small_ratio;
  const maxFreq = config.max_freq === undefined ? 3n : config.max_freq;
  return { cache: new S3FIFO(s3fifoCaps(config.capacity, smallRatio, maxFreq)), blockSize };
}

// REPLAY-PREFIX-1 to REPLAY-PREFIX-3: the resident prefix length k, changing nothing.
function prefixHitBlocks(cache, hashIds) {
  let k = 0;
  for (const h of hashIds) {
    if (!cache.isResident(h)) break; // REPLAY-PREFIX-2: no skip-ahead
    k += 1;
  }
  return k;
}

// REPLAY-HIT-1: min(k * block_size, input_length), exact on BigInts.
function hitTokens(cache, hashIds, inputLength, blockSize) {
  const full = BigInt(prefixHitBlocks(cache, hashIds)) * BigInt(blockSize);
  const l = BigInt(inputLength);
  return full < l ? full : l;
}

// REPLAY-ACCESS-1: every block, hit or miss, in order.
function accessAll(cache, hashIds) {
  for (const h of hashIds) cache.access(h);
}

module.exports = {
  ConfigError, FIFO, INT64_MAX, LRU, POLICIES, S3FIFO,
  accessAll, asCount, hitTokens, makeCache, prefixHitBlocks, roundHalfEven, s3fifoCaps,
};
