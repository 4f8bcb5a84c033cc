#!/usr/bin/env bash
# Installs the official JavaScript clients serve/jsclients_test.go drives
# against an in-process edgectl serve (`make test-js-clients`): `openai`,
# `ollama` and `@anthropic-ai/sdk` from npm, pinned, into a cache outside
# the repository (EDGECTL_JS_CLIENTS, default ~/.cache/edgectl-test/js-clients)
# where the test looks for them; without them it skips.
#
# ollama is pinned to 0.6.3 (December 2025): 0.6.4 adds an undocumented
# `systemone` method posting to /v1/systemone, which the project has no
# reason to take. openai 7 declares node >= 22 but loads and runs on
# Debian's node 20 (npm prints an EBADENGINE warning).
set -euo pipefail
OPENAI=7.57.0
OLLAMA=0.6.3
ANTHROPIC=1.13.0
DIR=${EDGECTL_JS_CLIENTS:-$HOME/.cache/edgectl-test/js-clients}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "install-js-clients: node and npm are needed (e.g. apt-get install nodejs npm)" >&2
	exit 1
fi
have() { # PACKAGE VERSION: installed at that version?
	[ -f "$DIR/node_modules/$1/package.json" ] &&
		[ "$(node -p "require('$DIR/node_modules/$1/package.json').version")" = "$2" ]
}
if have openai "$OPENAI" && have ollama "$OLLAMA" && have @anthropic-ai/sdk "$ANTHROPIC"; then
	echo "install-js-clients: openai $OPENAI, ollama $OLLAMA, @anthropic-ai/sdk $ANTHROPIC already in $DIR"
	exit 0
fi
mkdir -p "$DIR"
cd "$DIR"
[ -f package.json ] || echo '{"private": true}' >package.json
npm install --no-audit --no-fund --save-exact "openai@$OPENAI" "ollama@$OLLAMA" "@anthropic-ai/sdk@$ANTHROPIC"
# Each loads on this machine's node.
node --input-type=module -e 'await import("openai"); await import("ollama"); await import("@anthropic-ai/sdk")'
echo "install-js-clients: openai $OPENAI, ollama $OLLAMA, @anthropic-ai/sdk $ANTHROPIC installed in $DIR"
