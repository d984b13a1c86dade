'use strict';
// The corpus and the checks that refuse it whole before any case runs (spec/fixtures.md FIX-15).
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { parse } = require('./json.js');
const { validate } = require('./schema.js');
const { digest } = require('./canonical.js');
const { REPLY_SCHEMA } = require('./protocol.js');

class CorpusError extends Error {
  constructor(file, clause, what) {
    super(`${file}: ${clause}: ${what}`);
  }
}

const FORMAT = 'kvspec-fixture/1';
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
// The benefit operations of PROTO-21 to PROTO-27 (benefit_state, PROTO-28, is no operation of a case).
const BENEFIT_OPERATIONS = new Set(['consider_admission', 'record_hit', 'record_miss', 'observe_pressure', 'choose_victims',
  'select_probation_cap_victims', 'remove']);

function readBytes(file, shown, clause = 'FIX-2') {
  try {
    return fs.readFileSync(file);
  } catch (e) {
    throw new CorpusError(shown, clause, `cannot be read (${e.code || e.message})`);
  }
}

function parseBytes(bytes, shown, clause) {
  try {
    return parse(UTF8.decode(bytes)).value;
  } catch (e) {
    throw new CorpusError(shown, clause, `not JSON: ${e.message}`);
  }
}

// A schema error names FIX-17 when it is a null where a field may only be absent.
const schemaClause = (error, otherwise) => (error.includes('(FIX-17)') ? 'FIX-17' : otherwise);

function checkManifest(manifest, schema) {
  const shown = 'manifest.json';
  if (manifest === null || typeof manifest !== 'object' || manifest.format !== FORMAT) {
    throw new CorpusError(shown, 'FIX-1', `format is not ${FORMAT}`);
  }
  if (Array.isArray(manifest.cases) && manifest.cases.length === 0) throw new CorpusError(shown, 'FIX-2', 'it lists no case');
  const error = validate(schema('fixture-manifest.schema.json'), manifest);
  // A path of another shape is FIX-1's, whatever else of FIX-2's the schema checks.
  const clause = /^cases\[[0-9]+\]\.path:/.test(error || '') ? 'FIX-1' : 'FIX-2';
  if (error) throw new CorpusError(shown, schemaClause(error, clause), `not of its schema: ${error}`);
  manifest.cases.forEach((entry, i) => {
    if (entry.path !== `${entry.kind}/${entry.id}.json`) {
      throw new CorpusError(shown, 'FIX-1', `cases[${i}].path ${JSON.stringify(entry.path)} is not ${entry.kind}/${entry.id}.json`);
    }
    const before = i > 0 ? manifest.cases[i - 1].path : null;
    if (before !== null && before === entry.path) throw new CorpusError(shown, 'FIX-2', `${entry.path} is listed twice`);
    if (before !== null && before > entry.path) throw new CorpusError(shown, 'FIX-2', `cases are not sorted by path: ${entry.path} after ${before}`);
  });
}

// FIX-8: a case's file is at most 2^25 bytes, reckoned before a byte is written.
const MAX_TRACE_FILE = 2n ** 25n;

function traceSize(file) {
  if (file.lines) return file.lines.reduce((n, l) => n + BigInt(Buffer.byteLength(l, 'utf8') + 1), 0n);
  return file.parts.reduce((n, p) => n + BigInt(Buffer.from(p.base64, 'base64').length) * p.repeat, 0n);
}

// What the kind's clause says and the schema cannot (FIX-6 to FIX-10, FIX-18).
function kindFault(kase, schema) {
  const state = kase.level === 'state';
  if (kase.kind === 'replay') {
    const i = kase.requests.findIndex((r) => ('snapshot' in r.expect) !== state);
    if (i >= 0) return ['FIX-6', `requests[${i}] ${state ? 'has no' : 'has a'} snapshot at the ${kase.level} level`];
    if ((kase.refused === null) !== (kase.totals !== null)) return ['FIX-6', 'refused and totals are both null or both set'];
  }
  if (kase.kind === 'benefit') {
    const i = kase.operations.findIndex((o) => ('state' in o) !== state);
    if (i >= 0) return ['FIX-7', `operations[${i}] ${state ? 'has no' : 'has a'} state at the ${kase.level} level`];
    for (const [j, op] of kase.operations.entries()) {
      const reply = BENEFIT_OPERATIONS.has(op.request.cmd) && REPLY_SCHEMA[op.request.cmd];
      if (!reply) return ['FIX-7', `operations[${j}].request.cmd is not an operation of PROTO-21 to PROTO-27`];
      const seq = { seq: 0n };
      const error = validate(schema(`adapter/${op.request.cmd}-request.schema.json`), { ...op.request, ...seq })
        || validate(schema(`adapter/${reply}.schema.json`), { ...op.expect, ...seq })
        || ('state' in op && validate(schema('adapter/benefit_state-reply.schema.json'), { ...op.state, ...seq }));
      if (error) return ['FIX-7', `operations[${j}], given a seq, is not of its protocol schema: ${error}`];
    }
  }
  if (kase.kind === 'lifecycle') {
    const i = kase.operations.findIndex((o) => ('state' in o) !== state);
    if (i >= 0) return ['FIX-18', `operations[${i}] ${state ? 'has no' : 'has a'} state at the ${kase.level} level`];
  }
  if (kase.kind === 'replay' && kase.refused !== null && kase.requests.length > 0) return ['FIX-6', 'a refused case with requests'];
  if (kase.kind === 'benefit' && kase.refused !== null && kase.operations.length > 0) return ['FIX-7', 'a refused case with operations'];
  if (kase.kind === 'trace') {
    const size = traceSize(kase.file);
    if (size > MAX_TRACE_FILE) return ['FIX-8', `its file is ${size} bytes, past the bound of ${MAX_TRACE_FILE}`];
    if ((kase.refused === null) !== (kase.refused_at === null)) return ['FIX-8', 'refused and refused_at disagree'];
    if (kase.refused !== null && (kase.requests.length > 0 || kase.totals !== null)) return ['FIX-8', 'a refused trace with requests or totals'];
    if (kase.refused === null && kase.totals === null) return ['FIX-8', 'an accepted trace without totals'];
  }
  return null;
}

function checkCase(entry, bytes, schema) {
  const shown = entry.path;
  const sha = crypto.createHash('sha256').update(bytes).digest('hex');
  if (sha !== entry.sha256) throw new CorpusError(shown, 'FIX-2', `sha256 ${sha} is not the manifest's ${entry.sha256}`);
  const kase = parseBytes(bytes, shown, 'FIX-1');
  if (kase === null || typeof kase !== 'object' || kase.format !== FORMAT) throw new CorpusError(shown, 'FIX-1', `format is not ${FORMAT}`);
  const error = validate(schema('fixture-case.schema.json'), kase);
  if (error) throw new CorpusError(shown, schemaClause(error, 'FIX-1'), `not of the case schema: ${error}`);
  const fault = kindFault(kase, schema);
  if (fault) throw new CorpusError(shown, fault[0], fault[1]);
  for (const field of ['id', 'kind', 'title', 'clauses']) {
    if (JSON.stringify(kase[field]) !== JSON.stringify(entry[field])) throw new CorpusError(shown, 'FIX-2', `its ${field} is not the manifest's`);
  }
  const head = kase.kind === 'replay' ? `replay-${kase.config.policy}-` : `${kase.kind}-`;
  const own = `-${digest(kase)}`;
  if (!kase.id.startsWith(head) || !kase.id.endsWith(own) || kase.id.length <= head.length + own.length) {
    throw new CorpusError(shown, 'FIX-3', `its id is not its own: ${kase.id} should be ${head}<words>${own}`);
  }
  return kase;
}

// FIX-11: a JSON object mapping case ids to the reason each is expected to fail.
function readKnownFailures(file, ids) {
  const known = parseBytes(readBytes(file, file, 'FIX-11'), file, 'FIX-11');
  if (known === null || typeof known !== 'object' || Array.isArray(known) || Object.values(known).some((r) => typeof r !== 'string')) {
    throw new CorpusError(file, 'FIX-11', 'not a JSON object of case ids to reasons');
  }
  const stray = Object.keys(known).find((id) => !ids.has(id));
  if (stray) throw new CorpusError(file, 'FIX-11', `${stray} is no case of the corpus`);
  return new Map(Object.entries(known));
}

// Every check of FIX-15, on every case the manifest lists, before any case runs.
function loadCorpus(dir, schema, knownFailuresFile) {
  const manifest = parseBytes(readBytes(path.join(dir, 'manifest.json'), 'manifest.json'), 'manifest.json', 'FIX-2');
  checkManifest(manifest, schema);
  const cases = manifest.cases.map((entry) => checkCase(entry, readBytes(path.join(dir, entry.path), entry.path), schema));
  const ids = new Set(cases.map((c) => c.id));
  const known = knownFailuresFile ? readKnownFailures(knownFailuresFile, ids) : new Map();
  return { manifest, cases, known, recomputed: cases.length };
}

module.exports = { loadCorpus, CorpusError };
