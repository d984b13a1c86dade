#!/usr/bin/env node
'use strict';
// kvspec adapter protocol, version 1: JSON lines on stdin, one JSON reply line per request on
// stdout (logs, if any, go to stderr). See README.md beside this file.
//
// JSON.parse turns every number into a double, which loses hash ids beyond 2**53, so requests are
// read by the small parser below: an integer literal (no fraction, no exponent) becomes a BigInt,
// any other number a double. Hash ids are then keyed by their canonical decimal string, exact for
// the whole signed 64-bit range, and written back as the same digits.

const readline = require('node:readline');
const { INT64_MAX, INT64_MIN, POLICIES, ConfigError, accessAll, asCount, hitTokens, makeCache } = require('./kvcache.js');

const IMPLEMENTATION = { name: 'kvspec-s3fifo-node', language: 'javascript', version: '0.1.0' };

class ProtocolError extends Error {}

// ---- JSON in: integers as BigInt ---------------------------------------------------------

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const LITERALS = [['true', true], ['false', false], ['null', null],
  // Python's json module writes these for non-finite floats; read them so they can be refused
  // by the clause that refuses them (S3-CONF-1) rather than as bad JSON.
  ['NaN', NaN], ['Infinity', Infinity], ['-Infinity', -Infinity]];

function parseJson(text) {
  let i = 0;
  const fail = (what) => {
    throw new ProtocolError(`bad JSON at character ${i}: ${what}`);
  };
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i += 1;
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i += 1;
      const obj = Object.create(null);
      ws();
      if (text[i] === '}') { i += 1; return obj; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const key = string();
        ws();
        if (text[i] !== ':') fail("expected ':'");
        i += 1;
        obj[key] = value();
        ws();
        if (text[i] === ',') { i += 1; continue; }
        if (text[i] === '}') { i += 1; return obj; }
        fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      i += 1;
      const arr = [];
      ws();
      if (text[i] === ']') { i += 1; return arr; }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i] === ',') { i += 1; continue; }
        if (text[i] === ']') { i += 1; return arr; }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of LITERALS) {
      if (text.startsWith(word, i)) { i += word.length; return v; }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) fail('expected a value');
    i = NUMBER.lastIndex;
    return m[1] === undefined && m[2] === undefined ? BigInt(m[0]) : Number(m[0]);
  };
  const string = () => {
    const start = i;
    i += 1;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    if (i >= text.length) fail('unterminated string');
    i += 1;
    try {
      return JSON.parse(text.slice(start, i));
    } catch (e) {
      return fail('bad string');
    }
  };
  const v = value();
  ws();
  if (i !== text.length) fail('trailing characters');
  return v;
}

// ---- JSON out: BigInts as digits -----------------------------------------------------------

function toJson(v) {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).map((k) => `${JSON.stringify(k)}:${toJson(v[k])}`).join(',')}}`;
  }
  if (typeof v === 'number' && !Number.isFinite(v)) return 'null';
  return JSON.stringify(v);
}

// ---- requests ------------------------------------------------------------------------------

// Hash ids (REPLAY-TRACE-2): a non-empty array of integers in [-2**63, 2**63 - 1], as the
// canonical decimal strings the queues are keyed by (-0 is 0).
function hashKeys(value) {
  if (!Array.isArray(value) || value.length === 0) throw new ProtocolError('hash_ids must be a non-empty array of integers');
  return value.map((h, j) => {
    if (typeof h !== 'bigint' || h < INT64_MIN || h > INT64_MAX) {
      throw new ProtocolError(`hash_ids[${j}] must be an integer in [-2**63, 2**63 - 1], not ${toJson(h)}`);
    }
    return h.toString();
  });
}

// A snapshot is written by hand: hash keys are already canonical digits.
function snapshotJson(seq, cache) {
  const s = cache.snapshot();
  const pairs = (q) => q.map(([h, f]) => `[${h},${f}]`).join(',');
  return `{"seq":${toJson(seq)},"small":[${pairs(s.small)}],"main":[${pairs(s.main)}],"ghost":[${s.ghost.join(',')}]}`;
}

const state = { cache: null, blockSize: null };

function needCache() {
  if (state.cache === null) throw new ProtocolError('no cache: send a configure that is accepted first');
  return state.cache;
}

// One request -> one reply line (a string), or null for stop.
function handle(req) {
  const seq = req.seq === undefined ? null : req.seq;
  const reply = (fields) => toJson({ seq, ...fields });
  switch (req.cmd) {
    case 'start':
      if (req.protocol !== 1n) throw new ProtocolError(`protocol ${toJson(req.protocol)} is not supported; this speaks protocol 1`);
      return reply({ protocol: 1n, implementation: IMPLEMENTATION, level: 'state', policies: POLICIES });
    case 'configure':
      state.cache = null; // any earlier cache is gone, accepted or not
      state.blockSize = null;
      try {
        const built = makeCache(req.config);
        state.cache = built.cache;
        state.blockSize = built.blockSize;
      } catch (e) {
        if (e instanceof ConfigError) return reply({ ok: false, refused: e.message });
        throw e;
      }
      return reply({ ok: true });
    case 'hit_tokens': {
      const cache = needCache();
      const keys = hashKeys(req.hash_ids);
      const inputLength = asCount(req.input_length, 1n);
      if (inputLength === null) throw new ProtocolError(`input_length must be an integer in [1, 2**63 - 1], not ${toJson(req.input_length)}`);
      return reply({ hit_tokens: hitTokens(cache, keys, inputLength, state.blockSize) });
    }
    case 'access': {
      const cache = needCache();
      accessAll(cache, hashKeys(req.hash_ids)); // all ids checked before the first access
      return reply({ ok: true });
    }
    case 'resident_count':
      return reply({ resident_count: needCache().residentCount() });
    case 'snapshot':
      return snapshotJson(seq, needCache());
    case 'stop':
      return null;
    default:
      throw new ProtocolError(`unknown cmd ${toJson(req.cmd)}`);
  }
}

function main() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  let stopped = false;
  const write = (line) => process.stdout.write(`${line}\n`);
  rl.on('line', (line) => {
    if (stopped || line.trim() === '') return;
    let req;
    try {
      req = parseJson(line);
      if (req === null || typeof req !== 'object' || Array.isArray(req)) throw new ProtocolError('a request must be a JSON object');
    } catch (e) {
      write(toJson({ seq: null, error: e instanceof ProtocolError ? e.message : String(e) }));
      return;
    }
    let out;
    try {
      out = handle(req);
    } catch (e) {
      out = toJson({ seq: req.seq === undefined ? null : req.seq, error: e instanceof ProtocolError ? e.message : `internal error: ${e && e.stack ? e.stack : e}` });
    }
    if (out === null) {
      stopped = true;
      rl.close();
      process.stdout.write('', () => process.exit(0)); // after every earlier reply is out
      return;
    }
    write(out);
  });
  rl.on('close', () => {
    if (!stopped) process.stdout.write('', () => process.exit(0)); // EOF without stop: exit too
  });
}

if (require.main === module) main();

module.exports = { parseJson, toJson, handle };
