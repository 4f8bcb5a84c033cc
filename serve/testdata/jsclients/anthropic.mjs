// The official `@anthropic-ai/sdk` npm client against edgectl serve:
// messages.create, messages.stream (its text events and finalMessage),
// and its typed errors: NotFoundError for an unknown model, BadRequestError
// for a request without max_tokens. Prints one JSON object for
// serve/jsclients_test.go.
// Usage: node anthropic.mjs BASE_URL API_KEY MODEL PROMPT
import Anthropic from "@anthropic-ai/sdk";

const [base, key, model, prompt] = process.argv.slice(2);
const client = new Anthropic({baseURL: base, apiKey: key, maxRetries: 0});
const params = {model, max_tokens: 16, temperature: 0, messages: [{role: "user", content: prompt}]};
const out = {};
const msg = await client.messages.create(params);
out.create = {type: msg.type, role: msg.role, text: msg.content.map((b) => b.text).join(""), stop_reason: msg.stop_reason, usage: msg.usage};

const stream = client.messages.stream(params);
let texts = "";
stream.on("text", (t) => { texts += t; });
const final = await stream.finalMessage();
out.stream = {text_events: texts, text: final.content.map((b) => b.text).join(""), stop_reason: final.stop_reason, usage: final.usage};

const typed = async (req) => {
  try {
    await client.messages.create(req);
    return {thrown: false};
  } catch (e) {
    return {thrown: true, not_found: e instanceof Anthropic.NotFoundError, bad_request: e instanceof Anthropic.BadRequestError,
      status: e.status, type: e.error?.error?.type, message: e.error?.error?.message};
  }
};
out.not_found = await typed({...params, model: "no-such-model"});
const {max_tokens, ...noMax} = params;
out.no_max_tokens = await typed(noMax);
console.log(JSON.stringify(out));
