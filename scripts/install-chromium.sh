#!/usr/bin/env bash
# Installs Debian's Chromium for the chat page's headless-browser test
# (serve/chatpage_browser_test.go, `make test-browser`). The test drives
# it over the Chrome DevTools protocol (github.com/chromedp/chromedp) and
# skips when no chromium/chromium-browser/google-chrome is on PATH.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		echo "install-chromium: $b is already installed ($(command -v "$b"))"
		exit 0
	fi
done
"$(dirname "$0")/apt-install.sh" install-chromium chromium fonts-dejavu-core
command -v chromium
