// Fidelity: the probe against pi-ai 0.82.1, the client a Turn uses (issue 7).
//
//   node tests/fidelity/compare.mjs --probe <path to jr2-probe> [--only conformance|agreement] [--filter REGEX]
//                                   [--jobs N] [--markdown FILE]
//
// It starts one recording HTTP server on 127.0.0.1 and, one run at a time, points pi (pi-turn.mjs, a Turn's call)
// and the probe at it:
//
// 1. Request conformance: for a model of every API kind the probe speaks (and a few catalog providers whose
//    openai-completions shape differs), the first request pi sends and the first the probe sends are compared: method,
//    path and query, every header, and the JSON body as a whole. A difference passes only when ALLOWED_HEADERS names it
//    with its reason; the bodies must be equal (key order aside) once the session ids are normalized.
// 2. Outcome agreement: the recorder serves a scenario (tool call, text, length stop, 401, 403, 404, 429 then ok,
//    429 always, 529, 503, an error event after a 200, two stalls, a malformed stream) in each API's own wire format;
//    what pi's call ended with (stopReason, errorMessage) is set against the probe's outcome through EXPECTED. A
//    disagreement passes only when KNOWN_DISAGREEMENTS names it with its reason.
//
// --filter REGEX runs only the cases it matches (a debugging aid; the suite runs them all).
//
// Exit 0 when everything conforms and agrees, 1 otherwise. Only loopback is used; no real key is ever read (each
// child gets a clean environment with fake keys).
import { spawn } from "node:child_process";
import http from "node:http";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { formats } from "./wire.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
let FILTER = null; // --filter REGEX: only the cases (conformance: model; agreement: "<api> <scenario>") it matches

// ---------------------------------------------------------------------------------------------------------------
// The lists: every difference the test lets through, with its reason.

/** Headers whose presence or value may differ between pi's request and the probe's. */
export const ALLOWED_HEADERS = [
  {
    name: /^x-stainless-/,
    reason:
      "the OpenAI and Anthropic SDKs' telemetry (SDK version, OS, arch, Node.js version, retry count, SDK timeout); " +
      "they describe pi's client, and no provider reads them",
  },
  {
    name: /^user-agent$/,
    // Only the SDKs' own user-agents: a catalog model's static User-Agent (kimi-coding's `KimiCLI/1.5`) must match.
    pi: /^(OpenAI\/JS |AzureOpenAI\/JS |Anthropic\/JS |google-genai-sdk\/|aws-sdk-js\/|mistral-client-typescript\/)/,
    probe: /^jr2-probe\/\d/,
    reason: "names the client: `OpenAI/JS 6.26.0`, `Anthropic/JS 0.91.1`, `google-genai-sdk/...`, `aws-sdk-js/...` " +
      "for pi, `jr2-probe/<version>` for the probe",
  },
  {
    name: /^x-goog-api-client$/,
    reason: "the Google GenAI SDK's telemetry (SDK and Node.js versions), like user-agent",
  },
  {
    name: /^(amz-sdk-invocation-id|amz-sdk-request|x-amz-user-agent)$/,
    reason: "the AWS SDK's invocation id, attempt counter (`attempt=1; max=3`) and telemetry; Bedrock reads none of them",
  },
  {
    name: /^accept-encoding$/,
    reason: "undici's fetch asks for `gzip, deflate`; the probe asks for nothing, so the stream comes uncompressed " +
      "(no server sends a compressed stream unasked)",
  },
  {
    name: /^accept-language$/,
    reason: "undici's fetch default (`*`); no provider reads it",
  },
  {
    name: /^sec-fetch-mode$/,
    reason: "undici's fetch default (`cors`), a browser header; no provider reads it",
  },
  {
    name: /^content-length$/,
    reason: "the bodies are compared as JSON: key order (serde_json sorts keys) and the session ids change the length",
  },
  {
    name: /^cookie$/,
    kinds: ["mistral-conversations"],
    pi: "",
    reason: "the Mistral SDK sends an empty `cookie` header (no cookie at all); the probe sends none",
  },
  {
    name: /^accept$/,
    kinds: ["bedrock-converse-stream"],
    pi: null,
    probe: "*/*",
    reason: "the AWS SDK sends no `accept`; reqwest adds `accept: */*`, which means the same (RFC 9110 12.5.1: no " +
      "Accept header means any media type)",
  },
  {
    name: /^connection$/,
    reason: "undici says `keep-alive`; hyper keeps an HTTP/1.1 connection alive without saying so (the default)",
  },
];

/** Values replaced before comparing, in headers and in the body: they differ by nature. */
export const NORMALIZED = [
  {
    what: "session ids",
    reason:
      "pi sends the Turn's conversation id (a UUIDv7, `sessionId`) in `prompt_cache_key`, `session_id`, " +
      "`x-client-request-id`, `x-affinity`; the probe sends its own UUIDv7 in the same places. Both become " +
      "`<session-id>` (pi's value must be its sessionId)",
  },
  {
    what: "header name case",
    reason: "HTTP header names are case-insensitive (the SDKs write `User-Agent`, `X-Stainless-*`)",
  },
  {
    what: "JSON key order",
    reason: "objects are compared as objects (serde_json writes keys sorted; TypeBox writes `required` where it likes)",
  },
];

// ---------------------------------------------------------------------------------------------------------------
// The conformance cases: a model of every API kind, reached as a Turn reaches it.

const KEY = (name) => `fidelity-${name.toLowerCase().replaceAll("_", "-")}-0123456789`;

/** `base` is the recorder's origin, `http://127.0.0.1:<port>`. */
export function conformanceCases(base) {
  const catalog = (model, baseSuffix, keyEnv, extraEnv = {}) => ({
    name: model,
    model,
    format: undefined, // from the api kind
    pi: { model, baseUrl: baseSuffix === null ? undefined : base + baseSuffix },
    probe: ["--model", model, ...(baseSuffix === null ? [] : ["--gateway", base + baseSuffix]), "--api-key-env", keyEnv],
    env: { [keyEnv]: KEY(keyEnv), ...extraEnv },
  });
  return [
    {
      name: "custom vllm/Qwen/Qwen3-32B (no key, no maxTokens)",
      kind: "openai-completions",
      pi: { custom: { provider: "vllm", id: "Qwen/Qwen3-32B", baseUrl: `${base}/v1` } },
      // jr2's plan carries maxTokens as jr2 resolves it: 0 here (the by-hand default is 1024, on purpose).
      probe: ["--base-url", `${base}/v1`, "--model", "Qwen/Qwen3-32B", "--max-tokens", "0"],
      env: {},
    },
    {
      name: "custom vllm/Qwen/Qwen3-32B (key, maxTokens 1024)",
      kind: "openai-completions",
      pi: { custom: { provider: "vllm", id: "Qwen/Qwen3-32B", baseUrl: `${base}/v1`, apiKeyEnv: "VLLM_KEY", maxTokens: 1024 } },
      probe: ["--base-url", `${base}/v1`, "--model", "Qwen/Qwen3-32B", "--api-key-env", "VLLM_KEY", "--max-tokens", "1024"],
      env: { VLLM_KEY: KEY("VLLM_KEY") },
    },
    {
      // pi's compat detection reads the base URL as a string: a custom endpoint whose URL names api.openai.com gets
      // `prompt_cache_key`; one that names deepseek.com gets DeepSeek's shape.
      name: "custom openai/gpt-4.1 (base URL naming api.openai.com)",
      kind: "openai-completions",
      pi: { custom: { provider: "corp", id: "gpt-4.1", baseUrl: `${base}/api.openai.com/v1`, apiKeyEnv: "CORP_KEY", maxTokens: 4096 } },
      probe: ["--base-url", `${base}/api.openai.com/v1`, "--model", "gpt-4.1", "--api-key-env", "CORP_KEY", "--max-tokens", "4096"],
      env: { CORP_KEY: KEY("CORP_KEY") },
    },
    {
      name: "custom deepseek-chat (base URL naming deepseek.com)",
      kind: "openai-completions",
      pi: { custom: { provider: "corp", id: "deepseek-chat", baseUrl: `${base}/deepseek.com/v1`, apiKeyEnv: "CORP_KEY", maxTokens: 4096 } },
      probe: ["--base-url", `${base}/deepseek.com/v1`, "--model", "deepseek-chat", "--api-key-env", "CORP_KEY", "--max-tokens", "4096"],
      env: { CORP_KEY: KEY("CORP_KEY") },
    },
    { ...catalog("anthropic/claude-haiku-4-5", "", "ANTHROPIC_API_KEY"), kind: "anthropic-messages" },
    { ...catalog("anthropic/claude-opus-4-7", "", "ANTHROPIC_API_KEY"), kind: "anthropic-messages" },
    { ...catalog("openai/gpt-5-mini", "/v1", "OPENAI_API_KEY"), kind: "openai-responses" },
    { ...catalog("openai/gpt-5.1", "/v1", "OPENAI_API_KEY"), kind: "openai-responses" },
    {
      ...catalog("azure-openai-responses/gpt-5-mini", null, "AZURE_OPENAI_API_KEY", {
        AZURE_OPENAI_BASE_URL: `${base}/openai/v1`,
      }),
      kind: "azure-openai-responses",
    },
    { ...catalog("google/gemini-2.5-flash", "/v1beta", "GEMINI_API_KEY"), kind: "google-generative-ai" },
    { ...catalog("google/gemini-3-flash-preview", "/v1beta", "GEMINI_API_KEY"), kind: "google-generative-ai" },
    { ...catalog("google-vertex/gemini-2.5-flash", "", "GOOGLE_CLOUD_API_KEY"), kind: "google-vertex" },
    { ...catalog("mistral/mistral-small-latest", "", "MISTRAL_API_KEY"), kind: "mistral-conversations" },
    {
      ...catalog("amazon-bedrock/anthropic.claude-haiku-4-5-20251001-v1:0", "", "AWS_BEARER_TOKEN_BEDROCK", {
        AWS_BEDROCK_FORCE_HTTP1: "1",
      }),
      kind: "bedrock-converse-stream",
    },
    { ...catalog("groq/openai/gpt-oss-120b", "/openai/v1", "GROQ_API_KEY"), kind: "openai-completions" },
    { ...catalog("deepseek/deepseek-v4-flash", "", "DEEPSEEK_API_KEY"), kind: "openai-completions" },
    { ...catalog("openrouter/anthropic/claude-haiku-4.5", "/api/v1", "OPENROUTER_API_KEY"), kind: "openai-completions" },
    { ...catalog("together/moonshotai/Kimi-K2.6", "/v1", "TOGETHER_API_KEY"), kind: "openai-completions" },
    { ...catalog("xai/grok-4.3", "/v1", "XAI_API_KEY"), kind: "openai-completions" },
    // More shapes of the same kinds: catalog compat, static headers, thinking that cannot be turned off.
    { ...catalog("openai/gpt-4.1", "/v1", "OPENAI_API_KEY"), kind: "openai-responses" },
    { ...catalog("xai/grok-4.5", "/v1", "XAI_API_KEY"), kind: "openai-responses" },
    { ...catalog("opencode-go/grok-4.5", "/zen/go/v1", "OPENCODE_API_KEY"), kind: "openai-responses" },
    { ...catalog("fireworks/accounts/fireworks/models/deepseek-v4-flash", "/inference", "FIREWORKS_API_KEY"), kind: "anthropic-messages" },
    { ...catalog("kimi-coding/k3", "/coding", "KIMI_API_KEY"), kind: "anthropic-messages" },
    { ...catalog("minimax/MiniMax-M2.7", "/anthropic", "MINIMAX_API_KEY"), kind: "anthropic-messages" },
    { ...catalog("opencode/gemini-3-flash", "/zen/v1", "OPENCODE_API_KEY"), kind: "google-generative-ai" },
    { ...catalog("zai/glm-5.1", "/api/coding/paas/v4", "ZAI_API_KEY"), kind: "openai-completions" },
    { ...catalog("nvidia/meta/llama-3.1-70b-instruct", "/v1", "NVIDIA_API_KEY"), kind: "openai-completions" },
    { ...catalog("moonshotai/kimi-k2-0711-preview", "/v1", "MOONSHOT_API_KEY"), kind: "openai-completions" },
    { ...catalog("cerebras/gemma-4-31b", "/v1", "CEREBRAS_API_KEY"), kind: "openai-completions" },
    { ...catalog("openrouter/deepseek/deepseek-v3.2", "/api/v1", "OPENROUTER_API_KEY"), kind: "openai-completions" },
    { ...catalog("huggingface/MiniMaxAI/MiniMax-M2", "/v1", "HF_TOKEN"), kind: "openai-completions" },
    {
      ...catalog("cloudflare-ai-gateway/gpt-4", "/v1/acct/gw/openai", "CLOUDFLARE_API_KEY", {
        CLOUDFLARE_ACCOUNT_ID: "acct",
        CLOUDFLARE_GATEWAY_ID: "gw",
      }),
      kind: "openai-responses",
    },
    {
      ...catalog("cloudflare-ai-gateway/workers-ai/@cf/moonshotai/kimi-k2.5", "/v1/acct/gw/compat", "CLOUDFLARE_API_KEY", {
        CLOUDFLARE_ACCOUNT_ID: "acct",
        CLOUDFLARE_GATEWAY_ID: "gw",
      }),
      kind: "openai-completions",
    },
    { ...catalog("github-copilot/gpt-5-mini", "", "COPILOT_GITHUB_TOKEN"), kind: "openai-responses" },
    { ...catalog("github-copilot/claude-fable-5", "", "COPILOT_GITHUB_TOKEN"), kind: "openai-completions" },
    {
      ...catalog("cloudflare-workers-ai/@cf/google/gemma-4-26b-a4b-it", "/client/v4/accounts/fidelity/ai/v1", "CLOUDFLARE_API_KEY", {
        CLOUDFLARE_ACCOUNT_ID: "fidelity",
      }),
      kind: "openai-completions",
    },
  ];
}

/** `--sweep`: every model of the pinned catalog, each reached through a recorder base URL that keeps the catalog
 * URL's host and path in its path (`http://127.0.0.1:<port>/api.deepseek.com/...`), so pi's and the probe's
 * detections that read the base URL as a string see what they see on the direct route. Slow (about 1100 models). */
let SWEEP_CATALOG;
export function sweepCases(base) {
  SWEEP_CATALOG ??= JSON.parse(readFileSync(join(HERE, "../../probe/catalog/pi-ai-0.82.1.json"), "utf8"));
  const catalog = SWEEP_CATALOG;
  const keyEnvOf = (provider, api) =>
    provider === "anthropic"
      ? "ANTHROPIC_API_KEY"
      : api === "bedrock-converse-stream"
        ? "AWS_BEARER_TOKEN_BEDROCK"
        : (catalog.providers[provider]?.keyEnv ?? [])[0];
  const cases = [];
  for (const m of catalog.models) {
    if (m.api === "openai-codex-responses") continue; // needs an OAuth login file: the probe says unsupported
    const name = `${m.provider}/${m.id}`;
    const keyEnv = keyEnvOf(m.provider, m.api);
    if (!keyEnv) continue;
    const env = { [keyEnv]: KEY(keyEnv), CLOUDFLARE_ACCOUNT_ID: "acct", CLOUDFLARE_GATEWAY_ID: "gw" };
    let gateway;
    if (m.api === "azure-openai-responses") {
      env.AZURE_OPENAI_BASE_URL = `${base}/openai/v1`;
    } else if (m.api === "google-vertex") {
      gateway = base;
    } else {
      const url = new URL(m.baseUrl.replaceAll("{CLOUDFLARE_ACCOUNT_ID}", "acct").replaceAll("{CLOUDFLARE_GATEWAY_ID}", "gw"));
      gateway = `${base}/${url.host}${url.pathname === "/" ? "" : url.pathname}`;
    }
    if (m.api === "bedrock-converse-stream") env.AWS_BEDROCK_FORCE_HTTP1 = "1";
    cases.push({
      name,
      kind: m.api,
      pi: { model: name, baseUrl: gateway },
      probe: ["--model", name, ...(gateway ? ["--gateway", gateway] : []), "--api-key-env", keyEnv],
      env,
    });
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------------------------
// The agreement matrix.

/** The scenarios, in the order of the table. */
export const SCENARIOS = [
  ["tool", "a streamed tool call"],
  ["text", "a text answer"],
  ["length", "a length stop before any tool call"],
  ["401", "401 with the provider's error body"],
  ["403", "403"],
  ["404", "404 (model not found)"],
  ["429-then-ok", "429 (retry-after-ms: 20), then a tool call"],
  ["429-always", "429 on every request"],
  ["429-quota", "429 for an exhausted quota or spend limit (not retried)"],
  ["529", "529 overloaded on every request"],
  ["503", "503 on every request"],
  ["error-event", "200, then the API's error event in the stream"],
  ["error-event-sse", "200, then an error object framed as an SSE event (Gemini only)"],
  ["overloaded-event", "200, then an overload in the stream (Anthropic, Bedrock only)"],
  ["stall-headers", "no response headers (both give up after 2 s)"],
  ["stall-stream", "200 and the first event, then nothing (both give up after 2 s)"],
  ["malformed", "200 text/event-stream of garbage"],
];

/** The agreement cases: which conformance case each kind's runs copy. */
export const AGREEMENT_KINDS = [
  ["openai-completions", "custom vllm/Qwen/Qwen3-32B (key, maxTokens 1024)"],
  ["anthropic-messages", "anthropic/claude-haiku-4-5"],
  ["google-generative-ai", "google/gemini-2.5-flash"],
  ["google-vertex", "google-vertex/gemini-2.5-flash"],
  ["openai-responses", "openai/gpt-5-mini"],
  ["azure-openai-responses", "azure-openai-responses/gpt-5-mini"],
  ["mistral-conversations", "mistral/mistral-small-latest"],
  ["bedrock-converse-stream", "amazon-bedrock/anthropic.claude-haiku-4-5-20251001-v1:0"],
];

/** pi's stopReason → the probe outcomes that agree with it. */
const ERROR_OUTCOMES = ["key_refused", "unavailable", "http", "protocol", "unreachable", "tls", "custodian_refused"];
export function agrees(pi, probe) {
  switch (pi.stopReason) {
    case "toolUse":
      return probe.outcome === "ok";
    case "stop":
      return probe.outcome === "text";
    case "length":
      return probe.outcome === "length";
    case "aborted":
      return probe.outcome === "timeout";
    case "error":
      // An error of a Turn is an error of the preflight: any outcome at the error level but length and timeout
      // (busy is one for Gemini and Vertex).
      return ERROR_OUTCOMES.includes(probe.outcome) || (probe.outcome === "busy" && probe.level === "error");
    default:
      return false;
  }
}

export const EXPECTED = [
  ["toolUse", "ok"],
  ["stop", "text"],
  ["length", "length"],
  ["error", `an error-level outcome: ${ERROR_OUTCOMES.join(", ")}, or busy where busy is an error (Gemini, Vertex)`],
  ["aborted", "timeout"],
];

/** Disagreements the contract makes on purpose. `kinds` undefined: every kind. */
export const KNOWN_DISAGREEMENTS = [
  {
    scenarios: ["429-then-ok"],
    pi: "error",
    probe: "ok",
    kinds: [
      "openai-completions",
      "anthropic-messages",
      "google-generative-ai",
      "google-vertex",
      "openai-responses",
      "azure-openai-responses",
      "mistral-conversations",
    ],
    reason:
      "the probe retries 429, 529 and 503 (contract section 4: a busy provider must not fail the converge); a Turn " +
      "makes one try, so this one call of pi errors. A Turn's next call would likely pass, as the probe's did",
  },
  {
    scenarios: ["429-always", "529", "overloaded-event"],
    pi: "error",
    probe: "busy",
    kinds: [
      "openai-completions",
      "anthropic-messages",
      "openai-responses",
      "azure-openai-responses",
      "mistral-conversations",
      "bedrock-converse-stream",
    ],
    reason:
      "busy on every try is a warning, not an error (contract section 4): rate limits and overload pass; a Turn " +
      "that meets them fails that call. For Gemini and Vertex busy is an error, and agrees",
  },
  {
    scenarios: ["error-event-sse"],
    pi: "stop",
    probe: "http",
    kinds: ["google-generative-ai", "google-vertex"],
    reason:
      "@google/genai 1.52.0 throws on an error inside a 200 only when it arrives as a bare JSON chunk (the " +
      "error-event row); framed as an SSE event it reads as a chunk with no candidates, and pi's call ends `stop` " +
      "with no content at all: the Turn ends with an empty answer, not a tool call. The probe reports the " +
      "provider's error, which is the truthful answer for a preflight",
  },
];

// ---------------------------------------------------------------------------------------------------------------
// The recorder.

class Recorder {
  constructor() {
    this.requests = [];
    this.format = null;
    this.scenario = "tool";
    this.open = new Set();
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 1000;
  }
  async start() {
    await new Promise((ok) => this.server.listen(0, "127.0.0.1", ok));
    this.base = `http://127.0.0.1:${this.server.address().port}`;
  }
  reset(format, scenario) {
    for (const res of this.open) res.destroy();
    this.open.clear();
    this.requests = [];
    this.format = format;
    this.scenario = scenario;
  }
  handle(req, res) {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const n = this.requests.length;
      const headers = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
      this.requests.push({
        method: req.method,
        url: req.url,
        httpVersion: req.httpVersion,
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      this.open.add(res);
      res.on("close", () => this.open.delete(res));
      res.on("error", () => {});
      const format = formats[this.format];
      try {
        if (!format) {
          res.writeHead(400, { "content-type": "application/json" });
          res.end('{"error":{"message":"the recorder has no wire for this kind","type":"invalid_request_error"}}');
        } else {
          serve(format, this.scenario, n, req, res);
        }
      } catch (e) {
        console.error("recorder:", e);
        res.destroy();
      }
    });
  }
  close() {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections?.();
    this.server.close();
  }
}

/** Serves `scenario` in `format`'s wire; `n` is the request's index in this run. */
function serve(format, scenario, n, req, res) {
  const retryable = { "retry-after-ms": "20", "retry-after": "0" };
  const error = (status, extra = {}) => {
    const { headers, body } = format.error(status);
    res.writeHead(status, { "content-type": "application/json", ...headers, ...extra });
    res.end(body);
  };
  const stream = (events, { end = true } = {}) => {
    res.writeHead(200, { "content-type": format.contentType, "cache-control": "no-cache" });
    res.flushHeaders();
    for (const e of events) res.write(e);
    if (end) res.end();
  };
  switch (scenario) {
    case "tool":
      return stream(format.tool());
    case "text":
      return stream(format.text());
    case "length":
      return stream(format.length());
    case "401":
    case "403":
    case "404":
    case "503":
      return error(Number(scenario), scenario === "503" ? retryable : {});
    case "529":
      return error(529, retryable);
    case "429-always":
      return error(429, retryable);
    case "429-quota": {
      const { headers, body } = format.quota();
      res.writeHead(429, { "content-type": "application/json", ...headers });
      return res.end(body);
    }
    case "429-then-ok":
      return n === 0 ? error(429, retryable) : stream(format.tool());
    case "error-event":
      return stream(format.errorEvent());
    case "error-event-sse":
      return stream(format.errorEventSse());
    case "overloaded-event":
      return stream(format.overloadedEvent());
    case "stall-headers":
      return; // never answers
    case "stall-stream":
      return stream(format.first(), { end: false });
    case "malformed":
      return stream(format.malformed());
    default:
      throw new Error(`unknown scenario ${scenario}`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The two clients.

function cleanEnv(extra) {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LANG: "C.UTF-8", ...extra };
}

function run(cmd, args, env, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (e) => resolve({ code: null, signal: null, stdout: "", stderr: String(e) }));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

async function runPi(request, env) {
  const r = await run(process.execPath, [join(HERE, "pi-turn.mjs"), JSON.stringify(request)], cleanEnv(env), 60_000);
  try {
    return JSON.parse(r.stdout.trim().split("\n").pop());
  } catch {
    return { stopReason: "harness-failure", errorMessage: `pi-turn.mjs exited ${r.code ?? r.signal}: ${r.stderr.slice(0, 500)}` };
  }
}

async function runProbe(probe, args, env) {
  const r = await run(probe, ["check", ...args, "-o", "json"], cleanEnv(env), 90_000);
  try {
    const verdict = JSON.parse(r.stdout);
    return verdict.models[0];
  } catch {
    return { outcome: "harness-failure", error: `jr2-probe exited ${r.code ?? r.signal}: ${r.stderr.slice(0, 500)}` };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Comparing two requests.

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** The request as facts: lowercased headers (session ids normalized), the parsed body, the path and query. */
function normalize(request, sessionId) {
  const problems = [];
  const sessionValue = (v) => {
    if (typeof v !== "string") return v;
    const ids = v.match(UUID) ?? [];
    for (const id of ids) {
      if (sessionId && id !== sessionId) problems.push(`a UUID that is not the Turn's sessionId: ${id}`);
    }
    return v.replace(UUID, "<session-id>");
  };
  const headers = {};
  for (const [name, value] of request.headers) {
    const key = name.toLowerCase();
    const v = /^amz-sdk-invocation-id$/.test(key) ? value : sessionValue(value);
    headers[key] = key in headers ? `${headers[key]}, ${v}` : v;
  }
  let body;
  try {
    body = JSON.parse(request.body, (_k, v) => sessionValue(v));
  } catch {
    body = { "<not JSON>": request.body };
  }
  const url = new URL(request.url, "http://recorder");
  return { method: request.method, path: url.pathname, query: url.search, headers, body, problems };
}

/** Every leaf path where two JSON values differ. */
function diffJson(a, b, path = "") {
  if (isDeepStrictEqual(a, b)) return [];
  const isObj = (x) => x !== null && typeof x === "object" && !Array.isArray(x);
  if (isObj(a) && isObj(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((k) => diffJson(a[k], b[k], path ? `${path}.${k}` : k));
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    return a.flatMap((x, i) => diffJson(x, b[i], `${path}[${i}]`));
  }
  return [{ path: path || "(body)", pi: a, probe: b }];
}

const show = (v) => (v === undefined ? "(absent)" : JSON.stringify(v));

// A rule's `pi`/`probe`: undefined (any value), null (the header is absent), a string, or a RegExp.
const matches = (want, got) =>
  want === undefined || (want === null ? got === undefined : want instanceof RegExp ? got !== undefined && want.test(got) : want === got);

function compareRequests(pi, probe, kind) {
  const failures = [];
  const allowed = [];
  if (pi.method !== probe.method) failures.push(`method: pi ${pi.method}, probe ${probe.method}`);
  if (pi.path !== probe.path) failures.push(`path: pi ${pi.path}, probe ${probe.path}`);
  if (pi.query !== probe.query) failures.push(`query: pi ${show(pi.query)}, probe ${show(probe.query)}`);
  const names = new Set([...Object.keys(pi.headers), ...Object.keys(probe.headers)]);
  for (const name of [...names].sort()) {
    const a = pi.headers[name];
    const b = probe.headers[name];
    if (a === b) continue;
    const rule = ALLOWED_HEADERS.find(
      (r) =>
        r.name.test(name) &&
        (!r.kinds || r.kinds.includes(kind)) &&
        matches(r.pi, a) &&
        matches(r.probe, b),
    );
    const text = `header ${name}: pi ${show(a)}, probe ${show(b)}`;
    if (rule) allowed.push({ text, name, rule });
    else failures.push(text);
  }
  for (const d of diffJson(pi.body, probe.body)) {
    failures.push(`body ${d.path}: pi ${show(d.pi)}, probe ${show(d.probe)}`);
  }
  for (const p of [...pi.problems]) failures.push(`pi: ${p}`);
  return { failures, allowed };
}

// The table's columns: what each aspect is, read from a normalized request.
const get = (o, path) => path.split(".").reduce((x, k) => (x == null ? undefined : x[k]), o);
const TOKEN_FIELDS = ["max_tokens", "max_completion_tokens", "max_output_tokens", "generationConfig.maxOutputTokens", "inferenceConfig.maxTokens"];
const THINKING_FIELDS = ["thinking", "reasoning", "reasoning_effort", "generationConfig.thinkingConfig", "additionalModelRequestFields", "prompt_mode", "output_config"];
const ASPECTS = {
  "method path?query": (r) => `${r.method} ${r.path}${r.query}`,
  auth: (r) => {
    for (const h of ["authorization", "x-api-key", "api-key", "x-goog-api-key", "cf-aig-authorization"]) {
      if (r.headers[h] !== undefined) {
        const scheme = /authorization$/.test(h) ? ` ${r.headers[h].split(" ")[0]}` : "";
        return `${h}${scheme}`;
      }
    }
    return "(none)";
  },
  "fixed headers": (r, kind) => {
    const skip = /^(authorization|x-api-key|api-key|x-goog-api-key|cf-aig-authorization|host|content-type|accept)$/;
    const names = Object.keys(r.headers).filter((n) => !skip.test(n) && !ALLOWED_HEADERS.some((a) => (!a.kinds || a.kinds.includes(kind)) && a.name.test(n)));
    return names.sort().map((n) => `${n}: ${r.headers[n]}`).join("; ") || "-";
  },
  stream: (r) =>
    r.body.stream !== undefined ? `stream: ${r.body.stream}` : /:streamGenerateContent$/.test(r.path) ? "alt=sse" : /converse-stream$/.test(r.path) ? "converse-stream" : "(none)",
  tools: (r) => {
    const t = r.body.tools?.[0] ?? r.body.toolConfig?.tools?.[0];
    if (!t) return "(none)";
    if (t.function) return `{type, function{${Object.keys(t.function).sort().join(",")}}}`;
    if (t.functionDeclarations) return `functionDeclarations[{${Object.keys(t.functionDeclarations[0]).sort().join(",")}}]`;
    if (t.toolSpec) return `toolSpec{${Object.keys(t.toolSpec).sort().join(",")}}`;
    return `{${Object.keys(t).sort().join(",")}}`;
  },
  tool_choice: (r) => show(r.body.tool_choice ?? r.body.toolConfig?.toolChoice ?? get(r.body, "toolConfig.functionCallingConfig")),
  "token field": (r) => {
    const f = TOKEN_FIELDS.find((f) => get(r.body, f) !== undefined);
    return f ? `${f}: ${get(r.body, f)}` : "(none)";
  },
  thinking: (r) => THINKING_FIELDS.filter((f) => get(r.body, f) !== undefined).map((f) => `${f}: ${JSON.stringify(get(r.body, f))}`).join("; ") || "(none)",
  system: (r) => {
    if (r.body.systemInstruction) return `systemInstruction (role ${r.body.systemInstruction.role})`;
    if (r.body.system) return "system[]";
    const first = (r.body.messages ?? r.body.input ?? [])[0];
    return first ? `${r.body.input ? "input" : "messages"}[0].role ${first.role}` : "(none)";
  },
};

// ---------------------------------------------------------------------------------------------------------------
// The two parts. Each case runs against a recorder of its own (its own port), pi first, then the probe; JOBS cases
// run at once.

let JOBS = 4;

async function parallel(items, f) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await f(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(JOBS, items.length) }, worker));
  return results;
}

/** Runs pi, then the probe, against a fresh recorder serving `scenario` in `format`; returns both results and the
 * requests each sent. `build(base)` gives the case for the recorder's base URL. */
async function runBoth(build, format, scenario, { piExtra = {}, probeExtra = [] } = {}) {
  const recorder = new Recorder();
  await recorder.start();
  try {
    const c = build(recorder.base);
    recorder.reset(format, scenario);
    const pi = await runPi({ ...c.pi, ...piExtra }, c.env);
    const piRequests = recorder.requests;
    recorder.reset(format, scenario);
    const pr = await runProbe(PROBE, [...c.probe, ...probeExtra], c.env);
    return { c, pi, pr, piRequests, probeRequests: recorder.requests };
  } finally {
    recorder.close();
  }
}

let PROBE;

let CASES = conformanceCases;

async function conformance(out) {
  const names = CASES("http://127.0.0.1:0")
    .map((c) => c.name)
    .filter((n) => !FILTER || FILTER.test(n));
  const rows = await parallel(names, async (name) => {
    const build = (base) => CASES(base).find((x) => x.name === name);
    const kind = build("http://127.0.0.1:0").kind;
    const { pi, pr, piRequests, probeRequests } = await runBoth(build, formats[kind] ? kind : undefined, "tool");
    const row = { name, kind, cells: {}, failures: [], allowed: [] };
    if (!piRequests.length || !probeRequests.length) {
      row.failures.push(
        `no request captured (pi sent ${piRequests.length}: ${pi.stopReason} ${pi.errorMessage ?? ""}; probe sent ${probeRequests.length}: ${pr.outcome} ${pr.error ?? ""})`,
      );
      return row;
    }
    const a = normalize(piRequests[0], pi.sessionId);
    const b = normalize(probeRequests[0], null);
    const { failures, allowed } = compareRequests(a, b, kind);
    row.failures.push(...failures);
    row.allowed = allowed;
    for (const [aspect, f] of Object.entries(ASPECTS)) {
      const va = f(a, kind);
      const vb = f(b, kind);
      row.cells[aspect] = va === vb ? va : `pi ${va} / probe ${vb}`;
      row.cells[`${aspect}?`] = va === vb;
    }
    // The recorder answered with a tool call: both must have read it.
    if (pi.stopReason !== "toolUse") row.failures.push(`pi's call ended ${pi.stopReason}: ${pi.errorMessage}`);
    if (pr.outcome !== "ok") row.failures.push(`the probe's check ended ${pr.outcome}: ${pr.error}`);
    return row;
  });

  const failed = rows.filter((r) => r.failures.length);
  out.push("## Request conformance", "");
  out.push("| model | api | method path?query | auth | fixed headers | stream | tools | tool_choice | token field | thinking | system | allowed | result |");
  out.push("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  const cell = (row, aspect) => {
    const v = row.cells[aspect];
    if (v === undefined) return "?";
    return (row.cells[`${aspect}?`] ? "" : "**≠** ") + "`" + v.replaceAll("|", "\\|") + "`";
  };
  for (const row of rows) {
    const aspects = Object.keys(ASPECTS).map((a) => cell(row, a));
    out.push(`| ${row.name} | ${row.kind} | ${aspects.join(" | ")} | ${row.allowed.length} | ${row.failures.length ? "**FAIL**" : "same"} |`);
  }
  out.push("");
  out.push(`Conformance: **${rows.length - failed.length} of ${rows.length}** models: pi and the probe send the same request, the listed differences aside.`, "");
  const seen = new Map();
  for (const row of rows) for (const x of row.allowed) seen.set(x.rule, [...(seen.get(x.rule) ?? []), x.name]);
  out.push("Allowed differences (headers), with the header names seen in this run:", "");
  for (const rule of ALLOWED_HEADERS) {
    const names = [...new Set(seen.get(rule) ?? [])].sort();
    const where = rule.kinds ? ` (${rule.kinds.join(", ")} only)` : "";
    out.push(`- \`${rule.name.source}\`${where}: ${rule.reason}. Seen: ${names.length ? names.join(", ") : "none"}`);
  }
  out.push("", "Normalized before comparing:", "");
  for (const n of NORMALIZED) out.push(`- ${n.what}: ${n.reason}`);
  out.push("");
  for (const row of failed) out.push(`FAIL ${row.name}:`, ...row.failures.map((f) => `  - ${f}`), "");
  return failed.length === 0;
}

async function agreement(out) {
  const jobs = [];
  for (const [kind, caseName] of AGREEMENT_KINDS) {
    for (const [scenario] of SCENARIOS) {
      if (FILTER && !FILTER.test(`${kind} ${scenario}`)) continue;
      if (scenario === "overloaded-event" && !formats[kind].overloadedEvent) continue;
      if (scenario === "error-event-sse" && !formats[kind].errorEventSse) continue;
      if (scenario === "429-quota" && !formats[kind].quota) continue;
      jobs.push({ kind, caseName, scenario });
    }
  }
  const rows = await parallel(jobs, async ({ kind, caseName, scenario }) => {
    const stall = scenario.startsWith("stall");
    const build = (base) => conformanceCases(base).find((x) => x.name === caseName);
    const { pi, pr } = await runBoth(build, kind, scenario, {
      piExtra: { abortAfterMs: stall ? 2000 : 30_000 },
      probeExtra: ["--timeout", stall ? "2s" : "30s"],
    });
    let verdict = "agree";
    let known;
    if (!agrees(pi, pr)) {
      known = KNOWN_DISAGREEMENTS.find(
        (d) => d.scenarios.includes(scenario) && d.pi === pi.stopReason && d.probe === pr.outcome && (!d.kinds || d.kinds.includes(kind)),
      );
      verdict = known ? "listed" : "**DISAGREE**";
    }
    return { kind, scenario, pi, pr, verdict, known };
  });
  const clip = (s, n = 70) => {
    const t = String(s ?? "").replace(/\s+/g, " ").replaceAll("|", "\\|");
    return t.length > n ? `${t.slice(0, n - 1)}…` : t;
  };
  out.push("## Outcome agreement", "");
  out.push("| api | scenario | pi's call ended | pi's errorMessage | probe outcome (level) | probe error | |");
  out.push("|---|---|---|---|---|---|---|");
  for (const r of rows) {
    const piEnd = r.pi.stopReason === "toolUse" ? `toolUse (${r.pi.toolCalls.join(",")})` : r.pi.stopReason;
    out.push(
      `| ${r.kind} | ${r.scenario} | ${piEnd} | ${clip(r.pi.errorMessage)} | ${r.pr.outcome} (${r.pr.level ?? "?"}) | ${clip(r.pr.error)} | ${r.verdict} |`,
    );
  }
  const agree = rows.filter((r) => r.verdict === "agree").length;
  const listed = rows.filter((r) => r.verdict === "listed");
  const unlisted = rows.filter((r) => r.verdict === "**DISAGREE**");
  out.push("");
  out.push(
    `Agreement: **${agree} of ${rows.length}** agree; ${listed.length} disagree as listed below; ${unlisted.length} disagree unlisted.`,
    "",
  );
  out.push("Expected correspondence (pi's stopReason → the probe's outcome):", "");
  for (const [pi, probe] of EXPECTED) out.push(`- ${pi} → ${probe}`);
  out.push("", "Listed disagreements, with the rows they cover:", "");
  for (const d of KNOWN_DISAGREEMENTS) {
    const covered = listed.filter((r) => r.known === d).map((r) => `${r.kind} ${r.scenario}`);
    out.push(`- pi ${d.pi}, probe ${d.probe} (${d.scenarios.join(", ")}): ${d.reason}. Rows: ${covered.length ? covered.join("; ") : "none"}`);
  }
  out.push("");
  for (const r of unlisted) {
    out.push(`DISAGREE ${r.kind} ${r.scenario}: pi ${r.pi.stopReason} (${r.pi.errorMessage ?? r.pi.toolCalls?.join(",") ?? ""}), probe ${r.pr.outcome} (${r.pr.error ?? ""})`);
  }
  if (unlisted.length) out.push("");
  return unlisted.length === 0;
}

// ---------------------------------------------------------------------------------------------------------------

async function main() {
  const args = process.argv.slice(2);
  const opt = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  PROBE = opt("--probe") ?? process.env.JR2_PROBE;
  if (!PROBE) {
    console.error(
      "usage: compare.mjs --probe <path to jr2-probe> [--only conformance|agreement] [--filter REGEX] [--jobs N] [--markdown FILE]",
    );
    process.exit(2);
  }
  const only = opt("--only");
  if (opt("--filter")) FILTER = new RegExp(opt("--filter"));
  if (opt("--jobs")) JOBS = Math.max(1, Number(opt("--jobs")) || 1);
  if (args.includes("--sweep")) CASES = sweepCases;
  const started = Date.now();
  const out = [];
  let ok = true;
  if (!only || only === "conformance") ok = (await conformance(out)) && ok;
  if (!only || only === "agreement") ok = (await agreement(out)) && ok;
  const text = out.join("\n");
  process.stdout.write(text + "\n");
  if (opt("--markdown")) writeFileSync(opt("--markdown"), text + "\n");
  process.stdout.write(`fidelity: ${ok ? "PASS" : "FAIL"} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  process.exit(ok ? 0 : 1);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
