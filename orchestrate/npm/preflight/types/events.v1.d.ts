// Generated from probe/schemas/events.v1.schema.json by json-schema-to-typescript (pinned in tools/package.json).
// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schemas generate.

import type { ApiKind, Cause, Code, Endpoint, Level, ModelResult, Origin, Outcome, Route, Timings, Try } from "./common.v1.js";
export type { ApiKind, Cause, Code, Endpoint, Level, ModelResult, Origin, Outcome, Route, Timings, Try } from "./common.v1.js";

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
      origin: Origin;
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
      /**
       * The try.
       */
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
      /**
       * How far the model's try has come (issue 38, item 4): `noAnswer` (no byte yet, not even the headers: a load or a queue), `headers` (the answer's headers came, nothing of the model's yet), `text` (the model streams text, no tool call yet), `toolCall` (a tool call began); with no byte yet at a custom endpoint, what Ollama's `GET /api/ps` said when the note came: `ollamaLoaded` (it lists the model: a request queued behind others for a slot, not a load), `ollamaNotLoaded` (it does not: Ollama loads it first). Absent from an older probe: `noAnswer`.
       */
      stage?: "noAnswer" | "headers" | "text" | "toolCall" | "ollamaLoaded" | "ollamaNotLoaded";
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
      /**
       * The result, as in the verdict's `models`.
       */
      result: ModelResult;
    }
  | {
      /**
       * Discriminator: `summary`.
       */
      event: "summary";
      /**
       * The verdict, as `jr2-probe check --output json` prints it (verdict.v1).
       */
      verdict: Verdict;
    };

/**
 * What `jr2-probe check --output json` prints on stdout: per model whether it can call tools, and the run's verdict. `jr2 up` (TypeScript) reads it. Every free text in it was sanitized: it never holds a secret value. Incompatible changes bump `schema`; new optional information may be added only with a new schema version, since every object is closed (`additionalProperties: false`).
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
  origin: Origin;
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
  models: ModelResult[];
  /**
   * The human lines the probe wrote on stderr, in order, already sanitized. A caller that shows the result to a person can print these as they are.
   */
  lines: string[];
}
