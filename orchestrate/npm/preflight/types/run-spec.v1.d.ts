// Generated from probe/schemas/run-spec.v1.schema.json by json-schema-to-typescript (pinned in tools/package.json).
// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schemas generate.

/**
 * What `jr2-probe run` checks in the check pod (`--spec FILE|-` or `--spec-json JSON`). The driver writes it from the plan; it carries env var NAMES, never a key's value. Models are checked in the order given and reported in that order.
 */
export interface RunSpec {
  /**
   * The spec's version.
   */
  schema: "jr2.dev/provider-preflight-run/v1";
  /**
   * No answer within this, per model, is a timeout.
   */
  timeoutSeconds?: number;
  /**
   * Tries per model on 429, 529 and 503, the first included.
   */
  maxTries?: number;
  /**
   * Models checked at once, in all.
   */
  concurrency?: number;
  /**
   * Models checked at once against one endpoint (the scheme, host and port of its base URL): the most requests of one check a provider sees at once. The driver leaves it out (the probe's default).
   */
  concurrencyPerHost?: number;
  /**
   * Seconds a model waits for its verdict before its first progress line (a `waiting` event), and between the next ones; 0: none. The driver leaves it out unless its plan sets waitingNoteSeconds.
   */
  waitingNoteSeconds?: number;
  /**
   * The models, in plan order.
   */
  models: Model[];
}

export interface Model {
  /**
   * `<provider>/<id>` as the Agent names it; split at the first `/`.
   */
  model: string;
  /**
   * catalog: a model of pi's catalog at the catalog's base URL; gateway: a catalog model behind a harness.catalog gateway (baseUrl required); custom: the custom provider, harness.provider (baseUrl required).
   */
  source: "catalog" | "gateway" | "custom";
  /**
   * The base URL the API appends its path to.
   */
  baseUrl?: string;
  /**
   * pi's API kind; default: openai-completions for custom, the catalog's otherwise.
   */
  api?:
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
   * The env var that holds the key (in a Custodian pod its value is the Stand-in jr2-held-<NAME>). Absent: no key.
   */
  keyEnv?: string;
  /**
   * A Harness pod holds that key (custom: harness.provider.apiKey is set).
   */
  keyHeld?: boolean;
  /**
   * The pods hold a secret, so the call goes through a Custodian.
   */
  viaCustodian?: boolean;
  /**
   * The model's maxTokens as jr2 resolves it; 0 sends 1, as pi does. Absent: 0 for a custom model (what jr2 builds it with when harness.provider sets none, so 1 is sent), the catalog's otherwise.
   */
  maxTokens?: number;
  /**
   * The model's context window; the token cap is clamped to it as pi clamps it.
   */
  contextWindow?: number;
  /**
   * The tool_choice to send; unset (the default) sends none, as a Turn does.
   */
  toolChoice?: "unset" | "auto" | "none" | "required" | "named";
}
