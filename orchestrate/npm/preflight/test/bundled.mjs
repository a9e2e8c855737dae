// A CLI that ships its code bundled (esbuild, as CLIs are shipped), the client inside the bundle: install-test.sh
// bundles this file from an app project where @jr2/preflight is installed, runs the bundle inside that project's tree
// and outside it, and reads the one JSON line it prints. Nothing here reads the package's own files: a bundle has none.
//
//   node <bundle> PLAN    {"version":..,"binary":<path>,"exitCode":0,"pods":<n>} after a dry run of PLAN, or
//                         {"version":..,"error":<the PreflightBinaryError's line>} when there is no binary to run

import { readFileSync } from "node:fs";

import { PreflightBinaryError, VERSION, resolveBinary, runPreflight } from "@jr2/preflight";

// No top-level await: the same file is bundled as ESM and as CommonJS (where esbuild leaves `import.meta` empty).
async function main() {
  const plan = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8"));
  let binary;
  try {
    binary = resolveBinary().path;
  } catch (e) {
    if (!(e instanceof PreflightBinaryError)) throw e;
    return { version: VERSION, error: e.message };
  }
  const r = await runPreflight(plan, { dryRun: true });
  const pods = (r.dryRunPods ?? "").match(/^kind: Pod$/gm)?.length ?? 0;
  return { version: VERSION, binary, exitCode: r.exitCode, pods, lines: r.lines };
}

main().then(
  (out) => console.log(JSON.stringify(out)),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
