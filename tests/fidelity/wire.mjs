// The recorder's answers, per API kind, in each API's own wire format: a tool call, a text answer, a length stop, the
// provider's error bodies, an error event after a 200, the first event of a stream (for the stall), and garbage.
// Shapes follow the providers' documented streams (and the fakes in tests/src/provider/).

const sse = (data, event) => (event ? `event: ${event}\n` : "") + `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

// ---------------------------------------------------------------------------------------------------------------
// Chat Completions (openai-completions; Mistral's chat.stream reads the same chunks).

function chatChunk(delta, finish = null, extra = {}) {
  return sse({
    id: "chatcmpl-fidelity",
    object: "chat.completion.chunk",
    created: 1764441600,
    model: "fidelity-model",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  });
}
const chatUsage = () =>
  sse({
    id: "chatcmpl-fidelity",
    object: "chat.completion.chunk",
    created: 1764441600,
    model: "fidelity-model",
    choices: [],
    usage: { prompt_tokens: 120, completion_tokens: 12, total_tokens: 132 },
  });

// OpenAI streams a tool call's name first and its arguments in pieces; Mistral sends the whole call in one chunk.
const toolPieces = () => [
  chatChunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_fidelity1", type: "function", function: { name: "probe", arguments: "" } }] }),
  chatChunk({ tool_calls: [{ index: 0, function: { arguments: '{"status": "ready"}' } }] }),
];
const toolWhole = () => [
  chatChunk({ role: "assistant", content: "", tool_calls: [{ index: 0, id: "fidelity1", type: "function", function: { name: "probe", arguments: '{"status": "ready"}' } }] }),
];

function chatWire({ errorBody, toolChunks, quota }) {
  return {
    contentType: "text/event-stream",
    first: () => [chatChunk({ role: "assistant", content: "" })],
    tool: () => [...toolChunks(), chatChunk({}, "tool_calls"), chatUsage(), "data: [DONE]\n\n"],
    text: () => [
      chatChunk({ role: "assistant", content: "" }),
      chatChunk({ content: "I would call the probe tool, but here is text instead." }),
      chatChunk({}, "stop"),
      chatUsage(),
      "data: [DONE]\n\n",
    ],
    length: () => [chatChunk({ role: "assistant", content: "Let me think about which" }), chatChunk({}, "length"), chatUsage(), "data: [DONE]\n\n"],
    errorEvent: () => [
      chatChunk({ role: "assistant", content: "" }),
      sse({ error: { message: "The server had an error while processing your request.", type: "server_error", code: null } }),
    ],
    malformed: () => ['data: {"id": "chatcmpl-fidelity", "choices": [{"delta": {"content": "no\n\n', "data: <html>oops</html>\n\n"],
    error: (status) => ({ headers: {}, body: JSON.stringify(errorBody(status)) }),
    quota: quota ? () => ({ headers: {}, body: JSON.stringify(quota) }) : undefined,
  };
}
const openaiQuota = {
  error: {
    message: "You exceeded your current quota, please check your plan and billing details.",
    type: "insufficient_quota",
    param: null,
    code: "insufficient_quota",
  },
};

const openaiErrors = {
  401: ["Incorrect API key provided: fidelity****6789.", "invalid_request_error", "invalid_api_key"],
  403: ["You are not allowed to sample from this model", "permission_error", null],
  404: ["The model `fidelity-model` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"],
  429: ["Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1.", "requests", "rate_limit_exceeded"],
  503: ["The server is overloaded or not ready yet.", "server_error", null],
  529: ["The server is overloaded.", "server_error", "overloaded"],
};
const openaiError = (status) => {
  const [message, type, code] = openaiErrors[status] ?? ["error", "server_error", null];
  return { error: { message, type, param: null, code } };
};

const mistralErrors = {
  401: "Unauthorized",
  403: "Forbidden: this key cannot use mistral-small-latest",
  404: "Invalid model: mistral-small-latest",
  429: "Requests rate limit exceeded",
  503: "Service unavailable",
  529: "Service tier capacity exceeded for this model.",
};
const mistralError = (status) => ({ object: "error", message: mistralErrors[status] ?? "error", type: status === 429 ? "rate_limited" : "invalid_request_error", param: null, code: String(status) });

// ---------------------------------------------------------------------------------------------------------------
// Anthropic Messages.

const anthropicStart = () =>
  sse(
    {
      type: "message_start",
      message: {
        id: "msg_fidelity",
        type: "message",
        role: "assistant",
        model: "claude-haiku-4-5-20251001",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 610, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    },
    "message_start",
  );
const anthropicEnd = (stop) => [
  sse({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 40 } }, "message_delta"),
  sse({ type: "message_stop" }, "message_stop"),
];
const anthropicText = (text, stop) => [
  anthropicStart(),
  sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start"),
  sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }, "content_block_delta"),
  sse({ type: "content_block_stop", index: 0 }, "content_block_stop"),
  ...anthropicEnd(stop),
];
const anthropicErrors = {
  401: ["authentication_error", "invalid x-api-key"],
  403: ["permission_error", "Your API key does not have permission to use the specified resource."],
  404: ["not_found_error", "model: claude-haiku-4-5"],
  429: ["rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."],
  503: ["api_error", "Service unavailable"],
  529: ["overloaded_error", "Overloaded"],
};
const anthropic = {
  contentType: "text/event-stream",
  first: () => [anthropicStart()],
  tool: () => [
    anthropicStart(),
    sse({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_fidelity", name: "probe", input: {} } }, "content_block_start"),
    sse({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"status": "ready"}' } }, "content_block_delta"),
    sse({ type: "content_block_stop", index: 0 }, "content_block_stop"),
    ...anthropicEnd("tool_use"),
  ],
  text: () => anthropicText("I would call the probe tool, but here is text instead.", "end_turn"),
  length: () => anthropicText("Let me think about which", "max_tokens"),
  // What Anthropic sends mid-stream is nearly always an overload; a plain api_error is the other kind.
  errorEvent: () => [anthropicStart(), sse({ type: "error", error: { type: "api_error", message: "Internal server error" } }, "error")],
  overloadedEvent: () => [anthropicStart(), sse({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, "error")],
  malformed: () => ["event: message_start\ndata: {\"type\": \"message_start\", \"message\": {oops\n\n", "data: <html>oops</html>\n\n"],
  quota: () => ({
    headers: {},
    body: JSON.stringify({
      type: "error",
      error: {
        type: "rate_limit_error",
        message: "You have reached your API usage limits: your organization has crossed its monthly API usage threshold.",
        details: { error_code: "enforced_spend_limit_reached" },
      },
    }),
  }),
  error: (status) => {
    const [type, message] = anthropicErrors[status] ?? ["api_error", "error"];
    return { headers: { "request-id": "req_fidelity" }, body: JSON.stringify({ type: "error", error: { type, message }, request_id: "req_fidelity" }) };
  },
};

// ---------------------------------------------------------------------------------------------------------------
// Gemini (google-generative-ai and google-vertex: the same stream).

const geminiChunk = (parts, finishReason) =>
  sse({
    candidates: [{ content: { parts, role: "model" }, ...(finishReason ? { finishReason } : {}), index: 0 }],
    usageMetadata: { promptTokenCount: 90, candidatesTokenCount: 8, totalTokenCount: 98 },
    modelVersion: "gemini-2.5-flash",
    responseId: "fidelity",
  });
const geminiErrors = {
  401: ["UNAUTHENTICATED", "API keys are not supported by this API. Expected OAuth2 access token or other authentication credentials that assert a principal."],
  403: ["PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."],
  404: ["NOT_FOUND", "models/gemini-2.5-flash is not found for API version v1beta, or is not supported for generateContent."],
  429: ["RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."],
  503: ["UNAVAILABLE", "The model is overloaded. Please try again later."],
  529: ["UNAVAILABLE", "The model is overloaded."],
};
const gemini = {
  contentType: "text/event-stream",
  first: () => [geminiChunk([{ text: "" }])],
  tool: () => [geminiChunk([{ functionCall: { name: "probe", args: { status: "ready" } } }], "STOP")],
  text: () => [geminiChunk([{ text: "I would call the probe tool, " }]), geminiChunk([{ text: "but here is text instead." }], "STOP")],
  length: () => [geminiChunk([{ text: "Let me think about which" }], "MAX_TOKENS")],
  // The Google GenAI SDK recognises an error inside a 200 only as a bare JSON object (a network chunk of its own,
  // not framed as an SSE event): that is what it expects from the API.
  errorEvent: () => [JSON.stringify({ error: { code: 500, message: "Internal error encountered.", status: "INTERNAL" } })],
  // The same error framed as an SSE event.
  errorEventSse: () => [geminiChunk([{ text: "" }]), sse({ error: { code: 500, message: "Internal error encountered.", status: "INTERNAL" } })],
  malformed: () => ['data: {"candidates": [{"content": oops\n\n', "data: <html>oops</html>\n\n"],
  quota: () => ({
    headers: {},
    body: JSON.stringify({
      error: {
        code: 429,
        message:
          "You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_requests_per_model_per_day, limit: 0",
        status: "RESOURCE_EXHAUSTED",
      },
    }),
  }),
  error: (status) => {
    const [s, message] = geminiErrors[status] ?? ["UNKNOWN", "error"];
    return { headers: {}, body: JSON.stringify({ error: { code: status, message, status: s } }) };
  },
};

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Responses (and Azure's).

const response = (status, output, extra = {}) => ({
  id: "resp_fidelity",
  object: "response",
  created_at: 1764441600,
  status,
  model: "gpt-5-mini",
  output,
  usage: status === "in_progress" ? null : { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 120 },
  ...extra,
});
const rsse = (data) => sse(data, data.type);
const created = () => rsse({ type: "response.created", sequence_number: 0, response: response("in_progress", []) });
const responsesText = (text, status, extra) => {
  const item = { id: "msg_fidelity", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] };
  return [
    created(),
    rsse({ type: "response.output_item.added", sequence_number: 1, output_index: 0, item: { ...item, status: "in_progress", content: [] } }),
    rsse({ type: "response.content_part.added", sequence_number: 2, item_id: "msg_fidelity", output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }),
    rsse({ type: "response.output_text.delta", sequence_number: 3, item_id: "msg_fidelity", output_index: 0, content_index: 0, delta: text }),
    rsse({ type: "response.output_text.done", sequence_number: 4, item_id: "msg_fidelity", output_index: 0, content_index: 0, text }),
    rsse({ type: "response.output_item.done", sequence_number: 5, output_index: 0, item }),
    rsse({ type: status === "completed" ? "response.completed" : "response.incomplete", sequence_number: 6, response: response(status, [item], extra) }),
  ];
};
const responses = {
  contentType: "text/event-stream",
  first: () => [created()],
  tool: () => {
    const item = { id: "fc_fidelity", type: "function_call", status: "completed", call_id: "call_fidelity", name: "probe", arguments: '{"status":"ready"}' };
    return [
      created(),
      rsse({ type: "response.output_item.added", sequence_number: 1, output_index: 0, item: { ...item, status: "in_progress", arguments: "" } }),
      rsse({ type: "response.function_call_arguments.delta", sequence_number: 2, item_id: "fc_fidelity", output_index: 0, delta: '{"status":"ready"}' }),
      rsse({ type: "response.function_call_arguments.done", sequence_number: 3, item_id: "fc_fidelity", output_index: 0, arguments: '{"status":"ready"}' }),
      rsse({ type: "response.output_item.done", sequence_number: 4, output_index: 0, item }),
      rsse({ type: "response.completed", sequence_number: 5, response: response("completed", [item]) }),
    ];
  },
  text: () => responsesText("I would call the probe tool, but here is text instead.", "completed"),
  length: () => responsesText("Let me think about which", "incomplete", { incomplete_details: { reason: "max_output_tokens" } }),
  errorEvent: () => [
    created(),
    rsse({ type: "response.failed", sequence_number: 1, response: response("failed", [], { error: { code: "server_error", message: "The server had an error while processing your request." } }) }),
  ],
  malformed: () => ['event: response.created\ndata: {"type": "response.created", oops\n\n', "data: <html>oops</html>\n\n"],
  error: (status) => ({ headers: {}, body: JSON.stringify(openaiError(status)) }),
  quota: () => ({ headers: {}, body: JSON.stringify(openaiQuota) }),
};

// ---------------------------------------------------------------------------------------------------------------
// Bedrock ConverseStream: AWS's binary event stream.

let crcTable;
function crc32(bytes) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const b of bytes) crc = crcTable[(crc ^ b) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
function frame(headers, payload) {
  const h = [];
  for (const [name, value] of headers) {
    const v = Buffer.from(value);
    h.push(Buffer.from([name.length]), Buffer.from(name), Buffer.from([7, v.length >> 8, v.length & 0xff]), v);
  }
  const hb = Buffer.concat(h);
  const p = Buffer.from(payload);
  const total = 16 + hb.length + p.length;
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(total, 0);
  prelude.writeUInt32BE(hb.length, 4);
  const pc = Buffer.alloc(4);
  pc.writeUInt32BE(crc32(prelude), 0);
  const body = Buffer.concat([prelude, pc, hb, p]);
  const mc = Buffer.alloc(4);
  mc.writeUInt32BE(crc32(body), 0);
  return Buffer.concat([body, mc]);
}
const bevent = (type, payload) =>
  frame([[":event-type", type], [":content-type", "application/json"], [":message-type", "event"]], JSON.stringify({ ...payload, p: "abcdefghijklmnopqrstuvwxyzABCDEF" }));
const bexception = (type, message) =>
  frame([[":exception-type", type], [":content-type", "application/json"], [":message-type", "exception"]], JSON.stringify({ message }));
const bmeta = () => bevent("metadata", { usage: { inputTokens: 590, outputTokens: 54, totalTokens: 644 }, metrics: { latencyMs: 812 } });
const btext = (text, stop) => [
  bevent("messageStart", { role: "assistant" }),
  bevent("contentBlockDelta", { contentBlockIndex: 0, delta: { text } }),
  bevent("contentBlockStop", { contentBlockIndex: 0 }),
  bevent("messageStop", { stopReason: stop }),
  bmeta(),
];
const bedrockErrors = {
  401: ["UnrecognizedClientException", "The security token included in the request is invalid."],
  403: ["AccessDeniedException", "You don't have access to the model with the specified model ID."],
  404: ["ResourceNotFoundException", "Model not found."],
  429: ["ThrottlingException", "Too many requests, please wait before trying again."],
  503: ["ServiceUnavailableException", "Bedrock is unable to process your request."],
  529: ["ServiceUnavailableException", "Bedrock is overloaded."],
};
const bedrock = {
  contentType: "application/vnd.amazon.eventstream",
  first: () => [bevent("messageStart", { role: "assistant" })],
  tool: () => [
    bevent("messageStart", { role: "assistant" }),
    bevent("contentBlockStart", { contentBlockIndex: 0, start: { toolUse: { name: "probe", toolUseId: "tooluse_fidelity" } } }),
    bevent("contentBlockDelta", { contentBlockIndex: 0, delta: { toolUse: { input: '{"status": "ready"}' } } }),
    bevent("contentBlockStop", { contentBlockIndex: 0 }),
    bevent("messageStop", { stopReason: "tool_use" }),
    bmeta(),
  ],
  text: () => btext("I would call the probe tool, but here is text instead.", "end_turn"),
  length: () => btext("Let me think about which", "max_tokens"),
  errorEvent: () => [bevent("messageStart", { role: "assistant" }), bexception("internalServerException", "The server encountered an internal error.")],
  overloadedEvent: () => [bevent("messageStart", { role: "assistant" }), bexception("throttlingException", "Too many tokens, please wait before trying again.")],
  malformed: () => {
    const bad = bevent("messageStart", { role: "assistant" });
    bad[bad.length - 1] ^= 0x55; // a broken message CRC
    return [bad];
  },
  error: (status) => {
    const [type, message] = bedrockErrors[status] ?? ["InternalServerException", "error"];
    return {
      headers: { "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, "x-amzn-requestid": "5c1f0e2a-8d9b-4c3e-9f7a-6b5d4c3b2a10" },
      body: JSON.stringify({ message }),
    };
  },
};

export const formats = {
  "openai-completions": chatWire({ errorBody: openaiError, toolChunks: toolPieces, quota: openaiQuota }),
  "mistral-conversations": chatWire({ errorBody: mistralError, toolChunks: toolWhole }),
  "anthropic-messages": anthropic,
  "google-generative-ai": gemini,
  "google-vertex": gemini,
  "openai-responses": responses,
  "azure-openai-responses": responses,
  "bedrock-converse-stream": bedrock,
};
