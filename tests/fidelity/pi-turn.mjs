// One model call of a Turn, made with pi-ai 0.82.1 exactly as a Turn makes it (research/pi-requests.md, section 0):
// `models.streamSimple(model, context, options)` on the registry (pi's built-in catalog, plus one custom
// openai-completions provider as jr2 builds `harness.provider`), with the probe's system prompt, user message and one
// tool `probe`, and no options but `sessionId` and the abort `signal`. No `apiKey` is passed: the key comes from the
// provider's auth (its env var), as in a Turn.
//
//   node pi-turn.mjs '<request JSON>'     prints one JSON line: what the call ended with
//
// The request:
//   {"model": "anthropic/claude-haiku-4-5", "baseUrl": "http://127.0.0.1:8080"}   a catalog model, its baseUrl
//        replaced (a harness.catalog gateway); omit baseUrl to keep the catalog's (Azure: AZURE_OPENAI_BASE_URL)
//   {"custom": {"provider": "vllm", "id": "Qwen/Qwen3-32B", "baseUrl": "http://127.0.0.1:8080/v1",
//               "apiKeyEnv": "VLLM_KEY", "maxTokens": 0, "contextWindow": 0}}          harness.provider
//   "abortAfterMs": N     abort the call after N ms (a Turn's abort signal), for stalls
//
// The output: {"stopReason", "errorMessage", "toolCalls": [names], "text", "api", "baseUrl", "sessionId"}.
import { StringEnum, Type, createProvider, uuidv7 } from "@earendil-works/pi-ai";
import { openAICompletionsApi } from "@earendil-works/pi-ai/api/openai-completions.lazy";
import { builtinModels } from "@earendil-works/pi-ai/providers/all";

// The probe's words (probe/src/prompt.rs; research/pi-requests.md, section 0).
export const SYSTEM = "You check that this model can call tools.";
export const USER = 'Call the probe tool now with status "ready".';
export const TOOL = {
  name: "probe",
  description: "Report that this model can call tools. Call it once.",
  parameters: Type.Object({
    status: StringEnum(["ready"], { description: 'Always "ready".' }),
  }),
};

/** jr2's `harness.provider`: one openai-completions provider, its model built with `reasoning: true`, `input:
 * ["text"]`, contextWindow and maxTokens as configured else 0, its auth the configured key else `unused`. */
function customProvider({ provider, id, baseUrl, apiKeyEnv, maxTokens, contextWindow }) {
  const model = {
    id,
    name: id,
    api: "openai-completions",
    provider,
    baseUrl,
    reasoning: true,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: contextWindow ?? 0,
    maxTokens: maxTokens ?? 0,
  };
  return createProvider({
    id: provider,
    name: provider,
    baseUrl,
    auth: {
      apiKey: {
        name: `${provider} API key`,
        resolve: async () => {
          const key = apiKeyEnv ? process.env[apiKeyEnv] : undefined;
          return { auth: { apiKey: key || "unused" }, source: key ? apiKeyEnv : "none" };
        },
      },
    },
    models: [model],
    api: openAICompletionsApi(),
  });
}

/** The registry and the model a Turn resolves for `request` (see the head of this file). */
export function resolveModel(request) {
  const models = builtinModels();
  let model;
  if (request.custom) {
    models.setProvider(customProvider(request.custom));
    model = models.getModel(request.custom.provider, request.custom.id);
  } else {
    const at = request.model.indexOf("/");
    const provider = request.model.slice(0, at);
    const id = request.model.slice(at + 1);
    model = models.getModel(provider, id);
    if (!model) throw new Error(`${request.model} is not in pi's catalog`);
    if (request.baseUrl !== undefined) model = { ...model, baseUrl: request.baseUrl };
  }
  return { models, model };
}

export async function piTurn(request) {
  const { models, model } = resolveModel(request);
  const context = {
    systemPrompt: SYSTEM,
    messages: [{ role: "user", content: [{ type: "text", text: USER }], timestamp: Date.now() }],
    tools: [TOOL],
  };
  const controller = new AbortController();
  const sessionId = uuidv7();
  let timer;
  if (request.abortAfterMs) timer = setTimeout(() => controller.abort(), request.abortAfterMs);
  const stream = models.streamSimple(model, context, { sessionId, signal: controller.signal });
  let message;
  for await (const event of stream) {
    if (event.type === "done") message = event.message;
    else if (event.type === "error") message = event.error;
  }
  clearTimeout(timer);
  message ??= await stream.result();
  const content = message.content ?? [];
  return {
    stopReason: message.stopReason,
    errorMessage: message.errorMessage ?? null,
    toolCalls: content.filter((c) => c.type === "toolCall").map((c) => c.name),
    text: content
      .filter((c) => c.type === "text")
      .map((c) => c.text)
      .join(""),
    api: model.api,
    baseUrl: model.baseUrl,
    sessionId,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const request = JSON.parse(process.argv[2] ?? "{}");
  piTurn(request).then(
    (result) => {
      process.stdout.write(JSON.stringify(result) + "\n");
      process.exit(0);
    },
    (error) => {
      process.stdout.write(JSON.stringify({ stopReason: "harness-failure", errorMessage: String(error?.stack ?? error) }) + "\n");
      process.exit(3);
    },
  );
}
