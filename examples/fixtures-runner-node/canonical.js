'use strict';
// The canonical form an id hashes (spec/fixtures.md FIX-14): RFC 8785 (JCS) with its two
// departures, and the id it gives a case (FIX-3).
const crypto = require('node:crypto');

// RFC 8785 section 3.2.2.2: these five as two-character escapes, every other control as \u00xx.
const SHORT_ESCAPES = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r', '"': '\\"', '\\': '\\\\' };

function canonicalString(s) {
  let out = '"';
  for (const c of s) {
    if (c in SHORT_ESCAPES) out += SHORT_ESCAPES[c];
    else if (c < ' ') out += `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    else out += c;
  }
  return `${out}"`;
}

function canonical(value) {
  // FIX-14's first departure: an integer is written exactly (a BigInt's digits; -0 is 0n, "0").
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('the corpus holds no NaN or infinity (FIX-14)');
    // FIX-14's second departure: -0.0 keeps its sign. Otherwise ECMAScript's Number::toString,
    // which String() is (RFC 8785 section 3.2.2.3).
    return Object.is(value, -0) ? '-0' : String(value);
  }
  if (typeof value === 'string') return canonicalString(value);
  if (value === null || value === true || value === false) return String(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  // RFC 8785 section 3.2.3: members sorted by their names' UTF-16 code units, which is how
  // JavaScript compares strings.
  const names = Object.keys(value).sort();
  return `{${names.map((n) => `${canonicalString(n)}:${canonical(value[n])}`).join(',')}}`;
}

const ANNOTATIONS = new Set(['id', 'title', 'provenance', 'clauses']);

// FIX-3: the first 8 hex digits of the sha256 of the canonical form of the case without its
// annotations; a refused configuration hashes as true, a trace case's refused clause whole.
function digest(kase) {
  const hashed = Object.create(null);
  for (const [name, v] of Object.entries(kase)) {
    if (ANNOTATIONS.has(name)) continue;
    hashed[name] = name === 'refused' && v !== null && kase.kind !== 'trace' ? true : v;
  }
  return crypto.createHash('sha256').update(canonical(hashed), 'utf8').digest('hex').slice(0, 8);
}

module.exports = { canonical, digest };
