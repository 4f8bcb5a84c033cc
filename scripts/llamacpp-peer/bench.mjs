// llama.cpp as the peer: node-llama-cpp's prebuilt CPU build of llama.cpp
// (it picks the variant for this CPU, e.g. zen4) on a GGUF: a 64-token
// prompt evaluated as one batch (prefill tok/s), then 64 greedy tokens
// (decode tok/s, from the first generated token on), RUNS times, each on
// a fresh context.
// Usage: node bench.mjs MODEL.gguf [RUNS [THREADS]]
import {getLlama} from "node-llama-cpp";

const [path, runs = "3", threads = "2"] = process.argv.slice(2);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: path, gpuLayers: 0});
// Ids every vocabulary here has (the smallest is 32000).
const prompt = Array.from({length: 64}, (_, i) => 1000 + 37 * i);
for (let r = 0; r < Number(runs); r++) {
  const ctx = await model.createContext({contextSize: 512, threads: Number(threads), batchSize: 64, sequences: 1});
  const seq = ctx.getSequence();
  const t0 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(prompt);
  const prefill = 64 / ((performance.now() - t0) / 1000);
  let n = 0, first = 0;
  for await (const _ of seq.evaluate([prompt[0]], {temperature: 0})) {
    if (n === 0) first = performance.now();
    if (++n > 64) break;
  }
  const decode = 64 / ((performance.now() - first) / 1000);
  console.log(`llama.cpp: prefill ${prefill.toFixed(1)} tok/s, decode ${decode.toFixed(1)} tok/s`);
  await ctx.dispose();
}
