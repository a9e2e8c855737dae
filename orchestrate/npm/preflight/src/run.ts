// Runs the driver as `jr2 up` does: the binary itself (no shell), the plan on stdin, the lines on stderr handed over
// one by one as they come, the JSON verdict read from stdout. Cancelling goes over stdin (`cancel`), because Node's
// kill() on Windows ends a process at once and the driver would never delete its check pods; the driver takes the
// path SIGINT takes (pods deleted, exit 130, the interrupted line).

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

import type { Plan } from "../types/plan.v1.js";
import type { DriverVerdict } from "../types/driver-verdict.v1.js";
import { type Environment, type PreflightBinaryError, resolveBinary } from "./binary.js";

/**
 * What `signal` takes: an `AbortSignal` (`AbortController().signal`, `AbortSignal.timeout()`), written out so that
 * these types need no `@types/node` and no DOM library (TypeScript 7 includes no types by default: `types: []`).
 */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * The driver could not be started, ended otherwise than by one of its documented exits (a crash: a signal, a
 * panic's exit), or exited 0 or 1 without a verdict a reader can parse. Its message is one `error:` line;
 * `exitCode` and `signal` say how it ended (both null when it never started).
 */
export class PreflightRunError extends Error {
  override name = "PreflightRunError";
  /** The driver's exit code; null when a signal ended it or it never started. */
  readonly exitCode: number | null;
  /** The signal that ended it (`SIGSEGV`, `SIGKILL`), or null. */
  readonly signal: string | null;
  /** The last line it wrote on stderr, if any. */
  readonly lastLine: string | undefined;

  constructor(message: string, how: { exitCode?: number | null; signal?: string | null; lastLine?: string | undefined } = {}) {
    super(message);
    this.exitCode = how.exitCode ?? null;
    this.signal = how.signal ?? null;
    this.lastLine = how.lastLine;
  }
}

export interface PreflightOptions {
  /** The kubeconfig context (`--context`; default: the kubeconfig's current one). */
  context?: string | undefined;
  /** The namespace (`-n`; default: the plan's). */
  namespace?: string | undefined;
  /** The kubeconfig file (`--kubeconfig`; default: KUBECONFIG, then ~/.kube/config). */
  kubeconfig?: string | undefined;
  /** The whole check's deadline (`--timeout`): milliseconds, or the driver's own form ("300s", "5m"). */
  timeout?: number | string | undefined;
  /** `--skip-provider-preflight`: one warning line, an ok verdict with `skipped: true`; nothing contacted. */
  skip?: boolean | undefined;
  /**
   * `--dry-run`: the check pods are printed, nothing is contacted. The result has `exitCode` 0, no verdict, and the
   * pods (YAML, one document each) in `dryRunPods`.
   */
  dryRun?: boolean | undefined;
  /** `--keep-pod`: a failed check pod is kept for inspection (the lines say how to delete it). */
  keepPod?: boolean | undefined;
  /** `--probe-image`: the probe's image, in place of the plan's `probeImage`. */
  probeImage?: string | undefined;
  /**
   * `--evidence`: a folder (new, or empty) the driver writes a secret-safe evidence bundle to when the check fails.
   * One that exists and is not empty is refused (exit 2) before anything reaches the cluster.
   */
  evidence?: string | undefined;
  /**
   * Cancels the run: the driver is sent `cancel`, deletes its check pods and exits 130 with its interrupted line;
   * the promise then resolves with that result. A driver that has not exited `killAfterMs` later is killed.
   * Already aborted: nothing is started and the promise rejects with the signal's reason.
   */
  signal?: AbortSignalLike | undefined;
  /**
   * Called with each line the driver writes on stderr (without its newline), in order, as it comes. One that throws
   * cancels the run, and the promise rejects with what it threw once the driver has exited.
   */
  onLine?: ((line: string) => void) | undefined;
  /** The binary (default: {@link resolveBinary}'s); its version is checked as JR2_PREFLIGHT_BINARY's is. */
  binary?: string | undefined;
  /** The driver's environment (default: process.env). */
  env?: Environment | undefined;
  /** After a cancel, how long to wait for the driver's exit before killing it (default 30 s: its deletes take up to 10 s). */
  killAfterMs?: number | undefined;
}

/**
 * The driver's documented exit codes: 0 no error (warnings allowed), 1 an error, 2 bad input or usage (nothing
 * created, no verdict), 129 hung up (SIGHUP: a closed terminal or SSH session), 130 interrupted (SIGINT, or a
 * cancel), 143 terminated (SIGTERM); after 129, 130 and 143 the check pods were deleted.
 */
export type ExitCode = 0 | 1 | 2 | 129 | 130 | 143;

/** The documented exit codes, for a runtime check. */
export const EXIT_CODES: readonly ExitCode[] = [0, 1, 2, 129, 130, 143];

export interface PreflightResult {
  /**
   * The driver's exit code, one of the documented ones ({@link ExitCode}); `null` only when it was killed after a
   * cancel it did not answer (see `killed`). Any other exit (a crash) rejects the promise.
   */
  exitCode: ExitCode | null;
  /** The verdict it printed (`--output json`); absent when it printed none (exit 2, a dry run, or killed). */
  verdict?: DriverVerdict | undefined;
  /** With `dryRun`: the check pods it would create, as it printed them (YAML). */
  dryRunPods?: string | undefined;
  /** Every line it wrote on stderr, in order: the contract's lines, the last one an `error:` line on a failure. */
  lines: string[];
  /** Whether it was killed after a cancel that it did not answer within `killAfterMs`. */
  killed: boolean;
}

/** The driver's arguments for these options: the plan on stdin, JSON on stdout, cancel over stdin. */
export function driverArgs(options: PreflightOptions = {}): string[] {
  const args = ["run", "--plan", "-", "--output", "json", "--cancel-on-stdin"];
  if (options.kubeconfig !== undefined) args.push("--kubeconfig", options.kubeconfig);
  if (options.context !== undefined) args.push("--context", options.context);
  if (options.namespace !== undefined) args.push("--namespace", options.namespace);
  if (options.timeout !== undefined) {
    args.push("--timeout", typeof options.timeout === "number" ? `${Math.ceil(options.timeout)}ms` : options.timeout);
  }
  if (options.skip === true) args.push("--skip-provider-preflight");
  if (options.dryRun === true) args.push("--dry-run");
  if (options.keepPod === true) args.push("--keep-pod");
  if (options.probeImage !== undefined) args.push("--probe-image", options.probeImage);
  if (options.evidence !== undefined) args.push("--evidence", options.evidence);
  return args;
}

/**
 * Runs the preflight of `plan` and resolves with the driver's exit code, its verdict and its lines. Rejects only
 * when the driver cannot be found ({@link PreflightBinaryError}), when the signal was aborted before the start (its
 * reason), or when it cannot be started, crashes, or exits 0 or 1 without a verdict a reader can parse
 * ({@link PreflightRunError}).
 *
 * The plan goes on stdin as one line of JSON, and stdin stays open while the driver runs: if this process dies, the
 * driver sees stdin close and cancels as on `cancel` (the stale-pod sweep of the next run is the backstop).
 */
export function runPreflight(plan: Plan, options: PreflightOptions = {}): Promise<PreflightResult> {
  const { signal, onLine } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  let binary: string;
  try {
    binary = resolveBinary({ env: options.env, binary: options.binary }).path;
  } catch (e) {
    return Promise.reject(e);
  }
  const child = spawn(binary, driverArgs(options), {
    env: options.env ?? process.env,
    stdio: ["pipe", "pipe", "pipe"],
    shell: false,
    windowsHide: true,
  });
  return new Promise<PreflightResult>((resolvePromise, reject) => {
    const lines: string[] = [];
    const stdout: Buffer[] = [];
    let killed = false;
    let killTimer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    let exit: { code: number | null; signal: string | null } | undefined;
    let stderrDone = false;
    let lineError: unknown;

    const cancel = (): void => {
      if (exit !== undefined || killTimer !== undefined) return;
      child.stdin.write("cancel\n");
      killTimer = setTimeout(() => {
        killed = true;
        child.kill("SIGKILL");
      }, options.killAfterMs ?? 30_000);
    };
    signal?.addEventListener("abort", cancel, { once: true });

    const finish = (): void => {
      if (settled || exit === undefined || !stderrDone) return;
      settled = true;
      clearTimeout(killTimer);
      signal?.removeEventListener("abort", cancel);
      if (lineError !== undefined) {
        reject(lineError);
        return;
      }
      const text = Buffer.concat(stdout).toString("utf8");
      const code = exit.code;
      if (code === null ? !killed : !(EXIT_CODES as readonly number[]).includes(code)) {
        const how = code === null ? `was ended by ${exit.signal ?? "a signal"}` : `exited ${code}`;
        const last = lines.at(-1);
        reject(
          new PreflightRunError(
            `error: jr2-preflight ${how}, which is none of its documented exits (${EXIT_CODES.join(", ")})` +
              (last !== undefined ? `; its last line: ${last}` : ""),
            { exitCode: code, signal: exit.signal, lastLine: last },
          ),
        );
        return;
      }
      const result: PreflightResult = { exitCode: code as ExitCode | null, lines, killed };
      if (options.dryRun === true && code === 0) {
        result.dryRunPods = text;
      } else if (text.trim() !== "") {
        try {
          result.verdict = JSON.parse(text) as DriverVerdict;
        } catch (e) {
          reject(
            new PreflightRunError(`error: jr2-preflight printed a verdict that is not JSON (${String(e)})`, {
              exitCode: code,
              lastLine: lines.at(-1),
            }),
          );
          return;
        }
      } else if (exit.code === 0 || exit.code === 1) {
        reject(
          new PreflightRunError(`error: jr2-preflight exited ${exit.code} without a verdict on stdout`, {
            exitCode: exit.code,
            lastLine: lines.at(-1),
          }),
        );
        return;
      }
      resolvePromise(result);
    };

    child.on("error", (e) => {
      if (settled) return;
      settled = true;
      clearTimeout(killTimer);
      signal?.removeEventListener("abort", cancel);
      reject(new PreflightRunError(`error: cannot run ${binary}: ${e.message}`));
    });
    // A driver that exits before reading all of its stdin (bad usage) closes the pipe: not an error of the run.
    child.stdin.on("error", () => {});
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    const reader = createInterface({ input: child.stderr, crlfDelay: Infinity });
    reader.on("line", (line) => {
      lines.push(line);
      try {
        onLine?.(line);
      } catch (e) {
        // A callback that throws ends the run the clean way; the promise rejects with its error.
        lineError ??= e;
        cancel();
      }
    });
    reader.on("close", () => {
      stderrDone = true;
      finish();
    });
    child.on("close", (code, exitSignal) => {
      exit = { code, signal: exitSignal };
      child.stdin.destroy();
      finish();
    });
    child.stdin.write(`${JSON.stringify(plan)}\n`);
  });
}
