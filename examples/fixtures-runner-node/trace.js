'use strict';
// A Mooncake trace reader, from spec/replay.md section 1 (REPLAY-TRACE-1 to REPLAY-TRACE-10).
// It streams the file, so that a line past the bound is refused without being held whole
// (REPLAY-TRACE-8), and checks each line before it reads the next (REPLAY-TRACE-10).
const fs = require('node:fs');
const zlib = require('node:zlib');
const stream = require('node:stream');
const { parse, MEMBERS } = require('./json.js');

const MAX_LINE = 16 * 1024 * 1024; // REPLAY-TRACE-8, its line feed not counted
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);
const FIELDS = ['timestamp', 'input_length', 'output_length', 'hash_ids'];
// REPLAY-TRACE-2: each field's range; hash_ids is checked item by item.
const RANGES = { timestamp: [0n, INT64_MAX], input_length: [1n, INT64_MAX], output_length: [0n, INT64_MAX] };
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const BLANK = new Set([0x20, 0x09, 0x0d]); // JSON's whitespace but the line feed that ends the line

class Refusal {
  constructor(clause, line, field, what) {
    Object.assign(this, { clause, line, field, what });
  }
}

// REPLAY-TRACE-1: UTF-16 or UTF-32 told by line 1's first four bytes (its line feed included) as
// RFC 4627 section 3 tells them, or by a byte order mark; a line 1 shorter than four bytes by its
// byte order mark alone.
function wideEncoding(b) {
  const z = (i) => b.length > i && b[i] === 0;
  const nz = (i) => b.length > i && b[i] !== 0;
  if (b.length >= 4 && b[0] === 0 && b[1] === 0 && b[2] === 0xfe && b[3] === 0xff) return 'UTF-32BE';
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xfe && b[2] === 0 && b[3] === 0) return 'UTF-32LE';
  if (b.length >= 2 && b[0] === 0xfe && b[1] === 0xff) return 'UTF-16BE';
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0xfe) return 'UTF-16LE';
  if (b.length < 4) return null;
  if (z(0) && z(1) && z(2) && nz(3)) return 'UTF-32BE';
  if (nz(0) && z(1) && z(2) && z(3)) return 'UTF-32LE';
  if (z(0) && nz(1) && z(2) && nz(3)) return 'UTF-16BE';
  if (nz(0) && z(1) && nz(2) && z(3)) return 'UTF-16LE';
  return null;
}

const isInt = (v, [lo, hi]) => typeof v === 'bigint' && v >= lo && v <= hi;

// REPLAY-TRACE-2 for one field's value: null when it is allowed, else the field to name.
function badValue(name, v) {
  if (name !== 'hash_ids') return isInt(v, RANGES[name]) ? null : name;
  if (!Array.isArray(v) || v.length === 0) return 'hash_ids';
  const i = v.findIndex((h) => !isInt(h, [INT64_MIN, INT64_MAX]));
  return i < 0 ? null : `hash_ids[${i}]`;
}

// One line, by REPLAY-TRACE-10's order within a line; its length was checked as it was read.
function readLine(bytes, n, blockSize, totals) {
  const refuse = (clause, field, what) => new Refusal(clause, n, field, what);
  if (bytes.every((b) => BLANK.has(b))) return refuse('REPLAY-TRACE-1', '(line)', 'a blank line');
  let parsed;
  try {
    parsed = parse(UTF8.decode(bytes), { duplicates: 'keep' });
  } catch (e) {
    return refuse('REPLAY-TRACE-1', '(line)', `not UTF-8 JSON (${e.message})`);
  }
  const record = parsed.value;
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return refuse('REPLAY-TRACE-1', '(line)', 'not a JSON object');
  for (const name of FIELDS) {
    if (!(name in record)) return refuse('REPLAY-TRACE-1', name, `no ${name}`);
    const field = badValue(name, record[name]);
    if (field) return refuse('REPLAY-TRACE-2', field, `${field} is not an integer in its range`);
  }
  const members = MEMBERS.get(record).map(([name]) => name);
  const other = members.find((name) => !FIELDS.includes(name));
  if (other !== undefined) return refuse('REPLAY-TRACE-1', other, `a field ${JSON.stringify(other)} a Mooncake record does not have`);
  const twice = members.find((name, i) => members.indexOf(name) < i);
  if (twice !== undefined) return refuse('REPLAY-TRACE-1', twice, `${twice} given twice`);
  const blocks = BigInt(record.hash_ids.length);
  const length = record.input_length;
  if (length <= (blocks - 1n) * blockSize || length > blocks * blockSize) {
    return refuse('REPLAY-TRACE-3', 'input_length', `${length} tokens is not in ((n - 1) x ${blockSize}, n x ${blockSize}] for n = ${blocks}`);
  }
  if (totals.prompt + length > INT64_MAX) return refuse('REPLAY-RESULT-3', 'input_length', 'the prompt tokens sum past 2^63 - 1');
  totals.prompt += length;
  return { hash_ids: record.hash_ids, input_length: length };
}

function openText(file) {
  const fd = fs.openSync(file, 'r');
  const magic = Buffer.alloc(2);
  const got = fs.readSync(fd, magic, 0, 2, 0);
  const raw = fs.createReadStream(null, { fd, start: 0 });
  // REPLAY-TRACE-6: gzip by its first two bytes, not by the name.
  if (got === 2 && magic[0] === 0x1f && magic[1] === 0x8b) return stream.pipeline(raw, zlib.createGunzip(), () => {});
  return raw;
}

// Reads the trace file: { requests } in file order, or { refusal }. Each chunk is read in its
// 'data' event, before the error a later chunk raises, so that a read that fails refuses the
// file at the line it fails on (REPLAY-TRACE-6). Node's gunzip drops what it decompressed of the
// chunk that fails, so a damaged stream can be refused at an earlier line than a reader that
// hands over every byte before the fault would name.
function readTrace(file, blockSize) {
  const requests = [];
  const totals = { prompt: 0n };
  let pending = [];
  let length = 0;
  const endLine = (ended) => {
    const n = requests.length + 1;
    let bytes = Buffer.concat(pending, length);
    pending = [];
    length = 0;
    if (n === 1) {
      const wide = wideEncoding(ended ? Buffer.concat([bytes, Buffer.from([0x0a])]) : bytes);
      if (wide) return new Refusal('REPLAY-TRACE-1', 1, '(file)', `the trace is in ${wide}, not UTF-8`);
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3); // RFC 8259 section 8.1
    }
    const result = readLine(bytes, n, blockSize, totals);
    if (!(result instanceof Refusal)) requests.push(result);
    return result;
  };
  // The refusal of a chunk, or null once every line it ends is read.
  const readChunk = (chunk) => {
    for (let start = 0; start < chunk.length;) {
      const nl = chunk.indexOf(0x0a, start);
      const piece = chunk.subarray(start, nl < 0 ? chunk.length : nl);
      start = nl < 0 ? chunk.length : nl + 1;
      pending.push(piece);
      length += piece.length;
      if (length > MAX_LINE) return new Refusal('REPLAY-TRACE-8', requests.length + 1, '(line)', 'a line longer than 16 MiB');
      const result = nl < 0 ? null : endLine(true);
      if (result instanceof Refusal) return result;
    }
    return null;
  };
  return new Promise((resolve) => {
    const text = openText(file);
    const finish = (result) => {
      text.removeAllListeners('data');
      text.destroy();
      resolve(result);
    };
    text.on('data', (chunk) => {
      const refusal = readChunk(chunk);
      if (refusal) finish({ refusal });
    });
    text.on('error', (e) => finish({ refusal: new Refusal('REPLAY-TRACE-6', requests.length + 1, '(file)', `cannot be read: ${e.message}`) }));
    text.on('end', () => {
      const last = length > 0 ? endLine(false) : null;
      finish(last instanceof Refusal ? { refusal: last } : { requests });
    });
  });
}

module.exports = { readTrace, Refusal };
