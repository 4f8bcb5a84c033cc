#!/usr/bin/env bash
# apt-install.sh WHO PKG... — the one way the project's test-tool scripts
# install Debian packages: apt-get, through sudo when not root, no
# recommends, no prompts. WHO names the calling script in messages.
set -euo pipefail
who=$1
shift
if ! command -v apt-get >/dev/null 2>&1; then
	echo "$who: no apt-get here; install $* with your system's package manager" >&2
	exit 1
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "$@"
