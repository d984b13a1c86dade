#!/usr/bin/env node
'use strict';
// kvspec adapter protocol, version 1: JSON lines on stdin, one JSON reply line per request on
// stdout. The loop and the exact JSON are examples/kvspec-node/protocol.js; this file is the
// glue between it and the policies of kvcache.js. See README.md beside this file.

const { Refused, serve } = require('../kvspec-node/protocol.js');
const { POLICIES, ConfigError, accessAll, hitTokens, makeCache } = require('./kvcache.js');

let cache = null;
let blockSize = null;

serve({
  implementation: { name: 'kvspec-s3fifo-node', language: 'javascript', version: '0.1.0' },
  level: 'state',
  policies: POLICIES,
  configure(config) {
    cache = null; // any earlier cache is gone, accepted or not (PROTO-7)
    try {
      ({ cache, blockSize } = makeCache(config));
    } catch (e) {
      throw e instanceof ConfigError ? new Refused(e.message) : e;
    }
  },
  hitTokens: (hashIds, inputLength) => hitTokens(cache, hashIds, inputLength, blockSize),
  access: (hashIds) => accessAll(cache, hashIds),
  residentCount: () => cache.residentCount(),
  snapshot: () => cache.snapshot(),
});
