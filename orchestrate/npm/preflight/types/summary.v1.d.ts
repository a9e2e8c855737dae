// Generated from probe/schemas/summary.v1.schema.json by json-schema-to-typescript (pinned in tools/package.json).
// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schema generates.

/**
 * The coarse class of what a model's check (or one try) ended with, in the order the contract decides them. `ok`: a tool call came back. `text`: the model answered in text, not with a tool call. `busy`: 429, 529 or an overload signal on every try, or on every try but the last, which got no answer. `unavailable`: 503 on every try. `length`: the model stopped for length before any tool call. `key_refused`: 401 or 403 from the endpoint (or Gemini's 400 `API_KEY_INVALID`). `custodian_refused`: the Custodian answered instead of the provider. `timeout`: no answer within the model's deadline. `unreachable`: DNS failure, connection refused, no route, connect timeout, or a proxy that refused the tunnel. `tls`: certificate not trusted, name mismatch or handshake failure. `http`: any other HTTP status, or an error the provider reported inside a 200 stream. `protocol`: a 200 whose body or stream cannot be read as the API's format. `not_checked`: the check stopped, or its deadline passed, before this model was reached. `unsupported`: the preflight cannot send this model's request yet (an API kind or credential chain it does not speak). `skipped`: the preflight was skipped (`--skip-provider-preflight`); nothing was sent, and the skip's warning line names the model. `not_checkable`: the preflight cannot check this model by design (Vertex with Application Default Credentials, openai-codex's OAuth login: credentials only a Turn holds); a warning line says why, and the run goes on.
 *
 * This interface was referenced by `ProbeSummary`'s JSON-Schema
 * via the `definition` "Outcome".
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
 * The stable code of the result, one per documented cause; never renamed, so `jr2 up` and support tooling may switch on it. It refines `outcome` (e.g. `PROVIDER_MODEL_NOT_FOUND`, `PROVIDER_QUOTA_EXHAUSTED` and `PROVIDER_CROSS_ORIGIN_REDIRECT` come with outcome `http`). The troubleshooting page documents each code.
 *
 * This interface was referenced by `ProbeSummary`'s JSON-Schema
 * via the `definition` "Code".
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
 * The compact summary `jr2-probe run` writes to the termination-message path (`/dev/termination-log`). The kubelet keeps at most 4096 bytes of it, so keys are short and detail is dropped to fit (`truncated`): first the errors are cut shorter, then left out, then the model names, then the entries themselves. The driver falls back on it when the pod's log was lost. `Outcome` and `Code` are verdict.v1.schema.json's (a test keeps them equal).
 */
export interface ProbeSummary {
  /**
   * The identifier of this schema.
   */
  schema: "jr2.dev/provider-preflight-summary/v1";
  /**
   * True when no model's level is `error` (the verdict's `ok`).
   */
  ok: boolean;
  /**
   * How many models the run checked.
   */
  n: number;
  /**
   * The probe's warning lines about its run (a CA file it cannot read), each at most 300 characters; left out first when room runs out, absent when there are none.
   */
  w?: string[];
  /**
   * One entry per model, in the run spec's order; empty (with `truncated`) when even the shortest entries did not fit.
   *
   * Items: One model's entry.
   */
  models: {
    /**
     * The model as the run spec names it; left out when room ran out (the entries keep the run spec's order).
     */
    m?: string;
    /**
     * The model's outcome (`outcome` of the verdict).
     */
    o:
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
     * The model's stable code (`code` of the verdict).
     */
    c:
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
     * The last HTTP status; left out when none came back.
     */
    s?: number;
    /**
     * How many tries were made.
     */
    t: number;
    /**
     * Milliseconds from the model's start to its result.
     */
    ms: number;
    /**
     * The model's `<error>`, escaped and cut to fit (300, 120 or 40 characters); left out on a pass or when room ran out.
     */
    e?: string;
  }[];
  /**
   * Some detail was left out to fit in 4096 bytes.
   */
  truncated: boolean;
}
