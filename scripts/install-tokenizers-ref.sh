#!/usr/bin/env bash
# Installs Hugging Face's own tokenizer library for the WordPiece agreement
# tests (engine/tokenizer/wordpiece_ref_test.go, `make tokenizers-ref`):
# npm's `tokenizers` package, the Node bindings of the Rust `tokenizers`
# crate, which ships prebuilt binaries for linux-x64/arm64 (glibc and musl)
# inside the package, so nothing is compiled. It goes into a cache outside
# the repository (EDGECTL_TOKENIZERS_REF, default ~/.cache/edgectl-test/node),
# where the tests look for it; without it they compare against the
# committed golden file only.
set -euo pipefail
VERSION=0.23.2
DIR=${EDGECTL_TOKENIZERS_REF:-$HOME/.cache/edgectl-test/node}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "install-tokenizers-ref: node and npm are needed (e.g. apt-get install nodejs npm)" >&2
	exit 1
fi
mkdir -p "$DIR"
if [ -f "$DIR/node_modules/tokenizers/package.json" ] &&
	[ "$(node -p "require('$DIR/node_modules/tokenizers/package.json').version")" = "$VERSION" ]; then
	echo "install-tokenizers-ref: tokenizers $VERSION already in $DIR"
	exit 0
fi
cd "$DIR"
[ -f package.json ] || echo '{"private": true}' >package.json
npm install --no-audit --no-fund --save-exact "tokenizers@$VERSION"
node -e "require('$DIR/node_modules/tokenizers')" # the native binding loads on this machine
echo "install-tokenizers-ref: tokenizers $VERSION installed in $DIR"
