// The official MCP TypeScript SDK against corral: `corral mcp` over stdio
// and `corral serve` at /mcp over Streamable HTTP.
// Usage: CORRAL=/path/to/corral [BASE=http://127.0.0.1:PORT] node mcp-check.mjs
// Ends with "N passed, N failed"; exit status 1 if anything failed.
import assert from 'node:assert/strict'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

let passed = 0, failed = 0
async function check(name, fn) {
  try { await fn(); passed++; console.log(`ok   ${name}`) }
  catch (e) { failed++; console.log(`FAIL ${name}: ${e?.stack ?? e}`) }
}
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('')

async function exercise(label, transport) {
  const client = new Client({ name: 'corral-test', version: '1.0.0' })
  await client.connect(transport)
  await check(`${label}: tools are listed with their schemas`, async () => {
    const { tools } = await client.listTools()
    const names = tools.map((t) => t.name).sort()
    assert.deepEqual(names, ['list_files', 'read_file', 'reset', 'run_bash', 'run_javascript',
      'run_python', 'write_file'])
    for (const t of tools) assert.equal(t.inputSchema.type, 'object')
    assert.ok(tools.find((t) => t.name === 'run_python').outputSchema)
  })
  await check(`${label}: state persists (x = 6*7, then print(x))`, async () => {
    // callTool validates structuredContent against the declared outputSchema
    const a = await client.callTool({ name: 'run_python', arguments: { code: 'x = 6*7' } })
    assert.equal(a.isError, false)
    const b = await client.callTool({ name: 'run_python', arguments: { code: 'print(x)' } })
    assert.match(text(b), /^42\n/)
    assert.equal(b.structuredContent.status, 'ok')
    assert.equal(b.structuredContent.stdout, '42\n')
  })
  await check(`${label}: a matplotlib chart comes back as an image`, async () => {
    const r = await client.callTool({ name: 'run_python', arguments: {
      code: 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()' } })
    const img = r.content.find((c) => c.type === 'image')
    assert.ok(img, 'no image content')
    assert.equal(img.mimeType, 'image/png')
    assert.equal(Buffer.from(img.data, 'base64').subarray(1, 4).toString(), 'PNG')
  })
  await check(`${label}: 1/0 is a result with isError and the traceback`, async () => {
    const r = await client.callTool({ name: 'run_python', arguments: { code: '1/0' } })
    assert.equal(r.isError, true)
    assert.match(text(r), /ZeroDivisionError: division by zero/)
    assert.equal(r.structuredContent.error.category, 'runtime_error')
  })
  await check(`${label}: a timeout is reported and the connection stays usable`, async () => {
    const r = await client.callTool({ name: 'run_python', arguments: { code: 'while True: pass', timeout_s: 1 } })
    assert.equal(r.isError, true)
    assert.equal(r.structuredContent.status, 'timeout')
    const after = await client.callTool({ name: 'run_python', arguments: { code: 'x + 1' } })
    assert.match(text(after), /^43\n/)
  })
  await check(`${label}: files, bash and javascript tools`, async () => {
    await client.callTool({ name: 'write_file', arguments: { path: 'd/in.txt', content: 'hello' } })
    const ls = await client.callTool({ name: 'list_files', arguments: { path: 'd' } })
    assert.match(text(ls), /in\.txt/)
    const rd = await client.callTool({ name: 'read_file', arguments: { path: 'd/in.txt' } })
    assert.equal(text(rd), 'hello')
    const py = await client.callTool({ name: 'run_python', arguments: { code: 'print(open("d/in.txt").read().upper())' } })
    assert.match(text(py), /^HELLO/)
    const sh = await client.callTool({ name: 'run_bash', arguments: { command: 'X=5; echo $((X*2))' } })
    assert.match(text(sh), /^10\n/)
    const js = await client.callTool({ name: 'run_javascript', arguments: { code: 'const y = 7; y * 6' } })
    assert.match(text(js), /^42\n/)
    const reset = await client.callTool({ name: 'reset', arguments: { language: 'python' } })
    assert.equal(reset.isError, false)
    const gone = await client.callTool({ name: 'run_python', arguments: { code: 'x' } })
    assert.equal(gone.isError, true)
    assert.match(text(gone), /NameError/)
  })
  await check(`${label}: invalid params and unknown tools are JSON-RPC errors`, async () => {
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /-32602|Invalid params|unknown tool/i)
    await assert.rejects(client.callTool({ name: 'run_python', arguments: { code: 5 } }), /-32602|Invalid params/i)
  })
  await client.close()
}

const corral = process.env.CORRAL
await exercise('stdio', new StdioClientTransport({ command: corral, args: ['mcp', '--timeout', '20'], stderr: 'ignore' }))
if (process.env.BASE) {
  await exercise('http', new StreamableHTTPClientTransport(new URL(`${process.env.BASE}/mcp`)))
}
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
