// Generated from probe/schemas/summary.v1.schema.json by json-schema-to-typescript (pinned in tools/package.json).
// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schemas generate.

import type { Code, Outcome } from "./common.v1.js";
export type { Code, Outcome } from "./common.v1.js";

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
    o: Outcome;
    /**
     * The model's stable code (`code` of the verdict).
     */
    c: Code;
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
