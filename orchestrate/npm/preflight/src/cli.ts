#!/usr/bin/env node
// The `jr2-preflight` command of @jr2/preflight (`npx jr2-preflight rbac|images|check|run ...`): finds the binary as
// the client does (JR2_PREFLIGHT_BINARY, else the platform package; its version checked) and runs it with these
// arguments and this terminal, then exits as it did. A missing or unrunnable binary is the client's one `error:`
// line and exit 2 (the driver's exit for a usage error: nothing was contacted). SIGINT, SIGTERM and SIGHUP are passed
// on (not on Windows, where the console gives Ctrl-C to the driver itself), so the driver takes its own path (its
// check pods deleted, 130 or 143) and this process waits for it and exits as it did.

import { spawn } from "node:child_process";

import { PreflightBinaryError, resolveBinary } from "./binary.js";

let path: string;
try {
  path = resolveBinary().path;
} catch (e) {
  process.stderr.write(`${e instanceof PreflightBinaryError ? e.message : `error: ${String(e)}`}\n`);
  process.exit(2);
}

const child = spawn(path, process.argv.slice(2), { stdio: "inherit", shell: false, windowsHide: false });
// On Windows, Ctrl-C reaches every process of the console, the driver included, and Node's kill() would end the
// driver at once, before it deletes its pods: this process only waits for it there.
const forward =
  process.platform === "win32"
    ? (): void => {}
    : (signal: NodeJS.Signals): void => {
        child.kill(signal);
      };
const signals: NodeJS.Signals[] = process.platform === "win32" ? ["SIGINT"] : ["SIGINT", "SIGTERM", "SIGHUP"];
for (const s of signals) process.on(s, forward);
child.on("error", (e) => {
  process.stderr.write(`error: cannot run ${path}: ${e.message}\n`);
  process.exit(2);
});
child.on("exit", (code, signal) => {
  for (const s of signals) process.off(s, forward);
  if (signal !== null) {
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
