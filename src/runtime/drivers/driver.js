// corral's Node session driver. The contract is docs/session-protocol.md.
//
// The supervisor must start it as:
//
//     node --expose-internals /.corral/driver.js
//
// --expose-internals gives this file two pieces of Node itself: acorn (the
// parser Node ships), to find a cell's top-level declarations, and the REPL's
// top-level-await transform (internal/repl/await). Without the flag cells
// still run, but `await` at the top of a cell is a SyntaxError and let/const
// cannot be declared again in a later cell.
//
// fd 0 is /dev/null; console output goes to fds 1 and 2 unframed; requests
// arrive on fd 3 and events leave on fd 4.
//
// Cells run as scripts in this process's global context. Top-level
// let/const/class declarations are rewritten to `var` declarations, so they
// persist as globals and a cell that declares them can be run again, as in a
// notebook (V8's REPL mode does this for Chrome's console; Node does not
// expose it). The price: `const` does not stop a later reassignment.
'use strict';

const fs = require('fs');
const path = require('path');
const util = require('util');
const vm = require('vm');
const { createRequire } = require('module');

// A cell may assign globals the driver relies on (`var process = ...`):
// the driver keeps its own references.
const proc = process;
const realExit = process.exit.bind(process);
const { Buffer, JSON, Promise } = globalThis;
// (`const { setImmediate } = require('timers/promises')` at the top of a
// cell, a common idiom, becomes a global: the driver's own stays this one.)
const setImmediate = globalThis.setImmediate;
const DRIVER_FILE = __filename;
const REQ_FD = 3;
const EV_FD = 4;
const MAX_FRAME = 64 << 20;
const MAX_TEXT = 2 << 20; // a text/plain result or an error text longer than this is cut

let acorn = null;
let processTopLevelAwait = null;
try {
  acorn = require('internal/deps/acorn/acorn/dist/acorn');
  ({ processTopLevelAwait } = require('internal/repl/await'));
} catch {
  // not started with --expose-internals: plain scripts, see the top
}

// ---- events -------------------------------------------------------------

// A string with a lone surrogate (new Error('a\ud800b')) is valid in
// JavaScript but not in UTF-8: JSON.stringify writes it as a \ud800 escape,
// which the supervisor's JSON parser refuses, and the session would lose
// its driver over one message. U+FFFD instead, as driver.py does.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
function wellFormed(key, value) {
  return typeof value === 'string' ? value.replace(LONE_SURROGATE, '\ufffd') : value;
}

// The middle goes, as in driver.py: the start and the end of a traceback
// say the most. (An error's message and stack over 32 MiB each would
// otherwise make a frame over the protocol's limit, and the supervisor
// would kill the driver.)
function cut(text) {
  if (text.length <= MAX_TEXT) return text;
  return `${text.slice(0, MAX_TEXT / 2)}\n... [${text.length - MAX_TEXT} characters] ...\n` +
    text.slice(-MAX_TEXT / 2);
}

function send(event) {
  let body = Buffer.from(JSON.stringify(event, wellFormed), 'utf8');
  if (body.length > MAX_FRAME - 16 && event.mime) {
    const note = `<a ${body.length}-byte output, over the 64 MiB frame limit, was dropped>`;
    body = Buffer.from(JSON.stringify({ ...event, mime: { 'text/plain': note } }), 'utf8');
  }
  const frame = Buffer.concat([Buffer.from(`${body.length}\n`), body]);
  for (let off = 0; off < frame.length;) {
    try {
      off += fs.writeSync(EV_FD, frame, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e; // a nonblocking pipe that is full: retry
    }
  }
}

// ---- turning a cell into a script ---------------------------------------

// Rewrites top-level let/const/class declarations as var declarations.
// Columns stay put where they can (`const` becomes `var  `), so positions in
// stack traces still point at the cell's text.
function hoistDeclarations(code) {
  let ast;
  try {
    ast = acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'script',
                              allowAwaitOutsideFunction: true });
  } catch {
    return code; // V8 reports the SyntaxError with its own message
  }
  const edits = [];
  for (const node of ast.body) {
    if (node.type === 'VariableDeclaration' && node.kind !== 'var') {
      edits.push([node.start, node.start + node.kind.length, 'var'.padEnd(node.kind.length)]);
    } else if (node.type === 'ClassDeclaration') {
      edits.push([node.start, node.start, `var ${node.id.name} = `], [node.end, node.end, ';']);
    }
  }
  for (const [from, to, text] of edits.reverse()) {
    code = code.slice(0, from) + text + code.slice(to);
  }
  return code;
}

function compile(code, id) {
  let async = false;
  if (acorn) {
    code = hoistDeclarations(code);
    // null when the cell has no top-level await; it throws on what it
    // cannot parse, and the script compiler then says why
    let wrapped = null;
    try {
      wrapped = processTopLevelAwait(code);
    } catch {}
    if (wrapped) {
      code = wrapped;
      async = true;
    }
  }
  const options = { filename: `<cell-${id}>` };
  if (vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER) {
    options.importModuleDynamically = vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER; // import()
  }
  return { script: new vm.Script(code, options), async };
}

// ---- errors -------------------------------------------------------------

const INTERRUPTED = 'ERR_SCRIPT_EXECUTION_INTERRUPTED';

function interruptError() {
  return Object.assign(new Error('Script execution was interrupted by `SIGINT`'),
                       { code: INTERRUPTED });
}

// process.exit() in a cell ends the cell, not the session (as sys.exit in
// the Python driver); the driver itself exits with realExit.
class ProcessExit extends Error {
  constructor(code) {
    super(`process.exit(${code === undefined ? '' : code}) was called`);
    this.name = 'ProcessExit';
    this.exitCode = code;
  }
}

// The stack as the cell's author should read it: without the frames of
// the machinery that ran the cell (this driver, node:vm, the event loop that
// called it), and without a source excerpt that points into this file.
function cleanStack(stack) {
  let lines = stack.split('\n');
  if (lines[0].startsWith(`${DRIVER_FILE}:`)) lines = lines.slice(lines.indexOf('') + 1);
  const isFrame = (l) => /^\s+at /.test(l);
  lines = lines.filter((l) => !(isFrame(l) && (l.includes(DRIVER_FILE) || l.includes('node:vm:'))));
  let last = -1;
  lines.forEach((l, i) => { if (isFrame(l) && l.includes('<cell-')) last = i; });
  // Below the cell's last frame is only what called it. With no cell frame
  // (a syntax error, an interrupt, an error made by Node) Node's own frames
  // say nothing about the cell; frames of the user's files stay.
  return lines.filter((l, i) => !isFrame(l) || (last >= 0 ? i <= last : !/\(?node:/.test(l)))
    .join('\n');
}

// Reading a thrown value runs the cell's code: a getter, a Proxy trap,
// toString or Symbol.toPrimitive, a [util.inspect.custom] method, and a
// revoked Proxy throws on any access. Whatever the driver reads from such a
// value goes through attempt(), so that the value cannot throw out of the
// driver's own code (the cell would never get its "done" and the session
// would be lost).
function attempt(read, fallback) {
  try {
    return read();
  } catch {
    return fallback;
  }
}

const UNDISPLAYABLE = '<an exception that cannot be displayed>';

// Never throws.
function describe(err) {
  try {
    const isError = attempt(() => err instanceof Error ||
                                  (!!err && typeof err.stack === 'string'), false);
    if (isError) {
      const name = attempt(() => String(err.name || 'Error'), 'Error');
      const value = attempt(() => String(err.message ?? ''), UNDISPLAYABLE);
      let traceback = attempt(() => cleanStack(String(err.stack)), `${name}: ${value}`);
      // the error's own properties (code, errno, path...) follow the stack,
      // as Node prints an uncaught error
      traceback += attempt(() => {
        const own = Object.fromEntries(Object.keys(err).map((k) => [k, err[k]]));
        return Object.keys(own).length ? ` ${util.inspect(own)}` : '';
      }, '');
      return { name, value, traceback };
    }
    const value = attempt(() => util.inspect(err), UNDISPLAYABLE);
    return { name: 'Uncaught', value, traceback: `Uncaught ${value}` };
  } catch {
    // what attempt() cannot cover: the driver's own helpers, should a
    // cell have broken the built-ins they use
    return { name: 'Error', value: UNDISPLAYABLE, traceback: `Uncaught ${UNDISPLAYABLE}` };
  }
}

function writeStderr(text) {
  try {
    proc.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  } catch {} // a cell may have replaced or destroyed process.stderr
}

function reportError(id, err) {
  const d = describe(err);
  writeStderr(d.traceback);
  send({ type: 'error', id, name: cut(d.name), value: cut(d.value), traceback: cut(d.traceback) });
}

// ---- cells --------------------------------------------------------------

let current = null; // the running cell: {id, fail(err), interrupted}

// Cells resolve require() from the working directory: its node_modules and
// relative paths, like a script there. Built-in modules need nothing.
globalThis.require = createRequire(path.join(proc.cwd(), '<cell>'));

// import() in cells uses Node's own loader (vm.constants.
// USE_MAIN_CONTEXT_DEFAULT_LOADER); Node 20 calls that experimental and
// would print a warning into the first cell that imports. Other warnings
// are printed as usual.
const emitWarning = proc.emitWarning;
proc.emitWarning = function (warning, ...rest) {
  if (attempt(() => String((warning && warning.message) || warning), '')
    .includes('USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
  return emitWarning.call(this, warning, ...rest);
};

proc.exit = (code) => {
  throw new ProcessExit(code);
};

proc.on('SIGINT', () => {
  // A synchronous loop is stopped by breakOnSigint, which holds this
  // listener back while the script runs. Here a cell is waiting for a
  // promise; between cells there is nothing to stop.
  if (current) {
    current.interrupted = true;
    current.fail(interruptError());
  }
});

// During a cell, a rejection nobody handled or an exception thrown from a
// callback is the cell's error (and ends the wait for its promise). Between
// cells it is printed, as Node would, and the session goes on.
function stray(err) {
  if (current) current.fail(err);
  else writeStderr(describe(err).traceback);
}
proc.on('unhandledRejection', stray);
proc.on('uncaughtException', stray);

function isThenable(v) {
  try {
    return v !== null && (typeof v === 'object' || typeof v === 'function') &&
      typeof v.then === 'function';
  } catch {
    return false;
  }
}

function flushed(stream) {
  // the callback of an empty write runs once everything before it is out
  return new Promise((resolve) => {
    try {
      stream.write('', () => resolve());
    } catch {
      resolve();
    }
  });
}

async function runCell(id, code) {
  let failure = null;
  let fail;
  const failed = new Promise((_, reject) => { fail = reject; });
  failed.catch(() => {}); // observed through Promise.race or `failure`
  const cell = current = {
    id,
    interrupted: false,
    fail: (err) => { if (!failure) failure = { err }; fail(err); },
  };
  let status = 'ok';
  try {
    try {
      const { script, async } = compile(code, id);
      let value = script.runInThisContext({ breakOnSigint: true });
      if (async) value = ((await Promise.race([value, failed])) || {}).value;
      if (isThenable(value)) value = await Promise.race([value, failed]);
      // Rejections left unhandled by the cell are reported after the
      // microtasks run: give them one turn of the event loop.
      await new Promise((resolve) => setImmediate(resolve));
      if (failure) throw failure.err;
      if (value !== undefined) {
        send({ type: 'result', id, mime: { 'text/plain': cut(inspectResult(value)) } });
      }
    } catch (err) {
      const interrupted = cell.interrupted || attempt(() => err.code === INTERRUPTED, false);
      status = interrupted ? 'interrupted' : 'error';
      reportError(id, err);
    } finally {
      current = null;
    }
    await Promise.all([flushed(proc.stdout), flushed(proc.stderr)]);
  } finally {
    // always, or the supervisor waits for it until the cell's time limit
    // and then kills the driver with the session's state
    send({ type: 'done', id, status });
  }
}

// The cell's value as text. An inspection that throws (a throwing
// [util.inspect.custom]) costs the value its display, not the cell, as a
// failing __repr__ does in the Python driver.
function inspectResult(value) {
  try {
    return util.inspect(value);
  } catch (err) {
    const d = describe(err);
    return `<a value that cannot be displayed: util.inspect threw ${d.name}: ${d.value}>`;
  }
}

// ---- requests -----------------------------------------------------------

function fatal(why) {
  proc.stderr.write(`corral node driver: ${why}\n`);
  realExit(2);
}

const queue = [];
let busy = false;

async function serve() {
  if (busy) return;
  busy = true;
  try {
    while (queue.length) {
      const req = queue.shift();
      try {
        if (req.type === 'execute' && typeof req.code_b64 === 'string') {
          await runCell(req.id, Buffer.from(req.code_b64, 'base64').toString('utf8'));
        } else if (req.type === 'ping') {
          send({ type: 'pong', id: req.id });
        } else if (req.type === 'shutdown') {
          realExit(0);
        } else {
          fatal(`unknown request ${JSON.stringify(req.type)}`);
        }
      } catch (err) {
        // Only writing an event can fail here, and runCell has sent "done"
        // (or tried to: if the event pipe is gone, the supervisor sees it
        // close). The requests after this one are still served.
        writeStderr(`corral node driver: request ${req.id}: ${describe(err).value}`);
      }
    }
  } finally {
    busy = false;
  }
}

let pending = Buffer.alloc(0);
const requests = fs.createReadStream(null, { fd: REQ_FD, highWaterMark: 1 << 20 });
requests.on('data', (chunk) => {
  pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
  for (;;) {
    const nl = pending.indexOf(10);
    if (nl < 0) {
      if (pending.length > 9) fatal('frame header is not a length');
      break;
    }
    const head = pending.subarray(0, nl).toString('latin1');
    if (!/^[0-9]{1,9}$/.test(head) || Number(head) > MAX_FRAME) fatal('bad frame length');
    const end = nl + 1 + Number(head);
    if (pending.length < end) break;
    let req;
    try {
      req = JSON.parse(pending.subarray(nl + 1, end).toString('utf8'));
    } catch (e) {
      fatal(`frame body is not JSON: ${e.message}`);
    }
    if (!req || typeof req !== 'object' || !Number.isInteger(req.id)) fatal('request without an id');
    queue.push(req);
    pending = pending.subarray(end);
  }
  serve();
});
requests.on('end', () => realExit(0)); // the supervisor is gone
requests.on('error', (e) => fatal(`reading requests: ${e.message}`));

send({ type: 'ready', language: 'node', version: proc.versions.node });
