// Runs the driver as `jr2 up` does: the binary itself (no shell), the plan on stdin, the lines on stderr handed over
// one by one as they come, the JSON verdict read from stdout. Cancelling goes over stdin (`cancel`), because Node's
// kill() on Windows ends a process at once and the driver would never delete its check pods; the driver takes the
// path SIGINT takes (pods deleted, exit 130, the interrupted line).

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

import type { Plan } from "../types/plan.v1.js";
import type { DriverVerdict } from "../types/driver-verdict.v1.js";
import { resolveBinary } from "./binary.js";

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
   * Cancels the run: the driver is sent `cancel`, deletes its check pods and exits 130 with its interrupted line;
   * the promise then resolves with that result. A driver that has not exited `killAfterMs` later is killed.
   * Already aborted: nothing is started and the promise rejects with the signal's reason.
   */
  signal?: AbortSignal | undefined;
  /**
   * Called with each line the driver writes on stderr (without its newline), in order, as it comes. One that throws
   * cancels the run, and the promise rejects with what it threw once the driver has exited.
   */
  onLine?: ((line: string) => void) | undefined;
  /** The binary (default: {@link resolveBinary}'s). */
  binary?: string | undefined;
  /** The driver's environment (default: process.env). */
  env?: NodeJS.ProcessEnv | undefined;
  /** After a cancel, how long to wait for the driver's exit before killing it (default 30 s: its deletes take up to 10 s). */
  killAfterMs?: number | undefined;
}

export interface PreflightResult {
  /**
   * The driver's exit code: 0 no error (warnings allowed), 1 an error, 2 bad input or usage (nothing created, no
   * verdict), 130 / 143 interrupted (the pods deleted). `null` only when it was killed (see `killed`).
   */
  exitCode: number | null;
  /** The verdict it printed (`--output json`); absent when it printed none (exit 2, or killed). */
  verdict?: DriverVerdict | undefined;
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
  return args;
}

/**
 * Runs the preflight of `plan` and resolves with the driver's exit code, its verdict and its lines. Rejects only
 * when the driver cannot be found or started, when the signal was aborted before the start, or when it exits 0 or 1
 * without a verdict a reader can parse.
 *
 * The plan goes on stdin as one line of JSON, and stdin stays open while the driver runs: if this process dies, the
 * driver sees stdin close and cancels as on `cancel` (the stale-pod sweep of the next run is the backstop).
 */
export function runPreflight(plan: Plan, options: PreflightOptions = {}): Promise<PreflightResult> {
  const { signal, onLine } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  let binary: string;
  try {
    binary = options.binary ?? resolveBinary({ env: options.env }).path;
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
    let killTimer: NodeJS.Timeout | undefined;
    let settled = false;
    let exit: { code: number | null } | undefined;
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
      const result: PreflightResult = { exitCode: exit.code, lines, killed };
      if (text.trim() !== "") {
        try {
          result.verdict = JSON.parse(text) as DriverVerdict;
        } catch (e) {
          reject(new Error(`error: jr2-preflight printed a verdict that is not JSON (${String(e)})`));
          return;
        }
      } else if (exit.code === 0 || exit.code === 1) {
        reject(new Error(`error: jr2-preflight exited ${exit.code} without a verdict on stdout`));
        return;
      }
      resolvePromise(result);
    };

    child.on("error", (e) => {
      if (settled) return;
      settled = true;
      clearTimeout(killTimer);
      signal?.removeEventListener("abort", cancel);
      reject(new Error(`error: cannot run ${binary}: ${e.message}`));
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
    child.on("close", (code) => {
      exit = { code };
      child.stdin.destroy();
      finish();
    });
    child.stdin.write(`${JSON.stringify(plan)}\n`);
  });
}
