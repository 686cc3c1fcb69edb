// A Claude-Code-style resume, the baseline of `benches/resume.rs`: read the whole transcript,
// split it into lines, `JSON.parse` each, map messages by uuid, pick the newest leaf, walk
// `parentUuid` to the root (a compact boundary has none: the resume view stops there), and
// print the chain's lines. It does what every whole-file reader does; it is not chainlog's
// answer (no projections), only its cost.
//
// usage: node benches/node-loader.mjs TRANSCRIPT > /dev/null
import { readFileSync, writeSync } from "node:fs";

// Read as bytes and split by newline: one string of a 1 GiB file is longer than V8 allows.
const bytes = readFileSync(process.argv[2]);
const byUuid = new Map();
const hasChild = new Set();
for (let at = 0; at < bytes.length; ) {
  let end = bytes.indexOf(10, at);
  if (end < 0) end = bytes.length;
  const line = bytes.toString("utf8", at, end);
  at = end + 1;
  if (!line) continue;
  let e;
  try {
    e = JSON.parse(line);
  } catch {
    continue;
  }
  if (!e || typeof e.uuid !== "string") continue;
  byUuid.set(e.uuid, e);
  if (typeof e.parentUuid === "string") hasChild.add(e.parentUuid);
}
let leaf = null;
for (const e of byUuid.values()) {
  if (hasChild.has(e.uuid) || e.isSidechain) continue;
  if (e.type !== "user" && e.type !== "assistant") continue;
  if (!leaf || String(e.timestamp) >= String(leaf.timestamp)) leaf = e;
}
const chain = [];
const seen = new Set();
for (let e = leaf; e && !seen.has(e.uuid); e = byUuid.get(e.parentUuid)) {
  seen.add(e.uuid);
  chain.push(e);
}
chain.reverse();
writeSync(1, chain.map((e) => JSON.stringify(e)).join("\n") + "\n");
