'use strict';
// The implementation under test, in a process of its own, driven by spec/adapter-protocol.md:
// JSON lines over its stdin and stdout (PROTO-1, PROTO-2), each reply checked against its schema
// (PROTO-16). Whatever the process does is a verdict about it (PROTO-15), never this runner's
// crash: every fault rejects the request with an ImplementationFailure naming its clause.
const { spawn } = require('node:child_process');
const { parse, stringify } = require('./json.js');
const { validate } = require('./schema.js');

class ImplementationFailure extends Error {
  constructor(clause, what) {
    super(`${clause}: ${what}`);
    this.clause = clause;
  }
}

// The schema of each request's reply, under spec/schemas/adapter/.
const REPLY_SCHEMA = {
  start: 'start-reply',
  configure: 'configure-reply',
  configure_benefit: 'configure-reply',
  hit_tokens: 'hit_tokens-reply',
  access: 'access-reply',
  resident_count: 'resident_count-reply',
  snapshot: 'snapshot-reply',
  consider_admission: 'decision-reply',
  record_hit: 'decision-reply',
  record_miss: 'access-reply',
  observe_pressure: 'access-reply',
  choose_victims: 'victims-reply',
  select_probation_cap_victims: 'cap_repair-reply',
  remove: 'cap_repair-reply',
  benefit_state: 'benefit_state-reply',
};

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const STDERR_LINES = 5;

// Control characters of what the implementation says, escaped before they reach a terminal
// (PROTO-31).
const escape = (s) => s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

class Implementation {
  constructor(argv, schema, timeouts) {
    this.argv = argv;
    this.schema = schema;
    this.timeouts = timeouts;
    this.seq = 0;
    this.pending = null;
    this.failure = null;
    this.buffered = Buffer.alloc(0);
    this.stderr = '';
    this.exited = null;
  }

  // PROTO-4, PROTO-5, PROTO-6: start the process in a process group of its own and ask who it is.
  async start() {
    this.child = spawn(this.argv[0], this.argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.child.on('error', (e) => this.fail(new ImplementationFailure('PROTO-15', `cannot be started: ${e.message}`)));
    this.child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      // A reply written just before the exit may still be in the pipe: read it first.
      const how = `exited (${signal ? `signal ${signal}` : `status ${code}`})`;
      if (!this.stopping) setTimeout(() => this.fail(new ImplementationFailure('PROTO-15', `${this.inFlight()}${how} before replying`)), 50);
    });
    this.child.stdin.on('error', () => this.fail(new ImplementationFailure('PROTO-15', 'stopped reading its stdin')));
    this.child.stdout.on('data', (chunk) => this.onStdout(chunk));
    // An exit, reported with its status, usually follows the end of stdout within milliseconds.
    this.child.stdout.on('end', () => this.stopping
      || setTimeout(() => this.fail(new ImplementationFailure('PROTO-15', `${this.inFlight()}closed its stdout before replying`)), 100));
    this.child.stderr.on('data', (chunk) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).split('\n').slice(-STDERR_LINES - 1).join('\n').slice(-4000);
    });
    const reply = await this.request('start', { protocol: 1n }, this.timeouts.start);
    if (reply.protocol !== 1n) throw this.fail(new ImplementationFailure('PROTO-5', `protocol ${reply.protocol}, not 1`));
    this.level = reply.level;
    this.policies = new Set(reply.policies);
    this.identity = `${reply.implementation.name} ${reply.implementation.version} (${reply.implementation.language})`;
    return reply;
  }

  inFlight() {
    return this.pending ? `${this.pending.cmd} (seq ${this.pending.seq}): ` : '';
  }

  onStdout(chunk) {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    for (let nl = this.buffered.indexOf(0x0a); nl >= 0; nl = this.buffered.indexOf(0x0a)) {
      const line = this.buffered.subarray(0, nl);
      this.buffered = this.buffered.subarray(nl + 1);
      this.onLine(line);
    }
  }

  onLine(bytes) {
    const pending = this.pending;
    if (!pending) {
      this.fail(new ImplementationFailure('PROTO-1', 'wrote a line to stdout that answers no request'));
      return;
    }
    this.pending = null;
    clearTimeout(pending.timer);
    let reply;
    try {
      reply = parse(UTF8.decode(bytes), { loneSurrogates: 'keep' }).value;
    } catch (e) {
      pending.reject(this.fail(new ImplementationFailure('PROTO-1', `${pending.cmd} (seq ${pending.seq}): a reply that is not UTF-8 JSON (${e.message})`)));
      return;
    }
    const fault = this.replyFault(pending, reply);
    if (fault) pending.reject(this.fail(fault));
    else pending.resolve(reply);
  }

  replyFault(pending, reply) {
    const where = `${pending.cmd} (seq ${pending.seq})`;
    if (reply === null || typeof reply !== 'object' || Array.isArray(reply)) return new ImplementationFailure('PROTO-1', `${where}: a reply that is not a JSON object`);
    if (reply.seq !== BigInt(pending.seq)) return new ImplementationFailure('PROTO-2', `${where}: a reply of seq ${reply.seq}`);
    if ('error' in reply) {
      const error = validate(this.schema('adapter/error-reply.schema.json'), reply);
      return new ImplementationFailure(error ? 'PROTO-16' : 'PROTO-14', `${where}: ${error || `an error reply: ${escape(String(reply.error))}`}`);
    }
    const error = validate(this.schema(`adapter/${REPLY_SCHEMA[pending.cmd]}.schema.json`), reply);
    return error ? new ImplementationFailure('PROTO-16', `${where}: the reply is not of its schema: ${error}`) : null;
  }

  // Records the first failure, rejects the request in flight, and ends the process (PROTO-15).
  fail(failure) {
    if (!this.failure) {
      this.failure = failure;
      if (this.stderr.trim()) failure.message += `; last stderr: ${escape(this.stderr.trim().split('\n').slice(-STDERR_LINES).join(' | '))}`;
      this.kill();
    }
    if (this.pending) {
      const { reject, timer } = this.pending;
      this.pending = null;
      clearTimeout(timer);
      reject(this.failure);
    }
    return this.failure;
  }

  // One request and its reply, the reply without its seq.
  request(cmd, fields, timeout = this.timeouts.reply) {
    if (this.failure) return Promise.reject(this.failure);
    const seq = this.seq++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new ImplementationFailure('PROTO-15', `${cmd} (seq ${seq}): no reply within ${timeout / 1000} s`)), timeout);
      this.pending = { cmd, seq, resolve, reject, timer };
      this.child.stdin.write(`${stringify({ cmd, seq: BigInt(seq), ...fields })}\n`);
    }).then((reply) => {
      const out = { ...reply };
      delete out.seq;
      return out;
    });
  }

  // PROTO-13: stop gets no reply; the process exits with status 0 within 2 seconds.
  async stop() {
    if (this.failure) return this.failure;
    this.stopping = true;
    this.child.stdin.end(`${stringify({ cmd: 'stop', seq: BigInt(this.seq++) })}\n`);
    const exited = this.exited || await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(null), 2000);
      this.child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal });
      });
    });
    if (exited && exited.code === 0) return null;
    this.kill();
    return new ImplementationFailure('PROTO-13', exited ? `exited with ${exited.signal || `status ${exited.code}`} after stop` : 'did not exit within 2 s of stop');
  }

  kill() {
    if (!this.child || this.exited) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  }
}

module.exports = { Implementation, ImplementationFailure, REPLY_SCHEMA };
