// The official `ollama` npm client against edgectl serve: `embed` (the
// batch route, /api/embed) and the legacy `embeddings` (/api/embeddings).
// Prints one JSON object for serve/jsclients_test.go.
// Usage: node ollama.mjs BASE_URL API_KEY MODEL TEXT...
import {Ollama} from "ollama";

const [host, key, model, ...texts] = process.argv.slice(2);
const client = new Ollama({host, headers: {Authorization: `Bearer ${key}`}});
const out = {};
const embed = await client.embed({model, input: texts});
out.embed = {model: embed.model, embeddings: embed.embeddings, prompt_eval_count: embed.prompt_eval_count};
out.has_legacy = typeof client.embeddings === "function";
if (out.has_legacy) {
  const legacy = await client.embeddings({model, prompt: texts[0]});
  out.embeddings = {embedding: legacy.embedding};
}
try {
  await client.embed({model: "no-such-model", input: "x"});
  out.not_found = {thrown: false};
} catch (e) {
  out.not_found = {thrown: true, name: e.name, status: e.status_code, message: e.message};
}
console.log(JSON.stringify(out));
