#!/usr/bin/env node
'use strict';
// kvspec adapter for the npm package lru-cache's LRUCache (11.5.3, BlueOak-1.0.0), through the
// adapter kit in Node (examples/kvspec-node/kit.js), served by examples/kvspec-node/protocol.js:
//
//     (cd docs/certifications/lru-cache && npm ci)
//     kvspec certify --adapter 'cmd:node docs/certifications/lru-cache/adapter.js' --max-capacity 1048576
//
// The kit's defaults are lru-cache's API: has() moves nothing (src/index.ts:2407-2436), get() is
// LRU's use (:3065), set() of a new key evicts the head when full (:2228); rkeys() is the order,
// least recent first (:1905). Every capacity goes to lru-cache as given: it throws for max 0
// (:1574-1577) and below (:1465-1467), from 2^32 (:1501) and above 2^53 - 1 (:1471), and builds
// arrays of max entries in its constructor (:1501-1513), which takes seconds from 2^24 on: hence
// --max-capacity. README.md beside this file says more.

const { LRUCache } = require('lru-cache');
const { blockCacheAdapter } = require('../../../examples/kvspec-node/kit.js');
const { serve } = require('../../../examples/kvspec-node/protocol.js');
const { version } = require('./node_modules/lru-cache/package.json'); // by its path: the package exports no package.json

serve(blockCacheAdapter({
  implementation: { name: 'lru-cache (npm) LRUCache', language: 'javascript', version },
  policies: ['lru'],
  checksCapacity: false,
  refusals: [Error], // its constructor's TypeError, RangeError and Error alike
  makeCache: (policy, capacity) => new LRUCache({ max: Number(capacity) }),
  queue: (cache) => cache.rkeys(),
}));
