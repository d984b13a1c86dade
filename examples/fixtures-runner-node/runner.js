#!/usr/bin/env node
'use strict';
// A golden-fixture runner written from kvspec's documents alone (spec/fixtures.md and the
// documents its section "The documents a consumer reads" names), with no code of kvspec's.
// See README.md.
const path = require('node:path');
const { loadCorpus, CorpusError } = require('./corpus.js');
const { schemas, SchemaError } = require('./schema.js');
const { Implementation, ImplementationFailure } = require('./protocol.js');
const cases = require('./cases.js');

const USAGE = 'usage: runner.js [CORPUS] [--known-failures FILE] [--policy P ...] [--start-timeout S] [--reply-timeout S] [--spec DIR] [-- PROGRAM ARGS...]';
const POLICIES = ['s3fifo', 'lru', 'fifo', 'benefit'];

function parseArgs(argv) {
  const here = path.resolve(__dirname, '..', '..');
  const args = { corpus: path.join(here, 'spec', 'fixtures'), spec: path.join(here, 'spec'), policies: [], known: null, start: 30, reply: 10, command: [] };
  const dash = argv.indexOf('--');
  if (dash >= 0) args.command = argv.slice(dash + 1);
  const own = dash >= 0 ? argv.slice(0, dash) : argv;
  let corpusGiven = false;
  for (let i = 0; i < own.length; i++) {
    const a = own[i];
    const value = () => {
      if (i + 1 >= own.length) throw new Error(`${a} needs a value`);
      return own[++i];
    };
    if (a === '--known-failures') args.known = value();
    else if (a === '--spec') args.spec = value();
    else if (a === '--policy') args.policies.push(value());
    else if (a === '--start-timeout' || a === '--reply-timeout') {
      const s = Number(value());
      if (!(s > 0)) throw new Error(`${a} must be a positive number of seconds`);
      args[a === '--start-timeout' ? 'start' : 'reply'] = s;
    } else if (a.startsWith('-') || corpusGiven) throw new Error(`unexpected argument ${a}`);
    else {
      args.corpus = a;
      corpusGiven = true;
    }
  }
  const bad = args.policies.find((p) => !POLICIES.includes(p));
  if (bad) throw new Error(`--policy ${bad}: not one of ${POLICIES.join(', ')}`);
  if (dash >= 0 && args.command.length === 0) throw new Error('-- must be followed by the implementation\'s command');
  return args;
}

// FIX-12: a replay case's policy is its config's, a benefit case's benefit; the others have none.
const policyOf = (kase) => (kase.kind === 'replay' ? kase.config.policy : kase.kind === 'benefit' ? 'benefit' : null);

// Starts the implementation, and a fresh one after each failure (PROTO-4).
class Implementations {
  constructor(args, schema) {
    Object.assign(this, { args, schema, current: null, startFailure: null });
  }

  async get() {
    if (this.args.command.length === 0 || this.startFailure) return null;
    if (this.current && !this.current.failure) return this.current;
    this.current = new Implementation(this.args.command, this.schema, { start: this.args.start * 1000, reply: this.args.reply * 1000 });
    try {
      await this.current.start();
    } catch (e) {
      this.startFailure = e instanceof ImplementationFailure ? e : new ImplementationFailure('PROTO-15', e.message);
      return null;
    }
    return this.current;
  }
}

// One case's verdict: pass, fail, skip or not-run, with why.
async function runCase(kase, implementations) {
  const needsImplementation = kase.kind === 'replay' || kase.kind === 'benefit';
  const impl = await implementations.get();
  if (!impl && needsImplementation) {
    return implementations.startFailure ? { verdict: 'not-run', detail: 'the implementation failed at its start' } : { verdict: 'skip', detail: 'no implementation was given' };
  }
  const policy = policyOf(kase);
  if (policy && !impl.policies.has(policy)) return { verdict: 'skip', detail: `the implementation does not offer ${policy}` };
  try {
    const outcome = await cases[kase.kind](impl, kase);
    if (outcome && outcome.skip) return { verdict: 'skip', detail: outcome.skip };
    return { verdict: 'pass', detail: outcome && outcome.partial ? outcome.partial : '' };
  } catch (e) {
    if (e instanceof cases.Difference || e instanceof ImplementationFailure) return { verdict: 'fail', detail: e.message };
    return { verdict: 'fail', detail: `this runner could not check the case: ${e.stack || e}` };
  }
}

// FIX-11: a listed failure is a known failure; a listed pass is an unexpected pass.
function withKnownFailures(result, reason) {
  if (reason === undefined) return result;
  if (result.verdict === 'fail') return { verdict: 'known-failure', detail: `${reason}; ${result.detail}` };
  if (result.verdict === 'pass') return { verdict: 'unexpected-pass', detail: `it passes, and the known failures say: ${reason}` };
  return result;
}

const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

async function main(argv) {
  let args;
  try {
    args = parseArgs(argv);
  } catch (e) {
    process.stderr.write(`runner.js: error: ${e.message} (${USAGE})\n`);
    return 1;
  }
  const schema = schemas(args.spec);
  let corpus;
  try {
    corpus = loadCorpus(args.corpus, schema, args.known);
  } catch (e) {
    if (e instanceof SchemaError) process.stderr.write(`runner.js: error: --spec ${args.spec}: ${e.message}\n`);
    else if (e instanceof CorpusError) process.stderr.write(`runner.js: the corpus ${args.corpus} is refused: ${e.message}\n`);
    else throw e;
    return 1;
  }
  const selected = corpus.cases.filter((k) => args.policies.length === 0 || args.policies.includes(policyOf(k)));
  if (selected.length === 0) {
    process.stderr.write(`runner.js: error: --policy ${args.policies.join(', ')} leaves no case\n`);
    return 1;
  }
  const implementations = new Implementations(args, schema);
  // The implementation runs in a process group of its own, which no signal to this one reaches:
  // end it with this process (an interruption, or a reader of the verdicts that went away).
  const end = (status) => {
    if (implementations.current) implementations.current.kill();
    process.exit(status);
  };
  process.on('SIGINT', () => end(130));
  process.on('SIGTERM', () => end(143));
  process.stdout.on('error', () => end(1));
  const counts = {};
  let failed = false;
  for (const kase of selected) {
    const result = withKnownFailures(await runCase(kase, implementations), corpus.known.get(kase.id));
    counts[result.verdict] = (counts[result.verdict] || 0) + 1;
    failed = failed || ['fail', 'unexpected-pass', 'not-run'].includes(result.verdict);
    const title = result.verdict === 'pass' || result.verdict === 'skip' ? '' : ` (${policyOf(kase) || kase.kind}: ${kase.title})`;
    process.stdout.write(`${result.verdict.padEnd(7)} ${kase.id}${title}${result.detail ? `: ${result.detail}` : ''}\n`);
  }
  if (implementations.startFailure) {
    failed = true;
    process.stdout.write(`FAIL at its start: ${implementations.startFailure.message}\n`);
  } else if (implementations.current && !implementations.current.failure) {
    const stopFailure = await implementations.current.stop();
    if (stopFailure) {
      failed = true;
      process.stdout.write(`FAIL at its stop: ${stopFailure.message}\n`);
    }
  }
  const who = implementations.current && implementations.current.identity ? `${implementations.current.identity}: ` : '';
  const verdict = failed ? 'DOES NOT CONFORM' : args.command.length ? 'conforms' : 'no implementation given';
  const tally = Object.entries(counts).map(([v, n]) => `${n} ${v}`).join(', ');
  process.stdout.write(`${who}${verdict}: ${plural(selected.length, 'case')} (${tally}); `
    + `${plural(corpus.recomputed, 'id')} recomputed of the manifest's ${corpus.manifest.cases.length}, spec version ${corpus.manifest.spec_version}\n`);
  return failed ? 3 : 0;
}

main(process.argv.slice(2)).then((status) => {
  process.exitCode = status;
}, (e) => {
  process.stderr.write(`runner.js: internal error: ${e.stack || e}\n`);
  process.exitCode = 1;
});
