// The official `openai` npm client against edgectl serve: embeddings
// (the SDK's default, which asks for base64 and decodes it to floats;
// encoding_format "float"; an explicit "base64", which the SDK hands back
// as the string), the Responses API plain and streamed, a chat
// completion, and the typed 404 of an unknown model. Prints one JSON
// object for serve/jsclients_test.go to check against the server's own
// answers.
// Usage: node openai.mjs BASE_URL API_KEY MODEL PROMPT TEXT...
import OpenAI from "openai";

const [base, key, model, prompt, ...texts] = process.argv.slice(2);
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: key, maxRetries: 0});
const out = {};

const vectors = (r) => r.data.map((d) => (typeof d.embedding === "string" ? d.embedding : Array.from(d.embedding)));
const sdkDefault = await client.embeddings.create({model, input: texts});
out.embed_default = {vectors: vectors(sdkDefault), usage: sdkDefault.usage};
const asFloat = await client.embeddings.create({model, input: texts, encoding_format: "float"});
out.embed_float = {vectors: vectors(asFloat), usage: asFloat.usage};
const asBase64 = await client.embeddings.create({model, input: texts[0], encoding_format: "base64"});
out.embed_base64 = {vectors: vectors(asBase64), usage: asBase64.usage};

const params = {model, input: prompt, max_output_tokens: 16, temperature: 0};
const plain = await client.responses.create(params);
out.responses = {text: plain.output_text, status: plain.status, usage: plain.usage, object: plain.object};

const stream = await client.responses.create({...params, stream: true});
const streamed = {types: [], deltas: "", completed: null};
for await (const ev of stream) {
  streamed.types.push(ev.type);
  if (ev.type === "response.output_text.delta") streamed.deltas += ev.delta;
  if (ev.type === "response.completed" || ev.type === "response.incomplete") {
    // Only a non-streamed response gets the SDK's output_text; a streamed
    // one's text is in its output items.
    const text = ev.response.output.flatMap((item) => item.content ?? []).filter((c) => c.type === "output_text").map((c) => c.text).join("");
    streamed.completed = {text, status: ev.response.status, usage: ev.response.usage};
  }
}
out.responses_stream = streamed;

const chat = await client.chat.completions.create({model, messages: [{role: "user", content: prompt}], max_tokens: 16, temperature: 0});
out.chat = {text: chat.choices[0].message.content, finish_reason: chat.choices[0].finish_reason, usage: chat.usage};

try {
  await client.embeddings.create({model: "no-such-model", input: "x"});
  out.not_found = {thrown: false};
} catch (e) {
  out.not_found = {thrown: true, typed: e instanceof OpenAI.NotFoundError, status: e.status, message: e.message};
}
console.log(JSON.stringify(out));
