// E2B's own JavaScript SDK (@e2b/code-interpreter, debug mode) against
// `corral serve --e2b-port`. Usage: BASE=http://127.0.0.1:PORT node sdk-check.mjs
// Ends with "N passed, N failed"; exit status 1 if anything failed.
import assert from 'node:assert/strict'

const BASE = process.env.BASE ?? 'http://127.0.0.1:49999'
process.env.E2B_DEBUG = 'true'          // no E2B API, no API key: the SDK talks to BASE only
process.env.E2B_SANDBOX_URL = BASE      // newer SDKs send everything here
delete process.env.E2B_API_KEY
const { Sandbox } = await import('@e2b/code-interpreter')

// SDK builds whose jupyterUrl ignores sandboxUrl use http://localhost:49999.
class LocalSandbox extends Sandbox { get jupyterUrl() { return BASE } }

let passed = 0, failed = 0
async function check(name, fn) {
  try { await fn(); passed++; console.log(`ok   ${name}`) }
  catch (e) { failed++; console.log(`FAIL ${name}: ${e?.stack ?? e}`) }
}

const sbx = await LocalSandbox.create({ debug: true, sandboxUrl: BASE })

await check('runCode x = 20, then x * 2 + 2 gives text 42', async () => {
  const a = await sbx.runCode('x = 20')
  assert.equal(a.error, undefined)
  assert.equal(a.results.length, 0)
  const seen = []
  const b = await sbx.runCode('x * 2 + 2', { onResult: (r) => seen.push(r) })
  assert.equal(b.results[0].text, '42')
  assert.equal(b.results[0].isMainResult, true)
  assert.equal(b.text, '42')
  assert.equal(seen.length, 1)
  assert.equal(typeof b.executionCount, 'number')
})

await check('stdout callbacks fire', async () => {
  const out = []
  const ex = await sbx.runCode('print("hello")', { onStdout: (m) => out.push(m) })
  assert.equal(out.length, 1)
  assert.equal(out[0].line, 'hello\n')
  assert.deepEqual(ex.logs.stdout, ['hello\n'])
})

await check('1/0 gives a ZeroDivisionError error object', async () => {
  const errs = []
  const ex = await sbx.runCode('1/0', { onError: (e) => errs.push(e) })
  assert.equal(ex.error.name, 'ZeroDivisionError')
  assert.equal(ex.error.value, 'division by zero')
  assert.match(ex.error.traceback, /ZeroDivisionError/)
  assert.equal(errs.length, 1)
})

await check('a chart comes back as a png result', async () => {
  const ex = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()')
  assert.equal(ex.error, undefined)
  const png = ex.results.find((r) => r.png)
  assert.ok(png, 'no png result')
  assert.equal(Buffer.from(png.png, 'base64').subarray(0, 4).toString('latin1'), '\x89PNG')
})

await check('env vars apply to one execution only', async () => {
  const a = await sbx.runCode('import os; os.environ.get("CORRAL_E2B_VAR")', { envs: { CORRAL_E2B_VAR: 'yes' } })
  assert.equal(a.text, "'yes'")
  const b = await sbx.runCode('import os; os.environ.get("CORRAL_E2B_VAR")')
  assert.equal(b.results.length, 0)   // None: no result
})

await check('contexts can be created, used, restarted and removed', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python' })
  assert.equal(typeof ctx.id, 'string')
  assert.equal(ctx.language, 'python')
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await sbx.runCode('y = 5', { context: ctx })
  assert.equal((await sbx.runCode('y', { context: ctx })).text, '5')
  assert.equal((await sbx.runCode('y')).error?.name, 'NameError')   // the default context is separate
  await sbx.restartCodeContext(ctx)
  assert.equal((await sbx.runCode('y', { context: ctx })).error?.name, 'NameError')
  await sbx.removeCodeContext(ctx)
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await assert.rejects(sbx.runCode('1', { context: ctx }), (e) => e.name === 'NotFoundError')
})

await check('javascript context', async () => {
  const ex = await sbx.runCode('const z = 6 * 7; z', { language: 'javascript' })
  assert.equal(ex.text, '42')
})

await check('raw protocol: 400 for context_id with language, 404 unknown context, lines end with end_of_execution', async () => {
  const post = (b) => fetch(`${BASE}/execute`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(b) })
  assert.equal((await post({ code: '1', context_id: 'x', language: 'python' })).status, 400)
  assert.equal((await post({ code: '1', context_id: 'no-such-context' })).status, 404)
  const text = await (await post({ code: '40 + 2' })).text()
  assert.ok(!text.split('\n').slice(0, -1).some((l) => l.trim() === ''), 'a blank line')
  const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l))
  assert.equal(lines.at(-1).type, 'end_of_execution')
  assert.ok(lines.some((l) => l.type === 'result' && l.text === '42' && l.is_main_result === true))
})

await sbx.kill()
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
