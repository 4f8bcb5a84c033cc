"""edgectl's rknn lane helper: runs a sharded encoder's .rknn files on the
RK3588 NPU through rknn-toolkit-lite2 (RKNNLite), one shard after another,
each pinned to its core.

edgectl (engine/rknnrt) embeds this file, writes it to its cache dir and
runs it with python3; it speaks the framed protocol of
engine/rknnrt/protocol.go on stdin/stdout: a JSON header line, then the
payload the header's "bytes" announces (float32 little-endian tensors, in
the order the header lists them). Scaling by the manifest's input_scale
and output_scale is edgectl's, not this helper's.

The protocol owns file descriptor 1: anything else written there (print,
the runtime's C library) is sent to stderr, which edgectl logs.
"""

import json
import os
import sys
import time

MAX_HEADER = 1 << 20


def _protocol_streams():
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, out


IN, OUT = _protocol_streams()


def send(header, payload=b""):
    header["bytes"] = len(payload)
    OUT.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
    if payload:
        OUT.write(payload)
    OUT.flush()


def fail(message, frame_id=None, shard=None):
    h = {"op": "error", "message": message}
    if frame_id is not None:
        h["id"] = frame_id
    if shard is not None:
        h["shard"] = shard
    send(h)


def read_frame():
    line = IN.readline(MAX_HEADER + 1)
    if not line:
        return None, b""
    if not line.endswith(b"\n"):
        raise ValueError("frame header longer than %d bytes or cut short" % MAX_HEADER)
    header = json.loads(line)
    n = int(header.get("bytes", 0))
    payload = IN.read(n) if n else b""
    if len(payload) != n:
        raise ValueError("%s frame: payload of %d bytes cut short at %d" % (header.get("op"), n, len(payload)))
    return header, payload


def elements(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def load(header, RKNNLite):
    masks = {0: RKNNLite.NPU_CORE_0, 1: RKNNLite.NPU_CORE_1, 2: RKNNLite.NPU_CORE_2}
    shards, timings = [], []
    for spec in header["shards"]:
        core, path = spec["core"], spec["path"]
        if core not in masks:
            raise RuntimeError("shard %d (%s): core %d, the RK3588 NPU has cores 0, 1 and 2" % (spec["index"], path, core))
        t0 = time.perf_counter()
        rk = RKNNLite()
        ret = rk.load_rknn(path)
        if ret != 0:
            raise RuntimeError("shard %d: load_rknn(%s) returned %s (was it built for rk3588 by the rknn-toolkit2 version matching this librknnrt?)" % (spec["index"], path, ret))
        ret = rk.init_runtime(core_mask=masks[core])
        if ret != 0:
            raise RuntimeError("shard %d (%s): init_runtime(core_mask=NPU_CORE_%d) returned %s (check that /dev/dri or /dev/rknpu is accessible and librknnrt.so is installed)" % (spec["index"], path, core, ret))
        shards.append((spec, rk))
        timings.append({"index": spec["index"], "core": core, "ms": (time.perf_counter() - t0) * 1e3})
    return shards, timings


def run(np, shards, outputs, header, payload):
    frame_id = header.get("id")
    env, off = {}, 0
    for t in header.get("tensors", []):
        n = elements(t["shape"]) * 4
        env[t["name"]] = np.frombuffer(payload[off:off + n], dtype="<f4").reshape(t["shape"])
        off += n
    timings, t_all = [], time.perf_counter()
    for spec, rk in shards:
        idx = spec["index"]
        try:
            ins = [np.ascontiguousarray(env[t["name"]], dtype=np.float32) for t in spec["inputs"]]
        except KeyError as e:
            return fail("%s reads %s, which no earlier shard wrote" % (os.path.basename(spec["path"]), e), frame_id, idx)
        t0 = time.perf_counter()
        try:
            outs = rk.inference(inputs=ins)
        except Exception as e:  # the runtime's own exception, whatever its type
            return fail("%s on core %d: inference raised %s: %s" % (os.path.basename(spec["path"]), spec["core"], type(e).__name__, e), frame_id, idx)
        ms = (time.perf_counter() - t0) * 1e3
        if outs is None or len(outs) != len(spec["outputs"]):
            got = "None" if outs is None else "%d outputs" % len(outs)
            return fail("%s on core %d: inference returned %s, want %d outputs (the runtime's log says why)" % (os.path.basename(spec["path"]), spec["core"], got, len(spec["outputs"])), frame_id, idx)
        for t, o in zip(spec["outputs"], outs):
            a = np.asarray(o, dtype=np.float32)
            if a.size != elements(t["shape"]):
                return fail("%s output %s: %d values, the manifest says shape %s" % (os.path.basename(spec["path"]), t["name"], a.size, t["shape"]), frame_id, idx)
            env[t["name"]] = a.reshape(t["shape"])
        timings.append({"index": idx, "core": spec["core"], "ms": ms})
    tensors, body = [], []
    for name in outputs:
        a = np.ascontiguousarray(env[name], dtype="<f4")
        tensors.append({"name": name, "shape": list(a.shape)})
        body.append(a.tobytes())
    send({"op": "result", "id": frame_id, "tensors": tensors, "timings": timings,
          "ms": (time.perf_counter() - t_all) * 1e3}, b"".join(body))


def main():
    try:
        import numpy as np
        from rknnlite.api import RKNNLite
    except ImportError as e:
        fail("%s cannot import %s: install rknn-toolkit-lite2 (Rockchip's rknn_toolkit_lite2 wheel for this Python, which brings numpy) or point EDGECTL_RKNN_PYTHON at a Python that has it" % (sys.executable, e.name))
        return 2
    header, _ = read_frame()
    if header is None:
        return 0
    if header.get("op") != "load":
        fail("first frame is %r, want load" % header.get("op"))
        return 2
    outputs = header.get("outputs", [])
    try:
        shards, timings = load(header, RKNNLite)
    except Exception as e:
        fail(str(e))
        return 1
    version = getattr(sys.modules.get("rknnlite"), "__version__", "")
    send({"op": "ready", "runtime": ("rknn-toolkit-lite2 " + version).strip(), "timings": timings})
    try:
        while True:
            header, payload = read_frame()
            if header is None or header.get("op") == "quit":
                return 0
            if header.get("op") != "run":
                fail("unknown op %r" % header.get("op"), header.get("id"))
                continue
            try:
                run(np, shards, outputs, header, payload)
            except Exception as e:  # a malformed run frame: answer it, keep serving
                fail("run frame: %s: %s" % (type(e).__name__, e), header.get("id"))
    finally:
        for _, rk in shards:
            rk.release()


if __name__ == "__main__":
    sys.exit(main())
