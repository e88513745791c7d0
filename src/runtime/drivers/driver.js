// corral's Node session driver (docs/session-protocol.md).
//
// Started as: node --expose-internals /.corral/driver.js
// (--expose-internals gives the REPL's own top-level-await transform,
// internal/repl/await, so `await` works at the top of a cell and the
// declarations around it persist, as in the Node REPL.)
//
// Cells run as scripts in this process's global context, so top-level
// let/const/class/function declarations persist from cell to cell; the
// completion value of a cell is its result. console output goes to fd 1/2
// unframed; events go to fd 4; requests come from fd 3.
'use strict';
const fs = require('fs');
const vm = require('vm');
const util = require('util');
const { createRequire } = require('module');
let processTopLevelAwait = null;
try {
  ({ processTopLevelAwait } = require('internal/repl/await'));
} catch (e) {
  // without --expose-internals: cells with top-level await get a clear error
}

function send(obj) {
  const body = Buffer.from(JSON.stringify(obj), 'utf8');
  const frame = Buffer.concat([Buffer.from(`${body.length}\n`), body]);
  let off = 0;
  while (off < frame.length) off += fs.writeSync(4, frame, off);
}

// Cells resolve require() from /workspace (their own node_modules, files).
globalThis.require = createRequire('/workspace/');

let current = null; // {id, rejection, interrupted}

process.on('SIGINT', () => {
  // A synchronous loop is stopped by breakOnSigint; an awaiting cell here.
  if (current && current.abort) current.abort();
});
process.on('unhandledRejection', (reason) => {
  if (current) current.rejection = current.rejection || { reason };
});
process.on('uncaughtException', (err) => {
  if (current) current.rejection = current.rejection || { reason: err };
  else process.stderr.write(`${(err && err.stack) || err}\n`);
});

function errorEvent(id, err) {
  let name = 'Uncaught', value = '', tb = '';
  if (err instanceof Error || (err && typeof err === 'object' && 'stack' in err)) {
    name = err.name || 'Error';
    if (err.code && name === 'Error') name = `Error [${err.code}]`;
    value = err.message || '';
    tb = String(err.stack || `${name}: ${value}`);
  } else {
    value = typeof err === 'string' ? err : util.inspect(err);
    tb = `Uncaught ${value}`;
  }
  process.stderr.write(tb.endsWith('\n') ? tb : `${tb}\n`);
  send({ type: 'error', id, name, value, traceback: tb });
}

async function runCell(id, code) {
  const filename = `cell-${id}.js`;
  const cell = { id, rejection: null, abort: null };
  current = cell;
  let status = 'ok';
  try {
    let value;
    let wrapped = null;
    if (/\bawait\b/.test(code) && processTopLevelAwait) {
      try { wrapped = processTopLevelAwait(code); } catch (e) { wrapped = null; }
    }
    if (wrapped) {
      const promise = new vm.Script(wrapped, { filename }).runInThisContext({ breakOnSigint: true });
      const aborted = new Promise((_, reject) => {
        cell.abort = () => reject(Object.assign(new Error('Script execution interrupted.'),
                                                { interrupted: true }));
      });
      const res = await Promise.race([promise, aborted]);
      value = res && typeof res === 'object' && 'value' in res ? res.value : undefined;
    } else {
      value = new vm.Script(code, { filename }).runInThisContext({ breakOnSigint: true });
      if (value && typeof value.then === 'function') {
        const aborted = new Promise((_, reject) => {
          cell.abort = () => reject(Object.assign(new Error('Script execution interrupted.'),
                                                  { interrupted: true }));
        });
        value = await Promise.race([value, aborted]);
      }
    }
    // let callbacks scheduled by the cell report their errors to it
    await new Promise((r) => setImmediate(r));
    if (cell.rejection) throw cell.rejection.reason;
    if (value !== undefined) {
      send({ type: 'result', id, mime: { 'text/plain': util.inspect(value, { depth: 4 }) } });
    }
  } catch (err) {
    const interrupted = (err && err.interrupted) ||
      (err && err.message === 'Script execution interrupted.');
    status = interrupted ? 'interrupted' : 'error';
    errorEvent(id, err);
  } finally {
    current = null;
  }
  send({ type: 'done', id, status });
}

// Requests: frames on fd 3, handled one at a time.
let buf = Buffer.alloc(0);
const queue = [];
let busy = false;

async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const req = queue.shift();
    if (req.type === 'ping') send({ type: 'pong', id: req.id });
    else if (req.type === 'shutdown') process.exit(0);
    else if (req.type === 'execute') {
      await runCell(req.id, Buffer.from(req.code_b64 || '', 'base64').toString('utf8'));
    }
  }
  busy = false;
}

const input = fs.createReadStream(null, { fd: 3, highWaterMark: 1 << 20 });
input.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  for (;;) {
    const nl = buf.indexOf(10);
    if (nl < 0) break;
    const len = parseInt(buf.subarray(0, nl).toString(), 10);
    if (!(len >= 0)) process.exit(3); // a malformed frame: the supervisor restarts us
    if (buf.length < nl + 1 + len) break;
    queue.push(JSON.parse(buf.subarray(nl + 1, nl + 1 + len).toString('utf8')));
    buf = buf.subarray(nl + 1 + len);
  }
  pump();
});
input.on('end', () => process.exit(0));

send({ type: 'ready', language: 'node', version: process.versions.node });
