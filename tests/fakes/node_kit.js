'use strict';
// The Node adapter kit (examples/kvspec-node/kit.js) over a "library" of twenty lines, an LRU kept
// in a JavaScript Map (a key set again goes to the end; the first key is the least recent), for
// tests/test_node_module.py. The argument picks what the adapter gets wrong, if anything:
//   throws: its constructor throws an error the adapter's refusals do not list (PROTO-14);
//   results: no queue, so the results level.

const path = require('node:path');

const examples = path.join(__dirname, '..', '..', 'examples', 'kvspec-node');
const { blockCacheAdapter } = require(path.join(examples, 'kit.js'));
const { serve } = require(path.join(examples, 'protocol.js'));

class MapLru {
  constructor(max) {
    if (max > 2n ** 32n) throw new RangeError(`cannot allocate ${max} entries`);
    this.max = max;
    this.map = new Map();
  }
  has(key) { return this.map.has(key); }
  get(key) {
    const value = this.map.get(key);
    if (value !== undefined) this.set(key, value);
    return value;
  }
  set(key, value) {
    this.map.delete(key);
    if (BigInt(this.map.size) >= this.max) this.map.delete(this.map.keys().next().value);
    this.map.set(key, value);
  }
  get size() { return this.map.size; }
}

const mistake = process.argv[2];
serve(blockCacheAdapter({
  implementation: { name: 'map-lru', language: 'javascript', version: mistake || 'as meant' },
  policies: ['lru'],
  makeCache: (policy, capacity) => {
    if (mistake === 'throws') throw new TypeError('MapLru is not a constructor');
    return new MapLru(capacity);
  },
  queue: mistake === 'results' ? undefined : (cache) => cache.map.keys(),
}));
