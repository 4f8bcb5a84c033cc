// Reference side of wordpiece_ref_test.go: Hugging Face's own tokenizer
// (npm `tokenizers`, the Rust library's Node bindings, installed by
// scripts/install-tokenizers-ref.sh). Reads one JSON request on stdin,
// prints one JSON answer on stdout.
//   {"mode": "encode", "tokenizer": PATH, "texts": [...], "pairs": [[a, b], ...]}
//     → {"single": [{"ids", "plain", "decoded"}], "pair": [{"ids", "types"}]}
//   {"mode": "unicode"} → per code point, how BertNormalizer and
//     BertPreTokenizer classify it (ranges), what lower-casing makes of
//     it, and every code point the default BertNormalizer changes, with
//     what it makes of it.
'use strict';
const path = require('path');
const dir = process.env.EDGECTL_TOKENIZERS_REF || path.join(process.env.HOME || '', '.cache', 'edgectl-test', 'node');
const tk = require(path.join(dir, 'node_modules', 'tokenizers'));

async function encode(req) {
  const tok = tk.Tokenizer.fromFile(req.tokenizer);
  const out = { single: [], pair: [] };
  for (const text of req.texts) {
    const e = await tok.encode(text);
    const plain = await tok.encode(text, null, { addSpecialTokens: false });
    const ids = e.getIds();
    out.single.push({ ids, plain: plain.getIds(), decoded: await tok.decode(ids, true) });
  }
  for (const [a, b] of req.pairs || []) {
    const e = await tok.encode(a, b);
    out.pair.push({ ids: e.getIds(), types: e.getTypeIds() });
  }
  return out;
}

function unicode() {
  const only = (o) => tk.bertNormalizer(Object.assign({ cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: false }, o));
  const clean = only({ cleanText: true }), strip = only({ stripAccents: true }), lower = only({ lowercase: true });
  const full = tk.bertNormalizer(), pre = tk.bertPreTokenizer();
  const out = { control: [], punct: [], mark: [], lower: {}, changed: {} };
  const add = (list, cp) => {
    const last = list[list.length - 1];
    if (last && last[1] === cp - 1) last[1] = cp; else list.push([cp, cp]);
  };
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue; // not scalar values
    const c = String.fromCodePoint(cp);
    // Between two letters, so that a dropped or split character shows.
    if (clean.normalizeString('a' + c + 'b') === 'ab' && cp !== 0 && cp !== 0xfffd) add(out.control, cp);
    const p = pre.preTokenizeString('a' + c + 'b');
    if (p.length === 3 && p[1][0] === c) add(out.punct, cp);
    if (strip.normalizeString('a' + c + 'b') === 'ab') add(out.mark, cp);
    const l = lower.normalizeString(c);
    if (l !== c) out.lower[cp] = l;
    const n = full.normalizeString(c);
    if (n !== c) out.changed[cp] = n;
  }
  return out;
}

let input = '';
process.stdin.on('data', (d) => (input += d));
process.stdin.on('end', async () => {
  const req = JSON.parse(input);
  const res = req.mode === 'unicode' ? unicode() : await encode(req);
  process.stdout.write(JSON.stringify(res));
});
