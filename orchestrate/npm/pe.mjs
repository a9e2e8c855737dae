// Reads a Windows PE executable's header and import table, for orchestrate/npm/test.sh: the machine (x64, arm64),
// whether it is a 64-bit (PE32+) console program, and the DLLs it imports. Debian's mingw objdump reads only x86
// PEs; this reads any, so the win32-arm64 binary, which cannot run here, is still checked for what it loads.
//
//   node orchestrate/npm/pe.mjs FILE    one line of JSON: {"machine":"arm64","pe32plus":true,"console":true,"dlls":[...]}
//                                       or an error on stderr and exit 1 when FILE is not a PE it can read

import { readFileSync } from "node:fs";

const file = process.argv[2];
const b = readFileSync(file);
const fail = (why) => {
  console.error(`pe.mjs: ${file}: ${why}`);
  process.exit(1);
};
if (b.length < 0x40 || b.toString("latin1", 0, 2) !== "MZ") fail("no MZ header");
const pe = b.readUInt32LE(0x3c);
if (pe + 24 > b.length || b.toString("latin1", pe, pe + 4) !== "PE\0\0") fail("no PE signature");
const machines = { 0x8664: "x64", 0xaa64: "arm64", 0x14c: "ia32", 0x1c4: "arm" };
const machineCode = b.readUInt16LE(pe + 4);
const sections = b.readUInt16LE(pe + 6);
const optSize = b.readUInt16LE(pe + 20);
const opt = pe + 24;
const magic = b.readUInt16LE(opt);
const pe32plus = magic === 0x20b;
if (!pe32plus && magic !== 0x10b) fail(`optional header magic ${magic.toString(16)}`);
const subsystem = b.readUInt16LE(opt + 68);
// The data directories follow the optional header's fixed part (112 bytes in PE32+, 96 in PE32); the import
// directory is the second.
const dirs = opt + (pe32plus ? 112 : 96);
const importRva = b.readUInt32LE(dirs + 8);
const table = opt + optSize;
const section = [];
for (let i = 0; i < sections; i++) {
  const s = table + i * 40;
  section.push({ va: b.readUInt32LE(s + 12), size: Math.max(b.readUInt32LE(s + 8), b.readUInt32LE(s + 16)), raw: b.readUInt32LE(s + 20) });
}
const offset = (rva) => {
  const s = section.find((s) => rva >= s.va && rva < s.va + s.size);
  if (s === undefined) fail(`RVA ${rva.toString(16)} is in no section`);
  return rva - s.va + s.raw;
};
const dlls = [];
if (importRva !== 0) {
  // One 20-byte descriptor per DLL, ended by a zeroed one; its name's RVA at offset 12.
  for (let d = offset(importRva); d + 20 <= b.length; d += 20) {
    const name = b.readUInt32LE(d + 12);
    if (name === 0 && b.readUInt32LE(d) === 0 && b.readUInt32LE(d + 16) === 0) break;
    const at = offset(name);
    const end = b.indexOf(0, at);
    dlls.push(b.toString("latin1", at, end).toLowerCase());
    if (dlls.length > 1000) fail("more than 1000 imported DLLs");
  }
}
console.log(
  JSON.stringify({
    machine: machines[machineCode] ?? `0x${machineCode.toString(16)}`,
    pe32plus,
    console: subsystem === 3,
    dlls: [...new Set(dlls)].sort(),
  }),
);
