'use strict';
// Each case kind, checked as spec/fixtures.md's "What a consumer checks" says (steps 2 to 8).
// A case function returns null when the case passes, { skip } when it cannot be run, and throws
// a Difference (or the implementation's ImplementationFailure) when it fails.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { stringify } = require('./json.js');
const { readTrace } = require('./trace.js');
const { seededTrace, lruBaseline, netBenefit, blockBytes, costSample } = require('./seeded.js');

class Difference extends Error {
  constructor(where, field, expected, got) {
    const at = field ? `the first difference is at ${field}: ` : '';
    super(`${where}: ${at}expected ${show(expected)}, got ${show(got)}`);
  }
}

// A value as JSON with its keys sorted, as the corpus writes it (FIX-3, FIX-13).
function show(v) {
  if (v === undefined) return '(nothing)';
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}: ${show(v[k])}`).join(', ')}}`;
  return stringify(v);
}

const at = (where, key) => (typeof key === 'number' ? `${where}[${key}]` : where ? `${where}.${key}` : key);

// The path of the first field or item where got differs from expected, or null. Doubles compare
// exactly, the sign of a zero included; a double the reply writes as an integer is read as one.
function firstDifference(expected, got, where = '') {
  const here = where || WHOLE;
  if (typeof expected === 'number') {
    const g = typeof got === 'bigint' ? Number(got) : got;
    return typeof g === 'number' && Object.is(expected, g) ? null : here;
  }
  if (typeof expected === 'bigint') return got === expected ? null : here;
  if (Array.isArray(expected)) {
    if (!Array.isArray(got)) return here;
    for (let i = 0; i < Math.max(expected.length, got.length); i++) {
      const d = firstDifference(expected[i], got[i], at(where, i));
      if (d) return d;
    }
    return null;
  }
  if (expected !== null && typeof expected === 'object') {
    if (got === null || typeof got !== 'object' || Array.isArray(got)) return here;
    for (const k of [...new Set([...Object.keys(expected), ...Object.keys(got)])].sort()) {
      const d = firstDifference(expected[k], got[k], at(where, k));
      if (d) return d;
    }
    return null;
  }
  return expected === got ? null : here;
}

const WHOLE = '(the whole)';

function valueAt(v, field) {
  for (const part of field.match(/[^.[\]]+/g) || []) {
    if (v === undefined || v === null) return undefined;
    v = Array.isArray(v) ? v[Number(part)] : v[part];
  }
  return v;
}

function expectSame(where, expected, got) {
  const field = firstDifference(expected, got);
  if (field === WHOLE) throw new Difference(where, null, expected, got);
  if (field) throw new Difference(where, field, valueAt(expected, field), valueAt(got, field));
}

// Step 2: a refused configuration must be refused, and nothing else is checked.
async function configure(impl, cmd, config, refused) {
  const reply = await impl.request(cmd, { config });
  if (reply.ok !== (refused === null)) {
    throw new Difference('the configuration', 'ok', refused === null, reply.ok);
  }
  return reply.ok;
}

const EMPTY_QUEUES = { small: [], main: [], ghost: [] };
// spec/dialects.md sections 7 and 8, the engine replay, whose access also carries input_length
// (PROTO-10).
const ENGINE_POINTS = new Set(['hit-cap-last-token', 'too-long-skipped', 'pin-request', 'full-blocks-only', 'partial-block-slot',
  'allocate-then-put', 'lru-reverse-touch', 'radix-lru-leaves', 'radix-fifo-leaves', 'split-keeps-creation', 'lru-free-queue']);

// Step 3, also for an accepted trace case's requests (step 5).
async function replay(impl, kase) {
  if (!(await configure(impl, 'configure', kase.config, kase.refused))) return null;
  const state = kase.level === 'state' && impl.level === 'state'; // FIX-16
  const engine = (kase.dialect || []).some((p) => ENGINE_POINTS.has(p));
  let before = EMPTY_QUEUES;
  const got = { total_hit_tokens: 0n, total_prompt_tokens: 0n, final_cache_blocks: 0n };
  for (const [i, r] of kase.requests.entries()) {
    const where = `requests[${i}]`;
    const { hit_tokens } = await impl.request('hit_tokens', { hash_ids: r.hash_ids, input_length: r.input_length });
    expectSame(`${where}: hit_tokens`, r.expect.hit_tokens, hit_tokens);
    if (state) expectSame(`${where}: the queues after the hit-token question (REPLAY-PREFIX-3)`, before, await impl.request('snapshot', {}));
    await impl.request('access', engine ? { hash_ids: r.hash_ids, input_length: r.input_length } : { hash_ids: r.hash_ids });
    const { resident_count } = await impl.request('resident_count', {});
    expectSame(`${where}: resident_count`, r.expect.resident_count, resident_count);
    if (state) {
      expectSame(`${where}: snapshot`, r.expect.snapshot, await impl.request('snapshot', {}));
      before = r.expect.snapshot;
    }
    got.total_hit_tokens += hit_tokens;
    got.total_prompt_tokens += r.input_length;
    got.final_cache_blocks = resident_count;
  }
  if (kase.requests.length === 0) got.final_cache_blocks = (await impl.request('resident_count', {})).resident_count;
  expectSame('totals', kase.totals, got);
  return null;
}

// Step 4.
async function benefit(impl, kase) {
  if (!(await configure(impl, 'configure_benefit', kase.config, kase.refused))) return null;
  const state = kase.level === 'state' && impl.level === 'state';
  for (const [j, op] of kase.operations.entries()) {
    const { cmd, ...fields } = op.request;
    expectSame(`operations[${j}] (${cmd})`, op.expect, await impl.request(cmd, fields));
    if (state) expectSame(`operations[${j}] (${cmd}): the state after it`, op.state, await impl.request('benefit_state', {}));
  }
  return null;
}

// FIX-8: the bytes of a trace case's file, which the corpus check held to FIX-8's bound.
function traceBytes(file) {
  if (file.lines) {
    const text = Buffer.from(file.lines.map((l) => `${l}\n`).join(''), 'utf8');
    return file.gzip ? zlib.gzipSync(text) : text;
  }
  return Buffer.concat(file.parts.map((p) => {
    const bytes = Buffer.from(p.base64, 'base64');
    return Buffer.alloc(bytes.length * Number(p.repeat), bytes);
  }));
}

// Step 5: read with this runner's reader; an accepted trace is then replayed by the implementation.
async function trace(impl, kase) {
  const bytes = traceBytes(kase.file);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvspec-trace-'));
  const file = path.join(dir, 'trace.jsonl'); // not .gz: the reader tells gzip by its bytes
  let read;
  try {
    fs.writeFileSync(file, bytes);
    read = await readTrace(file, kase.config.block_size);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const refusal = read.refusal ? { clause: read.refusal.clause, line: BigInt(read.refusal.line), field: read.refusal.field } : null;
  const expected = kase.refused === null ? null : { clause: kase.refused, ...kase.refused_at };
  expectSame('the reading (REPLAY-TRACE-7, REPLAY-TRACE-9, REPLAY-TRACE-10)', expected, refusal);
  if (refusal) return null;
  const asRead = read.requests.map((r) => ({ hash_ids: r.hash_ids, input_length: r.input_length }));
  expectSame('the requests read', kase.requests.map((r) => ({ hash_ids: r.hash_ids, input_length: r.input_length })), asRead);
  if (!impl) return { skip: 'read as the case says; its replay needs an implementation' };
  if (!impl.policies.has(kase.config.policy)) return { skip: `read as the case says; its replay needs ${kase.config.policy}, which the implementation does not offer` };
  return replay(impl, { ...kase, level: 'results' });
}

// BEN-CONF-1 to BEN-CONF-7's defaults.
const DEFAULT_BENEFIT_CONFIG = {
  probation_byte_budget: 268435456n,
  persistence_hit_threshold: 2n,
  min_reuse_probability: 0.01,
  decay_factor: 0.9,
  grace_observations: 32n,
  ghost_capacity: 4096n,
  ghost_max_age_observations: 1024n,
};

const ADMITTED = new Set(['admit-probation', 'admit-persist']);

// BEN-CMP-2: the policy side of a comparison, driven through the protocol.
async function comparisonPolicySide(impl, accesses, capacity) {
  await configure(impl, 'configure_benefit', DEFAULT_BENEFIT_CONFIG, null);
  const resident = new Map(); // key -> exclusive bytes
  let used = 0n;
  const side = { accesses: BigInt(accesses.length), bytes_written: 0n, hits: 0n, saved: 0 };
  const removeAll = async (keys) => {
    for (const key of keys) {
      await impl.request('remove', { key, pinned: [] });
      used -= resident.get(key) || 0n;
      resident.delete(key);
    }
  };
  for (const [key, cold, restore, bytes] of accesses) {
    const cost = { cold_prefill_cost: cold, restore_cost: restore };
    if (resident.has(key)) {
      side.hits += 1n;
      side.saved += netBenefit(cold, restore);
      const { decision } = await impl.request('record_hit', { key, cost });
      if (decision && decision.kind === 'promote') side.bytes_written += resident.get(key);
      continue;
    }
    const { decision } = await impl.request('consider_admission', { key, exclusive_bytes: bytes, shared: [], cost, pinned: [] });
    if (ADMITTED.has(decision.kind)) {
      resident.set(key, bytes);
      used += bytes;
      if (decision.kind === 'admit-persist') side.bytes_written += bytes;
      await removeAll(decision.cap.victims);
    }
    while (used > capacity) {
      const { keys } = await impl.request('choose_victims', { bytes_to_free: used - capacity, pinned: [] });
      if (keys.length === 0) break;
      await removeAll(keys);
    }
  }
  return side;
}

// Step 6.
async function comparison(impl, kase) {
  const accesses = seededTrace(kase.trace);
  if (!accesses) return { skip: `${JSON.stringify(kase.trace)} is no seeded trace of spec/benefit.md section 17 this runner knows` };
  expectSame('the trace (BEN-TRACE-1)', { accesses: kase.expect.accesses, first: kase.expect.first },
    { accesses: BigInt(accesses.length), first: accesses.slice(0, 8) });
  expectSame('the LRU side (BEN-LRU-1 to BEN-LRU-3)', kase.expect.lru, lruBaseline(accesses, kase.capacity_bytes));
  if (!impl || !impl.policies.has('benefit')) return { skip: 'the trace and the LRU side are as the case says; the policy side needs benefit' };
  expectSame('the policy side (BEN-CMP-2)', kase.expect.policy, await comparisonPolicySide(impl, accesses, kase.capacity_bytes));
  return null;
}

const unsigned = (id) => (id < 0n ? id + 2n ** 64n : id); // BEN-PREFIX-1

// BEN-PREFIX-1 to BEN-PREFIX-5 and BEN-PREFIX-7: the benefit policy as the prefix cache.
async function prefixBenefit(impl, kase, measures) {
  const size = blockBytes(kase.model, kase.block_size);
  const config = { ...DEFAULT_BENEFIT_CONFIG, probation_byte_budget: kase.capacity_bytes / 10n };
  await configure(impl, 'configure_benefit', config, null);
  const resident = new Map(); // key -> its segment ids
  const ledger = new Map(); // segment id -> the keys that reference it
  let bytes = 0n;
  const remove = async (key) => {
    await impl.request('remove', { key, pinned: [] });
    for (const id of resident.get(key) || []) {
      const refs = ledger.get(id);
      refs.delete(key);
      if (refs.size === 0) {
        ledger.delete(id);
        bytes -= size;
      }
    }
    resident.delete(key);
  };
  for (const r of kase.requests) {
    const ids = r.hash_ids.map(unsigned);
    const full = Number(r.input_length / kase.block_size);
    let k = 0;
    while (k < ids.length && ledger.has(ids[k])) k++;
    measures.add(k, r);
    for (let j = 0; j < k; j++) {
      if (resident.has(ids[j])) await impl.request('record_hit', { key: ids[j], cost: costSample(kase.model, kase.block_size, j + 1, r.input_length) });
    }
    const key = full > 0 ? ids[full - 1] : null;
    if (key === null || resident.has(key)) {
      measures.peak(bytes);
      continue;
    }
    const segments = ids.slice(0, full);
    const { decision } = await impl.request('consider_admission', {
      key, exclusive_bytes: 0n, shared: segments.map((id) => [id, size]), cost: costSample(kase.model, kase.block_size, full, r.input_length), pinned: [],
    });
    if (ADMITTED.has(decision.kind)) {
      resident.set(key, segments);
      for (const id of segments) {
        if (!ledger.has(id)) {
          ledger.set(id, new Set());
          bytes += size;
          measures.written(size);
        }
        ledger.get(id).add(key);
      }
      for (const victim of decision.cap.victims) await remove(victim);
    }
    while (bytes > kase.capacity_bytes) {
      const { keys } = await impl.request('choose_victims', { bytes_to_free: bytes - kase.capacity_bytes, pinned: [] });
      if (keys.length === 0) break;
      for (const victim of keys) await remove(victim);
    }
    measures.peak(bytes);
  }
}

// BEN-PREFIX-6 and BEN-PREFIX-7: a block policy replays the same requests. Each block is asked
// for alone before it is accessed, since bytes written counts the accesses to blocks not
// resident; accessing a request's blocks one by one is accessing them in order (REPLAY-ACCESS-1).
async function prefixBlocks(impl, kase, policy, measures) {
  const size = blockBytes(kase.model, kase.block_size);
  await configure(impl, 'configure', { policy, capacity: kase.capacity_bytes / size, block_size: kase.block_size, small_ratio: 0.1, max_freq: 3n }, null);
  for (const r of kase.requests) {
    const { hit_tokens } = await impl.request('hit_tokens', { hash_ids: r.hash_ids, input_length: r.input_length });
    // REPLAY-HIT-1 and REPLAY-TRACE-3: a hit below input_length is k whole blocks; one that
    // reaches it takes every block.
    measures.add(hit_tokens < r.input_length ? Number(hit_tokens / kase.block_size) : r.hash_ids.length, r, hit_tokens);
    for (const h of r.hash_ids) {
      const alone = await impl.request('hit_tokens', { hash_ids: [h], input_length: 1n });
      if (alone.hit_tokens === 0n) measures.written(size);
      await impl.request('access', { hash_ids: [h] });
    }
    measures.peak((await impl.request('resident_count', {})).resident_count * size);
  }
}

// BEN-PREFIX-7's measures of one policy.
function prefixMeasures(kase, policy) {
  const m = {
    bytes_written: 0n, capacity_bytes: kase.capacity_bytes, hit_tokens: 0n, peak_bytes: 0n, policy,
    prompt_tokens: 0n, requests: BigInt(kase.requests.length), saved_prefill_ms: 0,
  };
  return {
    result: m,
    // BEN-PREFIX-2 or REPLAY-HIT-1: hit tokens min(k x block_size, L), unless the policy said.
    add(k, r, hit = BigInt(k) * kase.block_size < r.input_length ? BigInt(k) * kase.block_size : r.input_length) {
      m.hit_tokens += hit;
      m.prompt_tokens += r.input_length;
      const cost = costSample(kase.model, kase.block_size, k, r.input_length);
      m.saved_prefill_ms += netBenefit(cost.cold_prefill_cost, cost.restore_cost);
    },
    written(bytes) {
      m.bytes_written += bytes;
    },
    peak(bytes) {
      if (bytes > m.peak_bytes) m.peak_bytes = bytes;
    },
  };
}

// Step 7: each of the four policies the implementation offers.
async function prefix(impl, kase) {
  const policies = ['benefit', 's3fifo', 'lru', 'fifo'];
  const offered = policies.filter((p) => impl && impl.policies.has(p));
  if (offered.length === 0) return { skip: 'the implementation offers none of benefit, s3fifo, lru and fifo' };
  for (const policy of offered) {
    const measures = prefixMeasures(kase, policy);
    if (policy === 'benefit') await prefixBenefit(impl, kase, measures);
    else await prefixBlocks(impl, kase, policy, measures);
    expectSame(`expect[${policies.indexOf(policy)}] (${policy})`, kase.expect[policies.indexOf(policy)], measures.result);
  }
  const missing = policies.filter((p) => !offered.includes(p));
  return missing.length ? { partial: `not offered: ${missing.join(', ')}` } : null;
}

// Step 8 (FIX-18): a lifecycle case replays its operations on a pool of requests in flight, whose
// messages (PROTO-35 to PROTO-44) this runner does not send yet: it is skipped.
async function lifecycle() {
  return { skip: 'a lifecycle case: this runner does not send the lifecycle messages (PROTO-35 to PROTO-44) yet (FIX-18)' };
}

module.exports = { replay, benefit, trace, comparison, prefix, lifecycle, Difference };
