// A Turn as jr2's Harness runs it, for the probe's own request: pi-agent-core 0.82.1's agent loop (`runAgentLoop`,
// the loop under its AgentHarness) over pi-ai 0.82.1's model call (`models.streamSimple`, as pi-turn.mjs makes it),
// with the probe's system prompt, user message and tool `probe`. pi-turn.mjs stops at the model call; a Turn does
// more with the message, and the preflight must judge what the Turn does: the loop validates each tool call's
// arguments against the tool's schema and runs it, except in a message the token cap stopped (stop reason
// `length`), whose calls it fails all (`failToolCallsFromTruncatedMessage` in pi-agent-core's agent-loop.js: "was
// not executed: the response hit the output token limit") (issue 27, item 5).
//
//   node turn.mjs '<request JSON>'      prints one JSON line: what the Turn ended with
//
// The request is pi-turn.mjs's ({"custom": {...}} or {"model", "baseUrl"}, "abortAfterMs"), plus:
//   "userText": "..."    the user message in place of the probe's (a Turn with a longer prompt)
//
// The output: {"turn", "stopReason", "errorMessage", "toolCalls": [names], "toolResults": [{name, isError, text}],
// "text"}, where "turn" is the Turn's outcome:
//   "called"       the tool ran: a call with valid arguments, in a message that did not stop for length
//   "toolFailed"   the message held calls and none ran (the cap stopped the message, or the arguments did not validate)
//   "text"         the message stopped with text and no call
//   "length"       the cap stopped the message before any call
//   "error"        the model call failed (an HTTP error, a broken stream)
//   "aborted"      the abort signal came first (abortAfterMs)
import { runAgentLoop } from "@earendil-works/pi-agent-core";
import { uuidv7 } from "@earendil-works/pi-ai";
import { SYSTEM, TOOL, USER, resolveModel } from "./pi-turn.mjs";

export async function turn(request) {
  const { models, model } = resolveModel(request);
  const ran = [];
  const tool = {
    ...TOOL,
    label: TOOL.name,
    execute: async (_id, args) => {
      ran.push(args);
      // `terminate`: the loop makes no second model call after the tool (one Turn's first step is what the probe checks).
      return { content: [{ type: "text", text: "ok" }], details: {}, terminate: true };
    },
  };
  const controller = new AbortController();
  let timer;
  if (request.abortAfterMs) timer = setTimeout(() => controller.abort(), request.abortAfterMs);
  const prompt = { role: "user", content: [{ type: "text", text: request.userText ?? USER }], timestamp: Date.now() };
  const config = {
    model,
    sessionId: uuidv7(),
    convertToLlm: (messages) => messages.filter((m) => ["user", "assistant", "toolResult"].includes(m.role)),
    // One model call: the loop stops after its first turn whatever the tool said.
    shouldStopAfterTurn: () => true,
  };
  const messages = await runAgentLoop(
    [prompt],
    { systemPrompt: SYSTEM, messages: [], tools: [tool] },
    config,
    () => {},
    controller.signal,
    (m, context, options) => models.streamSimple(m, context, options),
  );
  clearTimeout(timer);
  const message = messages.find((m) => m.role === "assistant");
  const content = message?.content ?? [];
  const toolCalls = content.filter((c) => c.type === "toolCall").map((c) => c.name);
  const toolResults = messages
    .filter((m) => m.role === "toolResult")
    .map((m) => ({ name: m.toolName, isError: m.isError, text: m.content.map((c) => c.text ?? "").join("") }));
  const stopReason = message?.stopReason ?? "error";
  let outcome;
  if (stopReason === "error" || stopReason === "aborted") outcome = stopReason;
  else if (ran.length > 0) outcome = "called";
  else if (toolCalls.length > 0) outcome = "toolFailed";
  else outcome = stopReason === "length" ? "length" : "text";
  return {
    turn: outcome,
    stopReason,
    errorMessage: message?.errorMessage ?? null,
    toolCalls,
    toolResults,
    text: content
      .filter((c) => c.type === "text")
      .map((c) => c.text)
      .join("")
      .slice(0, 300),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  turn(JSON.parse(process.argv[2] ?? "{}")).then(
    (result) => {
      process.stdout.write(JSON.stringify(result) + "\n");
      process.exit(0);
    },
    (error) => {
      process.stdout.write(JSON.stringify({ turn: "harness-failure", errorMessage: String(error?.stack ?? error) }) + "\n");
      process.exit(3);
    },
  );
}
