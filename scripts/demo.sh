#!/usr/bin/env bash
# make demo: the main job on the embedded default. prep takes a real trained
# Llama (TinyStories-656K, shipped in testdata/) through the pipeline for the
# built-in pure-Go CPU engine; serve loads it; one chat request is answered
# through the OpenAI API, and the answer and its telemetry are printed.
set -euo pipefail
BIN=${1:-bin/edgectl}
WORK=.demo
rm -rf "$WORK/models" && mkdir -p "$WORK"

echo "==> $BIN prep testdata/models/tinystories-656k --target cpu -o $WORK/models/tinystories"
"$BIN" prep testdata/models/tinystories-656k --target cpu -o "$WORK/models/tinystories" --cache-dir "$WORK/cache"

# A random port can be taken (by a test, or an outgoing connection's
# ephemeral port): on "address already in use" try another.
SERVER=
trap '[ -n "$SERVER" ] && { kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true; }' EXIT
for attempt in 1 2 3 4 5; do
	PORT=${EDGECTL_DEMO_PORT:-$((20000 + RANDOM % 20000))}
	echo "==> $BIN serve --models $WORK/models --addr 127.0.0.1:$PORT"
	"$BIN" serve --models "$WORK/models" --addr "127.0.0.1:$PORT" >"$WORK/serve.log" 2>&1 &
	SERVER=$!
	up=
	for _ in $(seq 1 100); do
		curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && { up=1; break; }
		kill -0 $SERVER 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$up" ] && break
	wait $SERVER 2>/dev/null || true
	SERVER=
	if [ -n "${EDGECTL_DEMO_PORT:-}" ] || ! grep -q "address already in use" "$WORK/serve.log" || [ $attempt = 5 ]; then
		cat "$WORK/serve.log"
		exit 1
	fi
done

REQ='{"model":"tinystories","messages":[{"role":"user","content":"Once upon a time, there was a little dog"}],"max_tokens":64,"temperature":0}'
echo "==> POST /v1/chat/completions $REQ"
RESP=$(curl -fsS "http://127.0.0.1:$PORT/v1/chat/completions" -H 'Content-Type: application/json' -d "$REQ")
if command -v jq >/dev/null; then
	echo "$RESP" | jq '{answer: .choices[0].message.content, finish_reason: .choices[0].finish_reason, usage: .usage}'
elif command -v python3 >/dev/null; then
	python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(json.dumps({"answer": r["choices"][0]["message"]["content"], "finish_reason": r["choices"][0]["finish_reason"], "usage": r["usage"]}, indent=2, ensure_ascii=False))' "$RESP"
else
	echo "$RESP"
fi
