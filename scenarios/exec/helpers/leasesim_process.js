// leasesim's process protocol, version 1, for Node.js: a node of a leasesim run written as
// ordinary JavaScript (docs/process-protocol.md). Standard library only; one file, to be copied
// beside the user's code.
//
// Inside the process, time is the node's simulated clock: `setTimeout`, `setInterval`,
// `clearTimeout`, `Date.now()` and `performance.now()` are replaced by simulated ones, and
// promises run as always. The node must not read the real clock any other way, nor the
// operating system's randomness, files or sockets: a run would no longer be a function of its
// seed.
//
//   const lp = require('./leasesim_process.js');
//   lp.run(async (node) => {
//     for (;;) {
//       const [from, msg] = await node.recv();
//       node.send({ addr: from }, { type: 'effect_ack', ... });
//     }
//   });

'use strict';

const readline = require('readline');

const VERSION = 1;
// Bounds: a node that schedules work forever at one instant ends the run, never hangs it.
const ROUNDS_MAX = 100000;
const INBOX_MAX = 4096;
const UNSOLICITED_MAX = 64;

const realSetImmediate = setImmediate;

// The protocol's own stream; the node's `console.log` goes to standard error instead.
const protocolOut = process.stdout;
console.log = console.error;
console.info = console.error;

// `Math.random` from a seed set at each start (the node's incarnation): the same draws in every
// run. (`new Date()` without arguments still reads the real clock: use `Date.now()`.)
let randomState = 1;
Math.random = () => {
  randomState = (randomState * 1103515245 + 12345) % 2147483648;
  return randomState / 2147483648;
};

// The simulated timers of the current run: [at_ns, seq, fn, args, every_ns].
let timers = new Map();
let seq = 0;
let nowNs = 0;
let wallNs = 0;

// A timer handle, as Node's: `ref`, `unref`, `hasRef`, `refresh` (refs mean nothing here: the
// run decides when the node is done).
class Timeout {
  constructor(id) { this.id = id; }
  ref() { return this; }
  unref() { return this; }
  hasRef() { return true; }
  refresh() {
    const t = timers.get(this.id);
    if (t) t.at = nowNs + t.delay;
    return this;
  }
  [Symbol.toPrimitive]() { return this.id; }
}

function addTimer(fn, ms, args, repeat) {
  // As Node: a delay below 1 ms (or not a number) is 1 ms.
  const n = Number(ms);
  const delay = Math.round((n >= 1 ? n : 1) * 1e6);
  const id = ++seq;
  timers.set(id, { at: nowNs + delay, seq: id, fn, args, delay, every: repeat ? delay : 0 });
  return new Timeout(id);
}

globalThis.setTimeout = (fn, ms, ...args) => addTimer(fn, ms, args, false);
globalThis.setInterval = (fn, ms, ...args) => addTimer(fn, ms, args, true);
globalThis.clearTimeout = (t) => { if (t !== undefined && t !== null) timers.delete(Number(t)); };
globalThis.clearInterval = globalThis.clearTimeout;
Date.now = () => Math.floor(wallNs / 1e6);
if (globalThis.performance) {
  globalThis.performance.now = () => nowNs / 1e6;
}

function nextDue() {
  let best = null;
  for (const t of timers.values()) {
    if (best === null || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
  }
  return best;
}

// Lets every promise reaction that is ready run (they all run before an immediate).
function settleMicrotasks() {
  return new Promise((resolve) => realSetImmediate(resolve));
}

async function settle() {
  await settleMicrotasks();
  for (let i = 0; i < ROUNDS_MAX; i++) {
    const t = nextDue();
    if (t === null || t.at > nowNs) return;
    if (t.every > 0) {
      t.at += t.every;
    } else {
      timers.delete(t.seq);
    }
    t.fn(...t.args);
    await settleMicrotasks();
  }
  throw new Error(`the node's timers never settle: ${ROUNDS_MAX} rounds at one instant`);
}

class Node {
  constructor(start) {
    this.role = start.role;
    this.config = start.config;
    this.durable = Object.assign({}, start.durable || {});
    this._out = [];
    this._waiting = new Map();
    this._nextReq = 1;
    this._incarnation = start.incarnation || 0;
    this._inbox = [];
    this._takers = [];
    this.unsolicited = [];
  }

  nowNs() { return nowNs; }
  wallNs() { return wallNs; }
  sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

  send(to, msg) { this._out.push({ output: 'send', to, msg }); }
  journal(event) { this._out.push({ output: 'journal', event }); }
  setBusy(busy) { this._out.push({ output: 'busy', busy: !!busy }); }
  setAllTerminal(done) { this._out.push({ output: 'all_terminal', value: !!done }); }
  keep(key, value) {
    if (value === null || value === undefined) delete this.durable[key];
    else this.durable[key] = value;
    this._out.push({ output: 'durable', key, value: value === undefined ? null : value });
  }

  request(to, msg) {
    const req = this._incarnation * 4294967296 + this._nextReq++;
    return new Promise((resolve) => {
      this._waiting.set(req, resolve);
      this.send(to, Object.assign({}, msg, { req }));
    });
  }

  recv() {
    if (this._inbox.length > 0) return Promise.resolve(this._inbox.shift());
    return new Promise((resolve) => this._takers.push(resolve));
  }

  _deliver(from, msg) {
    const waiter = this._waiting.get(msg.req);
    if (this.role === 'worker') {
      if (waiter) {
        this._waiting.delete(msg.req);
        waiter(msg);
      } else {
        this.unsolicited.push(msg);
        if (this.unsolicited.length > UNSOLICITED_MAX) this.unsolicited.shift();
      }
    } else if (this._takers.length > 0) {
      this._takers.shift()([from, msg]);
    } else {
      if (this._inbox.length >= INBOX_MAX) throw new Error(`more than ${INBOX_MAX} requests wait in the inbox`);
      this._inbox.push([from, msg]);
    }
  }
}

function write(line) {
  protocolOut.write(JSON.stringify(line) + '\n');
}

function fail(what) {
  process.stderr.write(what + '\n');
  process.exit(1);
}

async function run(start) {
  let node = null;
  let timer = null;
  let failed = null;
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const inp = JSON.parse(line);
    const out = [];
    switch (inp.input) {
      case 'hello':
        out.push({ output: 'hello', version: VERSION });
        break;
      case 'reset':
        node = null;
        timers = new Map();
        timer = null;
        break;
      case 'start':
        // A process starts its node once a run: a restart is a new process.
        if (node !== null) fail('a second start without a reset between them');
        timers = new Map();
        timer = null;
        nowNs = inp.now;
        wallNs = inp.wall || 0;
        node = new Node(inp);
        randomState = (inp.incarnation || 0) + 1;
        Promise.resolve(start(node)).catch((e) => { failed = e; });
        break;
      case 'message':
      case 'timer':
        if (node === null) fail(`an input '${inp.input}' before any start`);
        nowNs = inp.now;
        if (inp.wall !== undefined) wallNs = inp.wall;
        if (inp.input === 'message') node._deliver(inp.from, inp.msg);
        break;
      default:
        fail(`an input this helper does not know: ${JSON.stringify(inp.input)}`);
    }
    if (node !== null) {
      await settle();
      if (failed !== null) fail(`the node's start function failed: ${failed && failed.stack ? failed.stack : failed}`);
      out.push(...node._out);
      node._out = [];
      const next = nextDue();
      const at = next === null ? null : next.at;
      if (at !== timer) {
        timer = at;
        out.push({ output: 'timer', at });
      }
    }
    for (const o of out) write(o);
    write({ output: 'done' });
  }
}

module.exports = { run, VERSION };
