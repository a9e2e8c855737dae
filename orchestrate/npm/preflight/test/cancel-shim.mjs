#!/usr/bin/env node
// Test-only, and only until the driver's `--cancel-on-stdin` is merged (test/harness.mjs `testDriver` uses it when
// the driver of this checkout lacks the flag): stands in front of $JR2_SHIM_DRIVER with the stdin protocol the
// client speaks. It drops `--cancel-on-stdin`, hands the first stdin line (the plan) to the driver and closes the
// driver's stdin, then turns a `cancel` line or EOF on its own stdin into SIGINT, and exits as the driver exits.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const driver = process.env.JR2_SHIM_DRIVER;
const args = process.argv.slice(2).filter((a) => a !== "--cancel-on-stdin");
const child = spawn(driver, args, { stdio: ["pipe", "inherit", "inherit"] });
child.on("close", (code, signal) => process.exit(code ?? (signal === "SIGINT" ? 130 : 1)));
let plan = true;
const interrupt = () => child.kill("SIGINT");
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (plan) {
    plan = false;
    child.stdin.end(`${line}\n`);
  } else if (line === "cancel") {
    interrupt();
  }
});
lines.on("close", interrupt);
