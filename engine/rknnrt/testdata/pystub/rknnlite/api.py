"""Stub of rknnlite.api.RKNNLite for engine/rknnrt's tests.

Each .rknn file the tests write is JSON: {"add": A} makes inference return
[inputs[0] + A]; {"fail": true} makes it return None, as the real runtime
does when rknn_run fails. Every call is appended to $RKNNLITE_STUB_LOG as a
JSON line, so the test sees the order of shards and their core masks.
"""

import json
import os

import numpy as np


def _log(**kw):
    path = os.environ.get("RKNNLITE_STUB_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(kw) + "\n")


class RKNNLite:
    NPU_CORE_AUTO = 0
    NPU_CORE_0 = 1
    NPU_CORE_1 = 2
    NPU_CORE_2 = 4
    NPU_CORE_0_1 = 3
    NPU_CORE_0_1_2 = 7

    def __init__(self, verbose=False):
        self.path, self.spec, self.mask = None, None, None

    def load_rknn(self, path):
        self.path = path
        with open(path) as f:
            self.spec = json.load(f)
        _log(op="load_rknn", path=os.path.basename(path))
        return 0

    def init_runtime(self, core_mask=NPU_CORE_AUTO):
        self.mask = core_mask
        _log(op="init_runtime", path=os.path.basename(self.path), core_mask=core_mask)
        return 0

    def inference(self, inputs=None, data_format=None):
        _log(op="inference", path=os.path.basename(self.path), core_mask=self.mask,
             shapes=[list(x.shape) for x in inputs], dtypes=[str(x.dtype) for x in inputs])
        if self.spec.get("fail"):
            print("E RKNN: rknn_run failed (stub)")  # the C runtime writes to stdout
            return None
        return [inputs[0] + np.float32(self.spec.get("add", 0))]

    def release(self):
        _log(op="release", path=os.path.basename(self.path))
