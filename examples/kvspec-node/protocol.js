'use strict';
// kvspec's adapter protocol, version 1 (spec/adapter-protocol.md), for an implementation in
// Node.js, with no dependency: the loop of requests and replies (PROTO-1 to PROTO-15) and JSON
// whose integers are exact (PROTO-3). README.md beside this file shows how to use it.
//
// JSON.parse reads every number as a double, which merges integers beyond 2^53 (2^53 and
// 2^53 + 1 are one double), and Node 20's JSON.parse cannot hand a reviver a number's text: the
// reviver's context.source came with V8 11.4 (Node 21); Node 20's V8 11.3 has it only behind
// --harmony-json-parse-with-source. So a request is read by the parser below, which keeps each
// integer literal (no fraction, no exponent) as a BigInt, exact at any size, and any other number
// as a double; toJson writes a BigInt as its digits.

const readline = require('node:readline');

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

// A request kvspec should not have sent: its reply is an error (PROTO-14), and the loop goes on.
class ProtocolError extends Error {}

// Thrown by an implementation's configure to refuse the configuration (PROTO-8), with why.
class Refused extends Error {}

// ---- JSON in: integers as BigInt ------------------------------------------------------------

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const LITERALS = [['true', true], ['false', false], ['null', null],
  // Python's json module writes these for non-finite floats; they are read so that the clause
  // that refuses them (S3-CONF-1) refuses them, rather than the JSON.
  ['NaN', NaN], ['Infinity', Infinity], ['-Infinity', -Infinity]];
const WHITESPACE = ' \t\n\r';

function parseJson(text) {
  let i = 0;
  const fail = (what) => {
    throw new ProtocolError(`PROTO-1: bad JSON at character ${i}: ${what}`);
  };
  const skipWhitespace = () => {
    while (i < text.length && WHITESPACE.includes(text[i])) i += 1;
  };
  const string = () => { // the text from quote to quote, checked and unescaped by JSON.parse
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
  const items = (close, item) => { // the items of an array or object, up to `close`
    i += 1;
    skipWhitespace();
    if (text[i] === close) { i += 1; return; }
    for (;;) {
      item();
      skipWhitespace();
      if (text[i] === ',') { i += 1; continue; }
      if (text[i] === close) { i += 1; return; }
      fail(`expected ',' or '${close}'`);
    }
  };
  const value = () => {
    skipWhitespace();
    if (text[i] === '{') {
      const object = Object.create(null); // a key "__proto__" is a key like any other
      items('}', () => {
        skipWhitespace();
        if (text[i] !== '"') fail('expected a key');
        const key = string();
        skipWhitespace();
        if (text[i] !== ':') fail("expected ':'");
        i += 1;
        object[key] = value();
      });
      return object;
    }
    if (text[i] === '[') {
      const array = [];
      items(']', () => array.push(value()));
      return array;
    }
    if (text[i] === '"') return string();
    for (const [word, literal] of LITERALS) {
      if (text.startsWith(word, i)) { i += word.length; return literal; }
    }
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text);
    if (number === null) fail('expected a value');
    i = NUMBER.lastIndex;
    return number[1] === undefined && number[2] === undefined ? BigInt(number[0]) : Number(number[0]);
  };
  const parsed = value();
  skipWhitespace();
  if (i !== text.length) fail('trailing characters');
  return parsed;
}

// ---- JSON out: BigInts as digits --------------------------------------------------------------

function toJson(v) {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).map((k) => `${JSON.stringify(k)}:${toJson(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

// ---- the fields of a request (PROTO-3, PROTO-16) ----------------------------------------------

// An integer in [low, high], as a BigInt; a double (4.0), a string or true is not one.
function integerIn(value, low, high, field) {
  if (typeof value !== 'bigint' || value < low || value > high) {
    throw new ProtocolError(`PROTO-3: ${field} must be an integer in [${bound(low)}, ${bound(high)}], not ${value === undefined ? 'missing' : toJson(value)}`);
  }
  return value;
}

function bound(v) { // -2**63 and 2**63 - 1 by name, as the spec writes them
  return v === INT64_MIN ? '-2**63' : v === INT64_MAX ? '2**63 - 1' : v.toString();
}

// PROTO-9, PROTO-10: at least one hash id, each a signed 64-bit integer (PROTO-3).
function hashIds(value) {
  if (!Array.isArray(value) || value.length === 0) throw new ProtocolError('PROTO-9: hash_ids must be a non-empty array of integers');
  return value.map((h, j) => integerIn(h, INT64_MIN, INT64_MAX, `hash_ids[${j}]`));
}

function inputLength(value) {
  return integerIn(value, 1n, INT64_MAX, 'input_length');
}

// ---- the loop ---------------------------------------------------------------------------------

// The replies of one process to `implementation`, an object with
//   implementation: { name, language, version }, level: 'results' | 'state', policies: [...],
//   configure(config): an empty cache for the config (its integers BigInts), or throw Refused;
//   hitTokens(hashIds, inputLength), access(hashIds, inputLength), residentCount(), and at the
//   state level snapshot(): { small, main, ghost }, queues head first (PROTO-12).
// Hash ids arrive as BigInts, which are equal as Map keys when their values are.
class Session {
  constructor(implementation) {
    this.implementation = implementation;
    this.configured = false;
  }

  // The reply line to one request line, or null for stop (PROTO-13: no reply).
  answer(line) {
    let request;
    try {
      request = parseJson(line);
      if (request === null || typeof request !== 'object' || Array.isArray(request)) throw new ProtocolError('PROTO-1: a request is a JSON object');
    } catch (e) {
      return toJson({ seq: null, error: e instanceof ProtocolError ? e.message : String(e) });
    }
    const seq = request.seq === undefined ? null : request.seq; // PROTO-2: echoed as it came
    try {
      const fields = this.reply(request);
      return fields === null ? null : toJson({ seq, ...fields });
    } catch (e) { // PROTO-14: whatever fails is an error reply, never a crash
      return toJson({ seq, error: e instanceof ProtocolError ? e.message : `internal error: ${e && e.stack ? e.stack : e}` });
    }
  }

  reply(request) {
    const impl = this.implementation;
    switch (request.cmd) {
      case 'start': // PROTO-5, PROTO-6
        if (request.protocol !== 1n) throw new ProtocolError(`PROTO-5: protocol ${toJson(request.protocol)} is not supported; this speaks protocol 1`);
        return { protocol: 1n, implementation: impl.implementation, level: impl.level, policies: impl.policies };
      case 'configure': // PROTO-7, PROTO-8: the earlier cache is gone, even when this one is refused
        this.configured = false;
        try {
          impl.configure(request.config);
        } catch (e) {
          if (e instanceof Refused) return { ok: false, refused: e.message };
          throw e;
        }
        this.configured = true;
        return { ok: true };
      case 'hit_tokens': // PROTO-9
        this.needCache();
        return { hit_tokens: impl.hitTokens(hashIds(request.hash_ids), inputLength(request.input_length)) };
      case 'access': { // PROTO-10: every id checked before the first is accessed
        this.needCache();
        const ids = hashIds(request.hash_ids);
        impl.access(ids, request.input_length === undefined ? undefined : inputLength(request.input_length));
        return { ok: true };
      }
      case 'resident_count': // PROTO-11
        this.needCache();
        return { resident_count: impl.residentCount() };
      case 'snapshot': { // PROTO-12
        this.needCache();
        if (impl.level !== 'state') throw new ProtocolError('PROTO-6: snapshot is asked only at the state level');
        const { small = [], main = [], ghost = [] } = impl.snapshot();
        return { small, main, ghost };
      }
      case 'stop': // PROTO-13
        return null;
      default:
        throw new ProtocolError(`PROTO-16: unknown cmd ${toJson(request.cmd)}`);
    }
  }

  needCache() {
    if (!this.configured) throw new ProtocolError('PROTO-7: no cache is configured (configure first, or the last configure was refused)');
  }
}

// Serves `implementation` (see Session) on stdin and stdout, one JSON request a line and one
// reply a line (PROTO-1); exits with status 0 after stop or at the end of stdin, once every
// earlier reply is written (PROTO-13).
function serve(implementation) {
  const session = new Session(implementation);
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  let stopped = false;
  const exit = () => process.stdout.write('', () => process.exit(0));
  lines.on('line', (line) => {
    if (stopped || line.trim() === '') return;
    const reply = session.answer(line);
    if (reply !== null) {
      process.stdout.write(`${reply}\n`);
      return;
    }
    stopped = true;
    lines.close();
    exit();
  });
  lines.on('close', () => {
    if (!stopped) exit();
  });
}

module.exports = { INT64_MAX, Refused, parseJson, serve, toJson };
