'use strict';
// JSON as RFC 8259 section 2 to 7 writes its grammar, with every integer kept exact.
// A number without a fraction or an exponent is a BigInt (spec/fixtures.md FIX-14: ids, keys and
// capacities run from -2^63 to 2^64 - 1, past what a double holds), any other number a double.
// Objects are null-prototype objects, so that a member named "__proto__" is only a member.

class JsonError extends Error {}

// Each object's members in the order written, duplicates included (REPLAY-TRACE-1, -10), when
// the parse keeps duplicates.
const MEMBERS = new WeakMap();

const ESCAPES = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

// parse(text, {duplicates}): duplicates 'refuse' (the corpus: RFC 8785 reads I-JSON, RFC 7493,
// which has none) or 'keep' (a trace line: the last value in the object, all in MEMBERS).
// A string holding a lone surrogate is refused unless loneSurrogates is 'keep' (a reply).
// A value more than MAX_DEPTH levels below the top one is refused (replay.md REPLAY-TRACE-11;
// fixtures.md reads the corpus with the same parser).
const MAX_DEPTH = 200;

function parse(text, options = {}) {
  const state = { text, pos: 0, options };
  skipWs(state);
  const value = parseValue(state, 0);
  skipWs(state);
  if (state.pos !== text.length) fail(state, 'text after the JSON value');
  return { value };
}

function fail(state, what) {
  throw new JsonError(`${what} at character ${state.pos + 1}`);
}

const WS_RUN = /[ \t\n\r]*/y;

function skipWs(state) {
  WS_RUN.lastIndex = state.pos;
  WS_RUN.exec(state.text);
  state.pos = WS_RUN.lastIndex;
}

function parseValue(state, depth) {
  if (depth > MAX_DEPTH) fail(state, `a value nested deeper than ${MAX_DEPTH} levels`);
  const c = state.text[state.pos];
  if (c === '{') return parseObject(state, depth);
  if (c === '[') return parseArray(state, depth);
  if (c === '"') return parseString(state).value;
  for (const [word, value] of [['true', true], ['false', false], ['null', null]]) {
    if (state.text.startsWith(word, state.pos)) {
      state.pos += word.length;
      return value;
    }
  }
  NUMBER.lastIndex = state.pos;
  const m = NUMBER.exec(state.text);
  if (!m) fail(state, 'no JSON value');
  state.pos += m[0].length;
  if (m[1] === undefined && m[2] === undefined) return BigInt(m[0]);
  return Number(m[0]);
}

function parseObject(state, depth) {
  state.pos++;
  const obj = Object.create(null);
  const members = [];
  skipWs(state);
  const keep = state.options.duplicates === 'keep';
  if (state.text[state.pos] === '}') {
    state.pos++;
    if (keep) MEMBERS.set(obj, members);
    return obj;
  }
  for (;;) {
    skipWs(state);
    if (state.text[state.pos] !== '"') fail(state, 'no member name');
    const name = parseString(state);
    skipWs(state);
    if (state.text[state.pos] !== ':') fail(state, 'no colon');
    state.pos++;
    skipWs(state);
    const value = parseValue(state, depth + 1);
    if (!keep && Object.prototype.hasOwnProperty.call(obj, name.value)) fail(state, `member ${JSON.stringify(name.value)} given twice`);
    obj[name.value] = value;
    if (keep) members.push([name.value, value]);
    skipWs(state);
    const c = state.text[state.pos++];
    if (c === '}') break;
    if (c !== ',') fail(state, 'no comma or closing brace');
  }
  if (keep) MEMBERS.set(obj, members);
  return obj;
}

function parseArray(state, depth) {
  state.pos++;
  const out = [];
  skipWs(state);
  if (state.text[state.pos] === ']') {
    state.pos++;
    return out;
  }
  for (;;) {
    skipWs(state);
    out.push(parseValue(state, depth + 1));
    skipWs(state);
    const c = state.text[state.pos++];
    if (c === ']') return out;
    if (c !== ',') fail(state, 'no comma or closing bracket');
  }
}

// RFC 8259 section 7; the text is already decoded, so every code point but the controls passes.
// A run of characters that are neither a quote, a backslash nor a control character.
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;

function parseString(state) {
  const t = state.text;
  let pos = state.pos + 1;
  let out = '';
  for (;;) {
    PLAIN_RUN.lastIndex = pos;
    PLAIN_RUN.exec(t);
    out += t.slice(pos, PLAIN_RUN.lastIndex);
    pos = PLAIN_RUN.lastIndex;
    if (pos >= t.length) fail(state, 'unterminated string');
    const c = t[pos];
    if (c === '"') break;
    if (c !== '\\') fail(state, 'control character in a string');
    const e = t[pos + 1];
    if (e === 'u') {
      const hex = t.slice(pos + 2, pos + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail(state, 'bad \\u escape');
      out += String.fromCharCode(parseInt(hex, 16));
      pos += 6;
    } else if (e in ESCAPES) {
      out += ESCAPES[e];
      pos += 2;
    } else {
      fail(state, 'bad escape');
    }
  }
  state.pos = pos + 1;
  const lone = !out.isWellFormed();
  if (lone && state.options.loneSurrogates !== 'keep') fail(state, 'a string with a lone surrogate');
  return { value: out, lone };
}

// Writes a request for the implementation: integers (BigInt) as their digits, doubles as the
// shortest text that reads back (PROTO-3, PROTO-19), always with a fraction or an exponent so
// that it stays a double ("1.0", "-0.0"), as kvspec writes them.
function stringify(value) {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`no JSON number for ${value}`);
    const s = Object.is(value, -0) ? '-0' : String(value);
    return /^-?[0-9]+$/.test(s) ? `${s}.0` : s;
  }
  if (Array.isArray(value)) return `[${value.map(stringify).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).map((k) => `${JSON.stringify(k)}: ${stringify(value[k])}`).join(', ')}}`;
  }
  return JSON.stringify(value);
}

module.exports = { parse, stringify, JsonError, MEMBERS };
