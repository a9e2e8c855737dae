// A small consumer of the package as jr2 up would write it, type-checked with --strict by check.sh (never run): the
// package's own name resolves through its `exports` to dist/index.d.ts, and the generated unions narrow.
import {
  type DriverVerdict,
  type ModelResult,
  type Origin,
  type Plan,
  type PreflightResult,
  PreflightBinaryError,
  resolveBinary,
  runPreflight,
} from "@jr2/preflight";

function where(origin: Origin): string {
  switch (origin.kind) {
    case "thisMachine":
      return "this machine";
    case "node":
      return `node ${origin.name}`;
    default: {
      const never: never = origin;
      return never;
    }
  }
}

function exitMeaning(verdict: DriverVerdict): string {
  switch (verdict.exitCode) {
    case 0:
      return "go on";
    case 1:
      return "stop";
    case 130:
    case 143:
      return "interrupted";
    default: {
      const never: never = verdict.exitCode;
      return never;
    }
  }
}

function failed(models: ModelResult[]): string[] {
  return models
    .filter((m) => m.level === "error")
    .map((m) => `${m.model}: ${m.code} (${m.route.kind === "custom" ? m.baseUrl : m.host})`);
}

export const here: string = where({ kind: "thisMachine" });

export async function preflight(plan: Plan, kubeContext: string | undefined, signal: AbortSignal): Promise<boolean> {
  try {
    resolveBinary();
  } catch (e) {
    if (e instanceof PreflightBinaryError) console.error(e.message);
    return false;
  }
  const result: PreflightResult = await runPreflight(plan, {
    context: kubeContext,
    signal,
    timeout: 300_000,
    onLine: (line) => process.stderr.write(`${line}\n`),
  });
  if (result.verdict === undefined) return false;
  console.error(exitMeaning(result.verdict), failed(result.verdict.models).join(", "));
  return result.verdict.ok && result.exitCode === 0;
}
