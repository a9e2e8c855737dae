// Generated from the $defs that 6 schemas share by json-schema-to-typescript (pinned in tools/package.json).
// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schemas generate.

/**
 * The coarse class of what a model's check (or one try) ended with, in the order the contract decides them. `ok`: a tool call came back. `text`: the model answered in text, not with a tool call. `busy`: 429, 529 or an overload signal on every try, or on every try but the last, which got no answer. `unavailable`: 503 on every try. `length`: the model stopped for length before any tool call, inside the first call's arguments, or after a complete call (pi-agent-core fails every call of a message the cap stopped). `key_refused`: 401 or 403 from the endpoint (or Gemini's 400 `API_KEY_INVALID`). `custodian_refused`: the Custodian answered instead of the provider. `timeout`: no answer within the model's deadline. `unreachable`: DNS failure, connection refused, no route, connect timeout, or a proxy that refused the tunnel. `tls`: certificate not trusted, name mismatch or handshake failure. `http`: any other HTTP status, or an error the provider reported inside a 200 stream. `protocol`: a 200 whose body or stream cannot be read as the API's format. `not_checked`: the check stopped, or its deadline passed, before this model was reached. `unsupported`: the preflight cannot send this model's request yet (an API kind or credential chain it does not speak). `skipped`: the preflight was skipped (`--skip-provider-preflight`); nothing was sent, and the skip's warning line names the model. `not_checkable`: the preflight cannot check this model by design (Vertex with Application Default Credentials, openai-codex's OAuth login: credentials only a Turn holds); a warning line says why, and the run goes on.
 */
export type Outcome =
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
 * How a result weighs on the converge. `pass`: the model can call tools. `warning`: printed, but the converge goes on. `error`: the converge stops (the probe exits 1).
 */
export type Level = "pass" | "warning" | "error";

/**
 * The stable code of the result, one per documented cause; never renamed, so `jr2 up` and support tooling may switch on it. It refines `outcome` (e.g. `PROVIDER_MODEL_NOT_FOUND`, `PROVIDER_QUOTA_EXHAUSTED` and `PROVIDER_CROSS_ORIGIN_REDIRECT` come with outcome `http`). The troubleshooting page documents each code.
 */
export type Code =
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
 * The model's API kind, by pi's names (pi-ai 0.82.1): the wire format the request was (or would have been) sent in.
 */
export type ApiKind =
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
 * Where the check ran; discriminate on `kind`.
 */
export type Origin =
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
 * How the model is reached; discriminate on `kind`. Decides the form of the model's human lines and which next action applies.
 */
export type Route =
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
 * Time marks of one try, each in milliseconds from the try's start. A mark is `null` when that step did not happen.
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
 * One HTTP try of a model's check.
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
  outcome: Outcome;
  /**
   * The wait the server asked for before the next try (`Retry-After` or the provider's own hint), in milliseconds; `null` when it asked for none.
   */
  waitAskedMs: number | null;
  /**
   * The wait the probe took before the next try, in milliseconds; 0 after the last try.
   */
  waitTakenMs: number;
  /**
   * The try's time marks.
   */
  timings: Timings;
}

/**
 * What the probe learned about the server behind the base URL (issue 16): from the answer's `server:` header and error body, and for a custom endpoint from one GET of its metadata (`/v1/models`, llama.cpp's `/props`, vLLM's `/version`). Fields are null when not known; `endpoint` is null when nothing was learned.
 */
export interface Endpoint {
  /**
   * The server: `llamaCpp` (`server: llama.cpp`), `vllm` (`server: uvicorn` and `/version`, or `/v1/models` owned_by vllm), `litellm` (`x-litellm-*` headers, `litellm.` messages), `ollama` (`fp_ollama` in the chunks, its own error messages, or `GET /api/ps` lists models), `unknown`.
   */
  kind: "llamaCpp" | "vllm" | "litellm" | "ollama" | "unknown";
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
  /**
   * llama.cpp's slots (`/props` `total_slots`, its `-np`): each serves `contextLength` tokens, its share of `-c`; null when not known.
   */
  slots: number | null;
}

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
      server: "llamaCpp" | "vllm" | "litellm" | "ollama" | "unknown";
      /**
       * llama.cpp's slots (`-np`) when more than one: `served` is one slot's share of `-c` (issue 27, item 7); null otherwise.
       */
      slots: number | null;
      /**
       * Ollama counted a prompt that filled the whole served context (`usage.prompt_tokens` equal to `served`): it cut the probe's own prompt to fit, silently (issue 38); `needed` is then the least that holds more. False otherwise.
       */
      promptCut: boolean;
    }
  | {
      /**
       * A timeout while llama-server's `GET /slots` showed every slot busy: the request waited in its queue, not for a model loading (issue 27, item 8).
       */
      kind: "llamaCppSlotsBusy";
      /**
       * The server's slots (`-np`), all busy.
       */
      slots: number;
    }
  | {
      /**
       * Ollama refused tools (`<model> does not support tools`): the model's TEMPLATE does not use `.Tools`; `ollama show <model>` lists its capabilities (issue 38).
       */
      kind: "ollamaTemplateWithoutTools";
    }
  | {
      /**
       * Ollama has no model of that name or tag: `ollama list`, `ollama pull <name:tag>` (issue 38).
       */
      kind: "ollamaModelNotFound";
    }
  | {
      /**
       * Ollama answered `404 page not found` to a base URL that does not end in `/v1` (`GET /api/ps` named it Ollama): its OpenAI-compatible API is under `/v1` (issue 38).
       */
      kind: "ollamaBaseUrlWithoutV1";
    }
  | {
      /**
       * A timeout while Ollama's `GET /api/ps` listed the model as loaded: not a load; the request waited for a busy slot (`OLLAMA_NUM_PARALLEL`), or Ollama's tool parser held back a tool call the model never closed (issue 38).
       */
      kind: "ollamaLoadedNoAnswer";
    }
  | {
      /**
       * A timeout after the model had streamed text, while Ollama's `GET /api/ps` listed it as loaded: no queue; Ollama's tool parser held back a tool call the model began and never closed (issue 38).
       */
      kind: "ollamaHeldBackCall";
    }
  | {
      /**
       * The stream closed with no stop reason after the model had written one token over and over (30 times and more): Ollama cuts a generation whose token repeats more than 30 times (`token repeat limit reached`, in its debug log only), and a Turn gets the same cut stream (issue 38).
       */
      kind: "ollamaRepeatLimit";
    };

/**
 * What one model's check ended with.
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
  api: ApiKind;
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
  route: Route;
  /**
   * The coarse outcome of the model's check: the class the human lines are chosen by.
   */
  outcome: Outcome;
  /**
   * Pass, warning or error: whether this model stops the converge.
   */
  level: Level;
  /**
   * The stable code; switch on it rather than on `error`'s text.
   */
  code: Code;
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
   * The first tool call's arguments as far as they came (redacted, at most 300 characters), when the cap stopped the message in the call or after it (`length`, cause `toolCallCut`); null otherwise.
   */
  toolArguments: string | null;
  /**
   * The plan asked for the probe's tool by name (`toolChoice: named`) and the model answered as if it could choose (in text, or with another tool).
   */
  toolChoiceIgnored: boolean;
  /**
   * Why the served context was not checked, when a contextWindow was configured or a LiteLLM gateway answered and the context could not be learned (issue 27, item 6): `gatewayWithoutContext` (the gateway's `/v1/models` and `/model/info` name no `max_input_tokens` for the model; its own metadata answers for the backend's), `serverWithoutContext` (the server's `/v1/models` and `/props` give none). A line says so after the model's lines. null when the context was learned or did not matter.
   */
  contextUnchecked: "gatewayWithoutContext" | "serverWithoutContext" | null;
  /**
   * Ollama answered, and does to a Turn's request what the verdict cannot show (issue 38), each with its note line after the model's lines: `maxCompletionTokens` (the cap goes as `max_completion_tokens`, which Ollama ignores), `developerRole` (the system prompt goes as a `developer` message, which Ollama's templates do not render), `temperature` (no temperature named: Ollama's `/v1` samples at 1.0; said with a text answer). Empty for any other server.
   */
  ollamaDrops: ("maxCompletionTokens" | "developerRole" | "temperature")[];
  /**
   * Every HTTP try, in order; empty when no request was sent (e.g. `not_checked`, `unsupported`).
   */
  tries: Try[];
}
