// llama.cpp's embedding path as the peer: node-llama-cpp's prebuilt CPU
// build on a BERT GGUF (the MiniLM-shaped one engine/cpu's
// BenchmarkEmbedMiniLMGGUF writes), through model.createEmbeddingContext()
// and getEmbeddingFor: one 128-token input at a time, the same ids the
// engine's benchmark embeds ([CLS], 5 + i mod (vocab − 5), [SEP]), RUNS
// timed embeddings after one untimed. Prints embeddings/s, and writes the
// vector to VECTOR.json for the engine's benchmark to compare with.
// Usage: node embed.mjs MODEL.gguf RUNS THREADS VECTOR.json
import {writeFileSync} from "node:fs";
import {getLlama} from "node-llama-cpp";

const [path, runs = "20", threads = "2", vectorFile] = process.argv.slice(2);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: path, gpuLayers: 0});
const ctx = await model.createEmbeddingContext({contextSize: 512, batchSize: 512, threads: Number(threads)});
const n = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
const ids = Array.from({length: 128}, (_, i) => 5 + (i % (n - 5)));
ids[0] = model.tokens.bos; // [CLS], as the GGUF names it
ids[127] = model.tokens.sep;
const first = await ctx.getEmbeddingFor(ids);
if (vectorFile) writeFileSync(vectorFile, JSON.stringify(first.vector));
const t0 = performance.now();
for (let r = 0; r < Number(runs); r++) await ctx.getEmbeddingFor(ids);
const perSec = Number(runs) / ((performance.now() - t0) / 1000);
console.log(`llama.cpp: embed ${perSec.toFixed(2)} embeddings/s (${runs} × 128 tokens, ${threads} threads, ${first.vector.length} dims)`);
await ctx.dispose();
