// The table at the end of make bench-llamacpp: reads the rounds' records
// ("FILE ROUND SIDE KIND TOK/S", SIDE llama.cpp or edgectl, KIND decode or
// prefill, or embed for make bench-embed-llamacpp; llama.cpp has several
// runs per round) and prints, per file and kind, the median of each side
// over all its samples and the median of the rounds' ratios edgectl /
// llama.cpp (each round's llama.cpp runs taken at their median): a ratio
// within a round compares the two under the same load of the shared host,
// which medians taken apart do not.
// Usage: node summary.mjs RECORDS
import {readFileSync} from "node:fs";

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b), m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const rec = new Map(); // file → kind → side → round → [tok/s]
const seen = new Set();
for (const line of readFileSync(process.argv[2], "utf8").split("\n")) {
  const [file, round, side, kind, v] = line.trim().split(/\s+/);
  if (v === undefined) continue;
  seen.add(kind);
  const f = rec.get(file) ?? rec.set(file, new Map()).get(file);
  const k = f.get(kind) ?? f.set(kind, new Map()).get(kind);
  const s = k.get(side) ?? k.set(side, new Map()).get(side);
  (s.get(round) ?? s.set(round, []).get(round)).push(Number(v));
}
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
// make bench-embed-llamacpp's records are of kind embed (embeddings/s).
const kindsSeen = ["decode", "prefill", "embed"].filter((k) => seen.has(k));
const cols = ["file", ...kindsSeen.flatMap((k) => [`llama.cpp ${k}`, `edgectl ${k}`, "ratio"])];
const rows = [];
for (const [file, kinds] of rec) {
  const row = [file];
  for (const kind of kindsSeen) {
    const l = kinds.get(kind)?.get("llama.cpp") ?? new Map(), e = kinds.get(kind)?.get("edgectl") ?? new Map();
    const ratios = [...e].filter(([r]) => l.has(r)).map(([r, xs]) => median(xs) / median(l.get(r)));
    row.push(fmt(median([...l.values()].flat())), fmt(median([...e.values()].flat())), fmt(median(ratios), 2));
  }
  rows.push(row);
}
const w = cols.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i].length)));
for (const r of [cols, ...rows]) console.log(r.map((c, i) => (i ? c.padStart(w[i]) : c.padEnd(w[i]))).join("  "));
