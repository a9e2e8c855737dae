// Writes the package's .d.ts files from the JSON Schemas of the driver and the probe into OUT_DIR, with the pinned
// json-schema-to-typescript (it keeps the tagged unions and literal enums). check.sh runs it into a temporary folder
// and fails when the result differs from types/ (a new file counts); `tools/generate-types.mjs types` rewrites types/.
//   node tools/generate-types.mjs OUT_DIR      (from the package folder, node_modules linked by check.sh)
//
// One file per schema, plus common.v1.d.ts: the definitions several schemas hold (Outcome, Code, Cause, ModelResult...)
// are generated once there, and each schema's file imports and re-exports them. A shared definition must be the same
// JSON in every schema that holds it (the Rust schema tests keep the copies equal); the generator fails otherwise.
// Every `$ref` becomes a reference by name and every definition is compiled on its own, so json-schema-to-typescript
// never meets the same definition twice (its `Timings1`, `Try1`, `ModelResult1`).
//
// Three shapes are the generator's, not the schema's, because the schema's own would reject ordinary TypeScript:
//   - plan.v1 `podSpec` (a Kubernetes core/v1 PodSpec, an open object): the `PodSpec` interface below, its fields
//     typed, which takes an interface-typed pod spec (@kubernetes/client-node's V1PodSpec) as well as an object literal;
//   - plan.v1's optional fields take `undefined` and its lists are `readonly` (forOrdinaryCode): what jr2 up hands
//     over is built from its own optional values and readonly lists;
//   - plan.v1 `placements` (`minItems: 1`): a plain `Placement[]`, so that a `.map()` result is one (the driver
//     refuses an empty list: exit 2 and its one `error: plan.placements: empty` line, as any bad input).
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { isDeepStrictEqual } from "node:util";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";
import ts from "typescript";

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

/** The file of the definitions that more than one schema holds. */
export const COMMON = "common.v1";

/** `orchestrate/schemas/plan.v1.schema.json` → `plan.v1` */
export const stem = (path) => path.split("/").pop().replace(/\.schema\.json$/, "");

/** A definition's type name: `dnsLabel` → `DnsLabel` (as json-schema-to-typescript names them). */
const typeName = (key) => key.charAt(0).toUpperCase() + key.slice(1);

const PRETTIER = { printWidth: 120 };
const banner = (what) =>
  `// Generated from ${what} by json-schema-to-typescript (pinned in tools/package.json).\n` +
  `// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schemas generate.`;

/** The plan's pod spec, as TypeScript (see the header). */
const POD_SPEC = `
/**
 * A Kubernetes core/v1 PodSpec (plan.v1 \`podSpec\`), with the fields of Kubernetes 1.35 (the driver's): each
 * optional and typed, so that a read is typed (\`podSpec.nodeSelector\` is a string map, not \`any\`), an
 * interface-typed pod spec (a \`V1PodSpec\` of @kubernetes/client-node) is taken as it is, and a misspelt field of an
 * object literal (\`nodeSelectr\`) fails the compile, as the driver warns of it. The objects under it are \`object\`:
 * the client's own types describe them.
 */
export interface PodSpec {
  /**
   * The pod's containers: the Harness container and the Custodian container among them (by the names harnessContainer and custodianContainer give).
   */
  containers: readonly object[];
  activeDeadlineSeconds?: number | undefined;
  affinity?: object | undefined;
  automountServiceAccountToken?: boolean | undefined;
  dnsConfig?: object | undefined;
  dnsPolicy?: string | undefined;
  enableServiceLinks?: boolean | undefined;
  ephemeralContainers?: readonly object[] | undefined;
  hostAliases?: readonly object[] | undefined;
  hostIPC?: boolean | undefined;
  hostNetwork?: boolean | undefined;
  hostPID?: boolean | undefined;
  hostUsers?: boolean | undefined;
  hostname?: string | undefined;
  hostnameOverride?: string | undefined;
  imagePullSecrets?: readonly object[] | undefined;
  initContainers?: readonly object[] | undefined;
  nodeName?: string | undefined;
  nodeSelector?: { readonly [key: string]: string } | undefined;
  os?: object | undefined;
  overhead?: { readonly [resource: string]: string | number } | undefined;
  preemptionPolicy?: string | undefined;
  priority?: number | undefined;
  priorityClassName?: string | undefined;
  readinessGates?: readonly object[] | undefined;
  resourceClaims?: readonly object[] | undefined;
  resources?: object | undefined;
  restartPolicy?: string | undefined;
  runtimeClassName?: string | undefined;
  schedulerName?: string | undefined;
  schedulingGates?: readonly object[] | undefined;
  securityContext?: object | undefined;
  serviceAccount?: string | undefined;
  serviceAccountName?: string | undefined;
  setHostnameAsFQDN?: boolean | undefined;
  shareProcessNamespace?: boolean | undefined;
  subdomain?: string | undefined;
  terminationGracePeriodSeconds?: number | undefined;
  tolerations?: readonly object[] | undefined;
  topologySpreadConstraints?: readonly object[] | undefined;
  volumes?: readonly object[] | undefined;
  workloadRef?: object | undefined;
}
`;

/**
 * The plan's types as ordinary code fills them: every optional field also takes \`undefined\` (\`{ maxTokens:
 * m.maxTokens }\` under exactOptionalPropertyTypes) and every list is \`readonly\` (a \`readonly Model[]\` is taken).
 * Rewrites the generated text through TypeScript's parser, from the end so that the offsets hold.
 */
function forOrdinaryCode(text) {
  const file = ts.createSourceFile("plan.v1.d.ts", text, ts.ScriptTarget.Latest, true);
  const edits = [];
  const visit = (node) => {
    if (ts.isPropertySignature(node) && node.questionToken !== undefined && node.type !== undefined) {
      const t = node.type;
      const hasUndefined =
        (ts.isUnionTypeNode(t) ? t.types : [t]).some((u) => u.kind === ts.SyntaxKind.UndefinedKeyword);
      if (!hasUndefined) edits.push([t.end, " | undefined"]);
    }
    if (ts.isArrayTypeNode(node) && !(ts.isTypeOperatorNode(node.parent) && node.parent.operator === ts.SyntaxKind.ReadonlyKeyword)) {
      edits.push([node.getStart(file), "readonly "]);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  edits.sort((a, b) => b[0] - a[0]);
  let out = text;
  for (const [at, insert] of edits) out = out.slice(0, at) + insert + out.slice(at);
  return out;
}

/** Replaces each `$ref` to a definition by a reference to its type's name; collects the names. */
function byName(node, used) {
  if (Array.isArray(node)) return node.map((n) => byName(n, used));
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "$ref") {
      const m = /^#\/\$defs\/([A-Za-z0-9_]+)$/.exec(v);
      if (!m) throw new Error(`generate-types: a $ref this generator cannot name: ${v}`);
      used.add(typeName(m[1]));
      out.tsType = typeName(m[1]);
    } else {
      out[k] = byName(v, used);
    }
  }
  return out;
}

async function compileOne(schema, name, options = {}) {
  const ts = await compile(schema, name, {
    bannerComment: "",
    additionalProperties: true,
    declareExternallyReferenced: true,
    unreachableDefinitions: false,
    style: PRETTIER,
    ...options,
  });
  return ts.trim();
}

const out = process.argv[2];
if (!out) {
  console.error("error: generate-types: name the output folder");
  process.exit(2);
}

// The schemas, and which definitions more than one holds (those must be equal).
const loaded = [];
const seen = new Map(); // definition key → [{ path, def }]
for (const [path, name] of SCHEMAS) {
  const schema = JSON.parse(await readFile(join(repo, path), "utf8"));
  delete schema.title;
  delete schema.$id;
  delete schema.$schema;
  loaded.push({ path, name, schema });
  for (const [key, def] of Object.entries(schema.$defs ?? {})) {
    if (!seen.has(key)) seen.set(key, []);
    seen.get(key).push({ path, def });
  }
}
const common = new Map(); // key → def
const reaches = new Map(); // a shared type's name → the shared type names it refers to
for (const [key, copies] of seen) {
  if (copies.length < 2) continue;
  const differing = copies.filter((c) => !isDeepStrictEqual(c.def, copies[0].def));
  if (differing.length === 0) {
    common.set(key, copies[0].def);
  } else if (key !== "model") {
    // The plan's and the run spec's `model` are two different things; any other definition shared by name but not
    // by content is an edit to one copy that missed the others.
    throw new Error(`generate-types: $defs.${key} differs between ${copies[0].path} and ${differing[0].path}`);
  }
}

await mkdir(out, { recursive: true });

// common.v1.d.ts: each shared definition once.
{
  const parts = [banner(`the $defs that ${SCHEMAS.length} schemas share`)];
  for (const [key, def] of common) {
    const used = new Set();
    const body = byName(structuredClone(def), used);
    for (const u of used) {
      if (!common.has(u.charAt(0).toLowerCase() + u.slice(1)) && !common.has(u)) {
        throw new Error(`generate-types: the shared $defs.${key} refers to ${u}, which is not shared`);
      }
    }
    reaches.set(typeName(key), used);
    parts.push(await compileOne(body, typeName(key)));
  }
  await writeFile(join(out, `${COMMON}.d.ts`), `${parts.join("\n\n")}\n`);
}

for (const { path, name, schema } of loaded) {
  const used = new Set();
  const defs = schema.$defs ?? {};
  delete schema.$defs;
  const isPlan = stem(path) === "plan.v1";
  if (isPlan) {
    const placements = schema.properties.placements;
    delete placements.minItems;
    placements.description += " At least one: the driver refuses an empty list (exit 2, as any bad input).";
    const podSpec = defs.placement.properties.podSpec;
    defs.placement.properties.podSpec = { description: podSpec.description, tsType: "PodSpec" };
  }
  const parts = [];
  parts.push(await compileOne(byName(schema, used), name));
  for (const [key, def] of Object.entries(defs)) {
    if (common.has(key)) continue;
    parts.push(await compileOne(byName(def, used), typeName(key)));
  }
  if (isPlan) parts[0] = forOrdinaryCode(parts.join("\n\n"));
  if (isPlan) parts.splice(1, parts.length - 1, POD_SPEC.trim());
  // The shared types this file refers to, and those they reach: all re-exported, so that one file's types are whole.
  const shared = new Set();
  const visit = (u) => {
    if (shared.has(u) || !reaches.has(u)) return;
    shared.add(u);
    for (const v of reaches.get(u)) visit(v);
  };
  for (const u of used) visit(u);
  const head = [banner(path)];
  if (shared.size > 0) {
    const names = [...shared].sort().join(", ");
    head.push(`import type { ${names} } from "./${COMMON}.js";\nexport type { ${names} } from "./${COMMON}.js";`);
  }
  await writeFile(join(out, `${stem(path)}.d.ts`), `${[...head, ...parts].join("\n\n")}\n`);
}
