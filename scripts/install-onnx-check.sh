#!/usr/bin/env bash
# Installs Debian's python3-onnx, the independent ONNX checker the tests of
# format/onnx and rknn use (onnx.checker.check_model(full_check=True) on
# every shard, onnx.load/SerializeToString for the byte-exact round trip,
# numpy for the reference evaluator's cross-check). `make onnx-check`.
# The tests skip with a message pointing here when it is absent. Debian's
# package lives under /usr/bin/python3: a pyenv python3 earlier on PATH does
# not see it, and the tests look in both.
set -euo pipefail
for py in python3 /usr/bin/python3; do
	if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import onnx, numpy' 2>/dev/null; then
		echo "install-onnx-check: onnx $("$py" -c 'import onnx; print(onnx.__version__)') is already importable by $py"
		exit 0
	fi
done
"$(dirname "$0")/apt-install.sh" install-onnx-check python3-onnx python3-numpy
/usr/bin/python3 -c 'import onnx; print("install-onnx-check: onnx", onnx.__version__)'
