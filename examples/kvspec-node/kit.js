'use strict';
// The adapter kit in Node.js: an LRU or FIFO cache library as an implementation that
// protocol.js serves, in about twenty lines, as kvspec's Python kit (kvspec.adapters.kit,
// docs/wrap-a-library.md) does it in Python. blockCacheAdapter takes the library's identity, its
// policies and the hooks below, and does the rest:
//
// - configure (PROTO-7, PROTO-8): refuses, naming the clause, a policy not listed (PROTO-6), a
//   block_size REPLAY-CONF-2 refuses (the replay's knob: the library never sees it) and, unless
//   checksCapacity is false, a capacity REPLAY-CONF-1 refuses; ignores S3FIFO's knobs
//   (REPLAY-CONF-3); an exception of `refusals` that makeCache throws is a refusal with the
//   library's message, any other a failure of the adapter (PROTO-14);
// - hitTokens (PROTO-9): the prefix scan of REPLAY-PREFIX-1 and REPLAY-PREFIX-2 by isResident
//   alone, which MUST change nothing (REPLAY-PREFIX-3), then REPLAY-HIT-1's clamp;
// - access (PROTO-10): accessBlock for every block, in order (REPLAY-ACCESS-1);
// - residentCount (PROTO-11) and, given queue, snapshot (PROTO-12): the library's one queue,
//   head first, in `main` with every freq 0, at the state level; without queue, the results level.
//
// The hooks default to the Map-like API most libraries share (has, get, set, size). The cache
// stores `true` for every block: never undefined, which some libraries take as "delete".

const { INT64_MAX, Refused, toJson } = require('./protocol.js');

const KIT_POLICIES = ['lru', 'fifo']; // the policies whose whole state is one queue (PROTO-12)
const STORED = true;

function count(value, clause, field) {
  if (typeof value !== 'bigint' || value < 1n || value > INT64_MAX) {
    throw new Refused(`${clause}: ${field} must be an integer in [1, 2**63 - 1], not ${toJson(value)}`);
  }
  return value;
}

function blockCacheAdapter({
  implementation, // { name, language, version }
  policies = KIT_POLICIES,
  makeCache, // (policy, capacity as a BigInt) => an empty cache of the library's
  queue, // (cache) => the blocks, next to be evicted first; omit it for the results level
  isResident = (cache, block) => cache.has(block),
  accessBlock = (cache, block) => { // a cache-aside read, which is a hit's use, then a write on a miss
    if (cache.get(block) === undefined) cache.set(block, STORED);
  },
  residentCount = (cache) => cache.size,
  refusals = [RangeError], // the library's "no" to a configuration
  checksCapacity = true, // false: every capacity goes to the library, whose reading is certified
}) {
  const others = policies.filter((policy) => !KIT_POLICIES.includes(policy));
  if (others.length > 0) {
    throw new TypeError(`the adapter kit serves ${KIT_POLICIES.join(' and ')}, not ${others.join(', ')}: an S3FIFO's queues and freqs are its library's internals`);
  }
  let cache = null;
  let blockSize = 1n;
  return {
    implementation,
    policies,
    level: queue === undefined ? 'results' : 'state',
    configure(config) {
      cache = null;
      if (!policies.includes(config.policy)) throw new Refused(`PROTO-6: ${implementation.name} implements ${policies.join(', ')}, not ${toJson(config.policy)}`);
      const size = count(config.block_size, 'REPLAY-CONF-2', 'block_size');
      if (checksCapacity) count(config.capacity, 'REPLAY-CONF-1', 'capacity');
      try {
        cache = makeCache(config.policy, config.capacity);
      } catch (e) {
        if (refusals.some((kind) => e instanceof kind)) throw new Refused(`the library refused capacity ${toJson(config.capacity)}: ${e.name}: ${e.message}`);
        throw e;
      }
      blockSize = size;
    },
    hitTokens(hashIds, inputLength) {
      let blocks = 0n;
      for (const block of hashIds) {
        if (!isResident(cache, block)) break; // REPLAY-PREFIX-2: no skipping ahead
        blocks += 1n;
      }
      const tokens = blocks * blockSize;
      return tokens < inputLength ? tokens : inputLength; // REPLAY-HIT-1
    },
    access(hashIds) {
      for (const block of hashIds) accessBlock(cache, block);
    },
    residentCount() {
      return residentCount(cache);
    },
    snapshot() {
      return { main: Array.from(queue(cache), (block) => [block, 0]) };
    },
  };
}

module.exports = { KIT_POLICIES, blockCacheAdapter };
