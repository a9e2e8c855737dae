// proxy-rules.mjs: runs each row of probe/tests/fixtures/undici7-proxy-rules.json through undici 7's own
// EnvHttpProxyAgent, and each row of pi-proxy-rules.json through pi-ai's own resolver, and fails on any row whose
// proxy differs from the row's `via`. Nothing is connected: the three
// agents it holds (direct, http proxy, https proxy) have their dispatch replaced by one that notes which was picked.
//
//   node tests/fidelity/proxy-rules.mjs [path/to/undici/package]   (default: tests/fidelity/node_modules/undici)
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const undiciDir = path.resolve(process.argv[2] ?? path.join(here, 'node_modules', 'undici'))
const require = createRequire(path.join(undiciDir, 'package.json'))
const { version } = require('./package.json')
const { EnvHttpProxyAgent } = require('./index.js')
const symbols = require('./lib/core/symbols.js')
const table = JSON.parse(readFileSync(path.join(here, '..', '..', 'probe', 'tests', 'fixtures', 'undici7-proxy-rules.json'), 'utf8'))

const VARS = ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY', 'ALL_PROXY', 'all_proxy', 'REQUEST_METHOD']
process.removeAllListeners('warning')
process.on('warning', () => {})

function pick (env, url) {
  for (const name of VARS) delete process.env[name]
  Object.assign(process.env, env)
  let agent
  try {
    agent = new EnvHttpProxyAgent()
  } catch {
    return 'unusable'
  }
  let picked = null
  for (const key of [symbols.kNoProxyAgent, symbols.kHttpProxyAgent, symbols.kHttpsProxyAgent]) {
    const a = agent[key]
    a.dispatch = function () { picked = this; return true }
  }
  const { origin, pathname } = new URL(url)
  agent.dispatch({ origin, path: pathname, method: 'GET' }, { onError () {}, onConnect () {}, onHeaders () {}, onData () {}, onComplete () {} })
  if (picked === agent[symbols.kNoProxyAgent]) return 'direct'
  return picked?.[symbols.kProxy]?.uri ?? 'nothing picked'
}

let failed = 0
for (const row of table.rows) {
  const got = pick(row.env, row.url)
  if (got !== row.via) {
    failed++
    console.log(`FAIL ${row.rule}: ${JSON.stringify(row.env)} ${row.url}: undici ${version} picks ${got}, the table says ${row.via}`)
  }
}
console.log(`proxy rules against undici ${version}: ${table.rows.length - failed} passed, ${failed} failed`)

// The rules of pi-ai's own resolver (Bedrock's and Codex's clients): probe/tests/fixtures/pi-proxy-rules.json through
// pi-ai's resolveHttpProxyUrlForTarget. Nothing is connected: it only returns a URL, or throws.
const piTable = JSON.parse(readFileSync(path.join(here, '..', '..', 'probe', 'tests', 'fixtures', 'pi-proxy-rules.json'), 'utf8'))
const pi = await import(path.join(here, 'node_modules', '@earendil-works', 'pi-ai', 'dist', 'utils', 'node-http-proxy.js'))
let piFailed = 0
for (const row of piTable.rows) {
  for (const name of VARS) delete process.env[name]
  Object.assign(process.env, row.env)
  let got
  try {
    got = pi.resolveHttpProxyUrlForTarget(row.url)?.href ?? 'direct'
  } catch {
    got = 'unusable'
  }
  if (got !== row.via) {
    piFailed++
    console.log(`FAIL ${row.rule}: ${JSON.stringify(row.env)} ${row.url}: pi-ai picks ${got}, the table says ${row.via}`)
  }
}
console.log(`proxy rules against pi-ai ${piTable.pi}: ${piTable.rows.length - piFailed} passed, ${piFailed} failed`)
process.exit(failed || piFailed ? 1 : 0)
