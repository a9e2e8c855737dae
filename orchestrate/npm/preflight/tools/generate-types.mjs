// Writes one .d.ts per JSON Schema of the driver and the probe into OUT_DIR, with the pinned json-schema-to-typescript
// (it keeps the tagged unions and literal enums). check.sh runs it into a temporary folder and fails when the result
// differs from types/ (a new file counts); `tools/generate-types.mjs types` rewrites types/.
//   node tools/generate-types.mjs OUT_DIR      (from the package folder, node_modules linked by check.sh)
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../../../..");

/** Each schema and the name of its root type (the schemas' titles are sentences, not type names). */
export const SCHEMAS = [
  ["orchestrate/schemas/plan.v1.schema.json", "Plan"],
  ["orchestrate/schemas/driver-verdict.v1.schema.json", "DriverVerdict"],
  ["probe/schemas/verdict.v1.schema.json", "ProbeVerdict"],
  ["probe/schemas/events.v1.schema.json", "ProbeEvent"],
  ["probe/schemas/summary.v1.schema.json", "ProbeSummary"],
  ["probe/schemas/run-spec.v1.schema.json", "RunSpec"],
];

/** `orchestrate/schemas/plan.v1.schema.json` → `plan.v1` */
export const stem = (path) => path.split("/").pop().replace(/\.schema\.json$/, "");

const out = process.argv[2];
if (!out) {
  console.error("error: generate-types: name the output folder");
  process.exit(2);
}
await mkdir(out, { recursive: true });
for (const [path, name] of SCHEMAS) {
  const schema = JSON.parse(await readFile(join(repo, path), "utf8"));
  delete schema.title;
  delete schema.$id;
  const ts = await compile(schema, name, {
    bannerComment: `// Generated from ${path} by json-schema-to-typescript (pinned in tools/package.json).\n// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schema generates.`,
    unreachableDefinitions: true,
    cwd: join(repo, dirname(path)),
    style: { printWidth: 120 },
  });
  const file = join(out, `${stem(path)}.d.ts`);
  await writeFile(file, ts);
}
