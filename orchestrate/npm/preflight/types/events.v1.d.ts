// Generated from probe/schemas/events.v1.schema.json by json-schema-to-typescript (pinned in tools/package.json).
// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schema generates.

/**
 * One line of what `jr2-probe run` (the check pod's mode) writes on stdout: one JSON object per line, discriminated by `event`: `start` first, then any `warning`, then `modelStarted`, `try` and `result` as the models go, `summary` last. The driver (`jr2-preflight`) reads them from the pod's log. The definitions are verdict.v1.schema.json's (a test keeps them equal; `Verdict` is that schema's root). Nothing in them holds a secret value.
 */
export type ProbeEvent =
  | {
      /**
       * Discriminator: `start`.
       */
      event: "start";
      /**
       * The identifier of this schema. A reader refuses lines whose identifier it does not know.
       */
      schema: "jr2.dev/provider-preflight-events/v1";
      /**
       * The version of the jr2-probe binary (its crate version). For diagnostics only.
       */
      probeVersion: string;
      /**
       * Where the check runs (in a check pod: the node).
       */
      origin:
        | {
            /**
             * Discriminator: `thisMachine`.
             */
            kind: "thisMachine";
          }
        | {
            /**
             * Discriminator: `node`.
             */
            kind: "node";
            /**
             * The Kubernetes node's name.
             */
            name: string;
          };
      /**
       * How many models the run checks.
       */
      models: number;
      /**
       * Milliseconds the probe gives itself: the pod's deadline (`JR2_PROBE_DEADLINE`) less a margin; `null` without a deadline.
       */
      budgetMs: number | null;
    }
  | {
      /**
       * Discriminator: `warning`.
       */
      event: "warning";
      /**
       * The line as the probe prints it: `warning: ...`, with no secret value.
       */
      line: string;
    }
  | {
      /**
       * Discriminator: `modelStarted`.
       */
      event: "modelStarted";
      /**
       * The model's index in the run spec's `models` (0 for the first).
       */
      index: number;
      /**
       * The model as the run spec names it (`vllm/Qwen/Qwen3-32B`, `anthropic/claude-haiku-4-5`).
       */
      model: string;
    }
  | {
      /**
       * Discriminator: `try`.
       */
      event: "try";
      /**
       * The model's index in the run spec's `models` (0 for the first).
       */
      index: number;
      /**
       * The model as the run spec names it (`vllm/Qwen/Qwen3-32B`, `anthropic/claude-haiku-4-5`).
       */
      model: string;
      try: Try;
    }
  | {
      /**
       * Discriminator: `waiting`.
       */
      event: "waiting";
      /**
       * The model's index in the run spec's `models`.
       */
      index: number;
      /**
       * The model as the run spec names it.
       */
      model: string;
      /**
       * Milliseconds the model has waited.
       */
      waitedMs: number;
      /**
       * The model's deadline, in milliseconds.
       */
      timeoutMs: number;
    }
  | {
      /**
       * Discriminator: `result`.
       */
      event: "result";
      /**
       * The model's index in the run spec's `models` (0 for the first).
       */
      index: number;
      result: ModelResult;
    }
  | {
      /**
       * Discriminator: `summary`.
       */
      event: "summary";
      verdict: Verdict;
    };
/**
 * The cause the endpoint named (issue 16): one line after the contract's lines, and the result's nextAction.
 */
export type Cause =
  | {
      /**
       * The cause.
       */
      kind:
        | "llamaCppTemplateWithoutTools"
        | "llamaCppWithoutJinja"
        | "vllmToolsNotEnabled"
        | "lengthWhileThinking"
        | "textUntilCap"
        | "toolCallCut"
        | "proxyUnreachable"
        | "custodianUnreachable";
    }
  | {
      /**
       * A LiteLLM gateway's backend failed.
       */
      kind: "gatewayBackendFailed";
      /**
       * The backend's error class as LiteLLM names it.
       */
      error: string;
    }
  | {
      /**
       * `length` with a cap pi's clamp set from the model's contextWindow (less the prompt estimate and a 4096-token reserve): raising maxTokens changes nothing.
       */
      kind: "capClamped";
      /**
       * The contextWindow the cap was clamped to.
       */
      contextWindow: number;
    }
  | {
      /**
       * The served context is smaller than a Turn needs.
       */
      kind: "contextTooSmall";
      /**
       * The context the server serves, in tokens.
       */
      served: number;
      /**
       * What a Turn needs: the plan's contextWindow, or maxTokens plus pi's prompt estimate and 4096-token reserve.
       */
      needed: number;
      /**
       * `needed` is the plan's contextWindow.
       */
      fromWindow: boolean;
      /**
       * The server's kind, for the flag the line names.
       */
      server: "llamaCpp" | "vllm" | "litellm" | "unknown";
    };

/**
 * The try.
 */
export interface Try {
  /**
   * The try's number: 1 for the first try.
   */
  n: number;
  /**
   * The HTTP status of this try's response; `null` when none came back (connect failure, TLS failure, timeout).
   */
  status: number | null;
  /**
   * What this try ended with.
   */
  outcome:
    | "ok"
    | "text"
    | "busy"
    | "unavailable"
    | "length"
    | "key_refused"
    | "custodian_refused"
    | "timeout"
    | "unreachable"
    | "tls"
    | "http"
    | "protocol"
    | "not_checked"
    | "unsupported"
    | "skipped"
    | "not_checkable";
  /**
   * The wait the server asked for before the next try (`Retry-After` or the provider's own hint), in milliseconds; `null` when it asked for none.
   */
  waitAskedMs: number | null;
  /**
   * The wait the probe took before the next try, in milliseconds; 0 after the last try.
   */
  waitTakenMs: number;
  timings: Timings;
}
/**
 * The try's time marks.
 */
export interface Timings {
  /**
   * When the host name was resolved; `null` when not resolved or not measured (behind a proxy, an IP literal, or a reused connection).
   */
  dnsMs: number | null;
  /**
   * When the server's certificate was verified (TLS handshake done); `null` for a plain-HTTP endpoint or a reused connection.
   */
  tlsMs: number | null;
  /**
   * When the connection was ready (TCP, proxy tunnel and TLS); `null` for a reused connection or a failed connect.
   */
  connectMs: number | null;
  /**
   * When the response headers arrived; `null` when no response came.
   */
  firstByteMs: number | null;
  /**
   * When the first tool-call event arrived; `null` when the model did not call a tool in this try.
   */
  toolCallMs: number | null;
  /**
   * When the try ended (the probe hangs up at the first tool call, so this is not the full completion's time).
   */
  totalMs: number;
}
/**
 * The result, as in the verdict's `models`.
 */
export interface ModelResult {
  /**
   * The model as the plan (or `--model`) names it; use it to match a result to the caller's model.
   */
  model: string;
  /**
   * The model id sent in the request body (for a catalog model, the provider's own id).
   */
  id: string;
  /**
   * The API kind the request was (or would have been) sent in.
   */
  api:
    | "openai-completions"
    | "anthropic-messages"
    | "openai-responses"
    | "azure-openai-responses"
    | "openai-codex-responses"
    | "google-generative-ai"
    | "google-vertex"
    | "mistral-conversations"
    | "bedrock-converse-stream";
  /**
   * The base URL the request went to (no credentials in it).
   */
  baseUrl: string;
  /**
   * The `<host>` of the human lines: the base URL's host, with `:port` when the URL names one.
   */
  host: string;
  /**
   * How the model is reached.
   */
  route:
    | {
        /**
         * Discriminator: `custom`.
         */
        kind: "custom";
        /**
         * True when a key is configured for the endpoint (`harness.provider.apiKey`; by hand: `--api-key-env`). When false the request carries pi's placeholder `Authorization: Bearer unused`.
         */
        apiKeySet: boolean;
        /**
         * True when a `maxTokens` is configured for the model (`harness.provider.maxTokens` or `harness.provider.models.<id>.maxTokens`; by hand: always, `--max-tokens` or its default). When false, jr2 builds the model with `maxTokens: 0` and a Turn asks for 1 token (`maxTokens` of the result is 1): a `length` error then names the cause.
         */
        maxTokensSet: boolean;
      }
    | {
        /**
         * Discriminator: `catalog`.
         */
        kind: "catalog";
        /**
         * The catalog provider's name, as pi names it (e.g. `anthropic`).
         */
        provider: string;
        /**
         * True when the pods hold a secret for this provider, so the call went through a Custodian (which substitutes the real key).
         */
        viaCustodian: boolean;
        /**
         * The name of the key's environment variable (never its value): the one a Harness pod holds or, when no pod holds one, the one to add.
         */
        keyEnv: string;
        /**
         * True when a Harness pod holds the key named by `keyEnv`.
         */
        keyHeld: boolean;
        /**
         * True when a `harness.catalog` gateway serves this provider.
         */
        gateway: boolean;
      };
  /**
   * The coarse outcome of the model's check: the class the human lines are chosen by.
   */
  outcome:
    | "ok"
    | "text"
    | "busy"
    | "unavailable"
    | "length"
    | "key_refused"
    | "custodian_refused"
    | "timeout"
    | "unreachable"
    | "tls"
    | "http"
    | "protocol"
    | "not_checked"
    | "unsupported"
    | "skipped"
    | "not_checkable";
  /**
   * Pass, warning or error: whether this model stops the converge.
   */
  level: "pass" | "warning" | "error";
  /**
   * The stable code; switch on it rather than on `error`'s text.
   */
  code:
    | "PROVIDER_OK"
    | "PROVIDER_TEXT_ANSWER"
    | "PROVIDER_BUSY"
    | "PROVIDER_UNAVAILABLE"
    | "PROVIDER_LENGTH"
    | "PROVIDER_KEY_REFUSED"
    | "PROVIDER_CUSTODIAN_REFUSED"
    | "PROVIDER_TIMEOUT"
    | "PROVIDER_UNREACHABLE"
    | "PROVIDER_TLS"
    | "PROVIDER_HTTP_ERROR"
    | "PROVIDER_MODEL_NOT_FOUND"
    | "PROVIDER_TOOLS_NOT_ENABLED"
    | "PROVIDER_QUOTA_EXHAUSTED"
    | "PROVIDER_STREAM_ERROR"
    | "PROVIDER_CROSS_ORIGIN_REDIRECT"
    | "PROVIDER_PROTOCOL_ERROR"
    | "PROVIDER_NOT_CHECKED"
    | "PROVIDER_UNSUPPORTED"
    | "PROVIDER_CONTEXT_TOO_SMALL"
    | "PROVIDER_SKIPPED"
    | "PROVIDER_NOT_CHECKABLE_ADC"
    | "PROVIDER_NOT_CHECKABLE_OAUTH";
  /**
   * The one next action for a person, in English, fixed per `code`.
   */
  nextAction: string;
  /**
   * The `<error>` of the human lines: one sanitized line, at most 300 characters (a cut ends in `…`); `null` on a pass.
   */
  error: string | null;
  /**
   * The HTTP status of the last try that got a response; `null` when none did.
   */
  httpStatus: number | null;
  /**
   * The stop reason the model gave, in the API's own words (e.g. `tool_calls`, `length`); `null` when it gave none.
   */
  stopReason: string | null;
  /**
   * The name of the tool the model called; `null` when it called none.
   */
  toolName: string | null;
  /**
   * The start of a text answer (sanitized, at most 300 characters), for outcome `text`; `null` otherwise.
   */
  answer: string | null;
  /**
   * The token cap sent in the request.
   */
  maxTokens: number;
  /**
   * Milliseconds from the start of this model's check to its result, all tries and waits included.
   */
  elapsedMs: number;
  /**
   * The server behind the base URL, as far as the answer and its metadata told; null when nothing was learned (issue 16).
   */
  endpoint: Endpoint | null;
  /**
   * The cause the endpoint named; null when none.
   */
  cause: Cause | null;
  /**
   * The first tool call's arguments as far as they came (redacted, at most 300 characters), when the cap cut the call before they were complete; null otherwise.
   */
  toolArguments: string | null;
  /**
   * The plan asked for the probe's tool by name (`toolChoice: named`) and the model answered as if it could choose (in text, or with another tool).
   */
  toolChoiceIgnored: boolean;
  /**
   * Every HTTP try, in order; empty when no request was sent (e.g. `not_checked`, `unsupported`).
   */
  tries: Try1[];
}
/**
 * What the probe learned about the server behind the base URL (issue 16): from the answer's `server:` header and error body, and for a custom endpoint from one GET of its metadata (`/v1/models`, llama.cpp's `/props`, vLLM's `/version`). Fields are null when not known; `endpoint` is null when nothing was learned.
 */
export interface Endpoint {
  /**
   * The server: `llamaCpp` (`server: llama.cpp`), `vllm` (`server: uvicorn` and `/version`, or `/v1/models` owned_by vllm), `litellm` (`x-litellm-*` headers, `litellm.` messages), `unknown`.
   */
  kind: "llamaCpp" | "vllm" | "litellm" | "unknown";
  /**
   * The server's version as it gives it (vLLM's `/version`, llama.cpp's `build_info`), sanitized, at most 40 characters; null when not known.
   */
  version: string | null;
  /**
   * The context the server serves, in tokens (llama.cpp's `n_ctx`, vLLM's `max_model_len`); null when not known.
   */
  contextLength: number | null;
  /**
   * llama.cpp: whether the chat template renders tools (`/props` `chat_template_caps.supports_tools`); null when not known.
   */
  supportsTools: boolean | null;
}
/**
 * One HTTP try of a model's check.
 */
export interface Try1 {
  /**
   * The try's number: 1 for the first try.
   */
  n: number;
  /**
   * The HTTP status of this try's response; `null` when none came back (connect failure, TLS failure, timeout).
   */
  status: number | null;
  /**
   * What this try ended with.
   */
  outcome:
    | "ok"
    | "text"
    | "busy"
    | "unavailable"
    | "length"
    | "key_refused"
    | "custodian_refused"
    | "timeout"
    | "unreachable"
    | "tls"
    | "http"
    | "protocol"
    | "not_checked"
    | "unsupported"
    | "skipped"
    | "not_checkable";
  /**
   * The wait the server asked for before the next try (`Retry-After` or the provider's own hint), in milliseconds; `null` when it asked for none.
   */
  waitAskedMs: number | null;
  /**
   * The wait the probe took before the next try, in milliseconds; 0 after the last try.
   */
  waitTakenMs: number;
  timings: Timings;
}
/**
 * The verdict, as `jr2-probe check --output json` prints it (verdict.v1).
 */
export interface Verdict {
  /**
   * The verdict's schema identifier. A caller checks it before reading anything else and refuses a verdict whose identifier it does not know.
   */
  schema: "jr2.dev/provider-preflight-verdict/v1";
  /**
   * The version of the jr2-probe binary that produced the verdict (its crate version, e.g. `0.1.0`). For diagnostics only; do not branch on it.
   */
  probeVersion: string;
  /**
   * Where the check ran: on this machine by hand, or in a check pod on a node. Names the `<where>` of the human lines.
   */
  origin:
    | {
        /**
         * Discriminator: `thisMachine`.
         */
        kind: "thisMachine";
      }
    | {
        /**
         * Discriminator: `node`.
         */
        kind: "node";
        /**
         * The Kubernetes node's name.
         */
        name: string;
      };
  /**
   * True when no model's `level` is `error` (warnings allowed): the converge may go on. Same as `exitCode === 0` and `errors === 0`.
   */
  ok: boolean;
  /**
   * The probe process's exit code: 0 when `ok`, 1 when some model's `level` is `error`. (Exit 2, bad input or usage, prints no verdict.)
   */
  exitCode: 0 | 1;
  /**
   * How many entries of `models` have `level` `error`.
   */
  errors: number;
  /**
   * How many entries of `models` have `level` `warning`.
   */
  warnings: number;
  /**
   * When the run started: UTC, RFC 3339 with milliseconds, e.g. `2026-11-29T18:36:47.123Z`. Parse with `new Date(startedAt)`.
   */
  startedAt: string;
  /**
   * Milliseconds the whole run took, all models together.
   */
  elapsedMs: number;
  /**
   * One result per model checked, in the order the models were given (the plan's order, or the order of `--model`).
   */
  models: ModelResult1[];
  /**
   * The human lines the probe wrote on stderr, in order, already sanitized. A caller that shows the result to a person can print these as they are.
   */
  lines: string[];
}
/**
 * What one model's check ended with.
 */
export interface ModelResult1 {
  /**
   * The model as the plan (or `--model`) names it; use it to match a result to the caller's model.
   */
  model: string;
  /**
   * The model id sent in the request body (for a catalog model, the provider's own id).
   */
  id: string;
  /**
   * The API kind the request was (or would have been) sent in.
   */
  api:
    | "openai-completions"
    | "anthropic-messages"
    | "openai-responses"
    | "azure-openai-responses"
    | "openai-codex-responses"
    | "google-generative-ai"
    | "google-vertex"
    | "mistral-conversations"
    | "bedrock-converse-stream";
  /**
   * The base URL the request went to (no credentials in it).
   */
  baseUrl: string;
  /**
   * The `<host>` of the human lines: the base URL's host, with `:port` when the URL names one.
   */
  host: string;
  /**
   * How the model is reached.
   */
  route:
    | {
        /**
         * Discriminator: `custom`.
         */
        kind: "custom";
        /**
         * True when a key is configured for the endpoint (`harness.provider.apiKey`; by hand: `--api-key-env`). When false the request carries pi's placeholder `Authorization: Bearer unused`.
         */
        apiKeySet: boolean;
        /**
         * True when a `maxTokens` is configured for the model (`harness.provider.maxTokens` or `harness.provider.models.<id>.maxTokens`; by hand: always, `--max-tokens` or its default). When false, jr2 builds the model with `maxTokens: 0` and a Turn asks for 1 token (`maxTokens` of the result is 1): a `length` error then names the cause.
         */
        maxTokensSet: boolean;
      }
    | {
        /**
         * Discriminator: `catalog`.
         */
        kind: "catalog";
        /**
         * The catalog provider's name, as pi names it (e.g. `anthropic`).
         */
        provider: string;
        /**
         * True when the pods hold a secret for this provider, so the call went through a Custodian (which substitutes the real key).
         */
        viaCustodian: boolean;
        /**
         * The name of the key's environment variable (never its value): the one a Harness pod holds or, when no pod holds one, the one to add.
         */
        keyEnv: string;
        /**
         * True when a Harness pod holds the key named by `keyEnv`.
         */
        keyHeld: boolean;
        /**
         * True when a `harness.catalog` gateway serves this provider.
         */
        gateway: boolean;
      };
  /**
   * The coarse outcome of the model's check: the class the human lines are chosen by.
   */
  outcome:
    | "ok"
    | "text"
    | "busy"
    | "unavailable"
    | "length"
    | "key_refused"
    | "custodian_refused"
    | "timeout"
    | "unreachable"
    | "tls"
    | "http"
    | "protocol"
    | "not_checked"
    | "unsupported"
    | "skipped"
    | "not_checkable";
  /**
   * Pass, warning or error: whether this model stops the converge.
   */
  level: "pass" | "warning" | "error";
  /**
   * The stable code; switch on it rather than on `error`'s text.
   */
  code:
    | "PROVIDER_OK"
    | "PROVIDER_TEXT_ANSWER"
    | "PROVIDER_BUSY"
    | "PROVIDER_UNAVAILABLE"
    | "PROVIDER_LENGTH"
    | "PROVIDER_KEY_REFUSED"
    | "PROVIDER_CUSTODIAN_REFUSED"
    | "PROVIDER_TIMEOUT"
    | "PROVIDER_UNREACHABLE"
    | "PROVIDER_TLS"
    | "PROVIDER_HTTP_ERROR"
    | "PROVIDER_MODEL_NOT_FOUND"
    | "PROVIDER_TOOLS_NOT_ENABLED"
    | "PROVIDER_QUOTA_EXHAUSTED"
    | "PROVIDER_STREAM_ERROR"
    | "PROVIDER_CROSS_ORIGIN_REDIRECT"
    | "PROVIDER_PROTOCOL_ERROR"
    | "PROVIDER_NOT_CHECKED"
    | "PROVIDER_UNSUPPORTED"
    | "PROVIDER_CONTEXT_TOO_SMALL"
    | "PROVIDER_SKIPPED"
    | "PROVIDER_NOT_CHECKABLE_ADC"
    | "PROVIDER_NOT_CHECKABLE_OAUTH";
  /**
   * The one next action for a person, in English, fixed per `code`.
   */
  nextAction: string;
  /**
   * The `<error>` of the human lines: one sanitized line, at most 300 characters (a cut ends in `…`); `null` on a pass.
   */
  error: string | null;
  /**
   * The HTTP status of the last try that got a response; `null` when none did.
   */
  httpStatus: number | null;
  /**
   * The stop reason the model gave, in the API's own words (e.g. `tool_calls`, `length`); `null` when it gave none.
   */
  stopReason: string | null;
  /**
   * The name of the tool the model called; `null` when it called none.
   */
  toolName: string | null;
  /**
   * The start of a text answer (sanitized, at most 300 characters), for outcome `text`; `null` otherwise.
   */
  answer: string | null;
  /**
   * The token cap sent in the request.
   */
  maxTokens: number;
  /**
   * Milliseconds from the start of this model's check to its result, all tries and waits included.
   */
  elapsedMs: number;
  /**
   * The server behind the base URL, as far as the answer and its metadata told; null when nothing was learned (issue 16).
   */
  endpoint: Endpoint | null;
  /**
   * The cause the endpoint named; null when none.
   */
  cause: Cause | null;
  /**
   * The first tool call's arguments as far as they came (redacted, at most 300 characters), when the cap cut the call before they were complete; null otherwise.
   */
  toolArguments: string | null;
  /**
   * The plan asked for the probe's tool by name (`toolChoice: named`) and the model answered as if it could choose (in text, or with another tool).
   */
  toolChoiceIgnored: boolean;
  /**
   * Every HTTP try, in order; empty when no request was sent (e.g. `not_checked`, `unsupported`).
   */
  tries: Try1[];
}
