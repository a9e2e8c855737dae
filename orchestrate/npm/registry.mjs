// A registry on loopback that serves npm tarballs as the npm registry does, for orchestrate/npm/test.sh's install
// tests: `npm install` and `npm ci` against it resolve, lock and fetch the packages as they would from
// registry.npmjs.org. It serves one packument per package (GET /<name>, the scoped name with its `/` as is or as
// %2f) listing the tarballs given, and the tarballs where the npm registry has them (GET /<name>/-/<base>-<version>.tgz,
// `<base>` the name without its scope); anything else is 404. Nothing is published.
//
//   node orchestrate/npm/registry.mjs TARBALL...
//
// Listens on 127.0.0.1 only, on a port the system picks, and prints one line on stdout: {"url":"http://127.0.0.1:<port>/"}.
// Each request is logged on stderr. Runs until its stdin closes.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const tarballs = process.argv.slice(2);
if (tarballs.length === 0) {
  console.error("orchestrate/npm/registry.mjs: error: name the tarballs to serve");
  process.exit(2);
}

/** name → { versions: { version → manifest }, latest } ; file → bytes */
const packages = new Map();
const files = new Map();
for (const path of tarballs) {
  const bytes = readFileSync(path);
  const manifest = JSON.parse(execFileSync("tar", ["-xzOf", path, "package/package.json"], { encoding: "utf8" }));
  const file = `/${manifest.name}/-/${manifest.name.split("/").pop()}-${manifest.version}.tgz`;
  files.set(file, bytes);
  if (!packages.has(manifest.name)) packages.set(manifest.name, { versions: {}, latest: manifest.version });
  const p = packages.get(manifest.name);
  p.versions[manifest.version] = {
    ...manifest,
    _id: `${manifest.name}@${manifest.version}`,
    dist: {
      tarball: file, // made absolute per request, from the Host the client used
      shasum: createHash("sha1").update(bytes).digest("hex"),
      integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
    },
  };
}

const server = createServer((req, res) => {
  const origin = `http://${req.headers.host}`;
  const path = decodeURIComponent(new URL(req.url ?? "/", origin).pathname);
  console.error(`registry: ${req.method} ${path}`);
  const send = (status, body, type = "application/json") => {
    res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
    res.end(req.method === "HEAD" ? undefined : body);
  };
  if (req.method !== "GET" && req.method !== "HEAD") return send(405, '{"error":"read-only"}');
  if (files.has(path)) return send(200, files.get(path), "application/octet-stream");
  const p = packages.get(path.slice(1));
  if (p === undefined) return send(404, '{"error":"not found"}');
  const versions = Object.fromEntries(
    Object.entries(p.versions).map(([v, m]) => [v, { ...m, dist: { ...m.dist, tarball: `${origin}${m.dist.tarball}` } }]),
  );
  const name = path.slice(1);
  return send(200, JSON.stringify({ _id: name, name, "dist-tags": { latest: p.latest }, versions }));
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/` })}\n`);
});
process.stdin.on("end", () => server.close(() => process.exit(0)));
process.stdin.resume();
