// Prints the probe's catalog (probe/catalog/pi-ai-0.82.1.json) from an unpacked pi-ai npm tarball.
//
// Usage: node probe/catalog/generate.mjs <unpacked package folder>   (the folder holding package.json and dist/)
//
// It reads pi's own modules, so the facts are pi's: MODELS from dist/models.generated.js, the key env vars from
// findEnvKeys() in dist/env-api-keys.js, the model-data date from dist/providers/data/.manifest.json. No npm install
// is needed: these modules import nothing outside the package. The output is deterministic: providers and models in
// code-unit order, fields in a fixed order, and the request-shaping values (thinkingLevelMap, compat, headers) copied
// as the package has them.
import { readFileSync } from "node:fs";
import { resolve, join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: node generate.mjs <unpacked pi-ai package folder>\n");
  process.exit(2);
}
const root = resolve(dir);
const load = (rel) => import(pathToFileURL(join(root, rel)).href);
const readJson = (rel) => JSON.parse(readFileSync(join(root, rel), "utf8"));

const pkg = readJson("package.json");
const manifest = readJson("dist/providers/data/.manifest.json");
const { MODELS } = await load("dist/models.generated.js");
const { findEnvKeys } = await load("dist/env-api-keys.js");

// findEnvKeys(provider, env) gives the provider's env var names, in pi's order, filtered to those set in `env`:
// with an env in which every name is set, it gives them all.
const everySet = new Proxy({}, { get: (_target, name) => (typeof name === "string" ? "x" : undefined) });

const byCodeUnit = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

const providers = {};
const models = [];
for (const provider of Object.keys(MODELS).sort(byCodeUnit)) {
  const apis = new Set();
  for (const key of Object.keys(MODELS[provider]).sort(byCodeUnit)) {
    const m = MODELS[provider][key];
    if (m.id !== key || m.provider !== provider) {
      throw new Error(`MODELS.${provider}[${key}] names itself ${m.provider}/${m.id}`);
    }
    apis.add(m.api);
    const model = {
      provider,
      id: m.id,
      api: m.api,
      baseUrl: m.baseUrl,
      reasoning: m.reasoning,
      maxTokens: m.maxTokens,
      contextWindow: m.contextWindow,
    };
    for (const field of ["thinkingLevelMap", "compat", "headers"]) {
      if (Object.hasOwn(m, field) && m[field] !== undefined) model[field] = m[field];
    }
    models.push(model);
  }
  providers[provider] = {
    keyEnv: findEnvKeys(provider, everySet) ?? [],
    apis: [...apis].sort(byCodeUnit),
  };
}

const catalog = {
  package: pkg.name,
  version: pkg.version,
  modelDataGeneratedAt: manifest.generatedAt,
  providers,
  models,
};
process.stdout.write(JSON.stringify(catalog, null, 1) + "\n");
