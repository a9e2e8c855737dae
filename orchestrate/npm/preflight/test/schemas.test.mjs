// The schemas the package ships compile under Ajv 2020 in strict mode, and the checked-in example and the tests'
// plans validate; the verdicts the run tests produce are validated where they are made (test/run.test.mjs).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { SCHEMA_FILES, assertValid, planFor, repo, validator } from "./harness.mjs";

test("every schema compiles under Ajv 2020 strict", () => {
  for (const name of Object.keys(SCHEMA_FILES)) assert.equal(typeof validator(name), "function", name);
});

test("the example plan and the tests' plans are plans", () => {
  assertValid("plan", JSON.parse(readFileSync(join(repo, "orchestrate/examples/plan.json"), "utf8")));
  assertValid("plan", planFor("http://127.0.0.1:9/v1", ["ok", "missing"]));
});

test("the plan schema refuses a pod spec whose containers is not a list", () => {
  const plan = planFor("http://127.0.0.1:9/v1", ["ok"]);
  plan.placements[0].podSpec.containers = { harness: {} };
  assert.equal(validator("plan")(plan), false);
  assert.equal(validator("plan").errors?.[0]?.instancePath, "/placements/0/podSpec/containers");
});
