"""Re-encodes a dynamically quantized model's int8 weights as uint8, so that
every CPU computes the same logits.

ONNX Runtime's `quantize_dynamic` with `QuantType.QInt8` gives MatMulInteger
nodes uint8 activations and int8 weights. On x86 CPUs without VNNI, ONNX
Runtime computes u8 x s8 products with an instruction that adds pairs of
products into 16 bits and saturates, so the same model file gives different
logits on different CPUs (carrel-ce-v2's floor was chosen on one and leaked
a noise query on another). With uint8 weights every CPU takes the exact
u8 x u8 path.

The re-encoding is exact: each weight q and its zero point z become q + 128
and z + 128, so q - z, the value MatMulInteger multiplies, is unchanged.

    python u8.py IN.onnx OUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper


def to_u8(model: onnx.ModelProto) -> int:
    """Re-encodes every int8 weight and weight zero point of every
    MatMulInteger node in place; returns how many tensors changed."""
    inits = {i.name: i for i in model.graph.initializer}
    targets = set()
    for node in model.graph.node:
        if node.op_type != "MatMulInteger":
            continue
        # Inputs: A, B, A zero point, B zero point. B must be a weight.
        if len(node.input) < 4 or node.input[1] not in inits or node.input[3] not in inits:
            raise SystemExit(f"{node.name}: MatMulInteger without a constant weight and zero point")
        targets.update([node.input[1], node.input[3]])
    # No other node may read a tensor this changes.
    for node in model.graph.node:
        if node.op_type != "MatMulInteger" and targets.intersection(node.input):
            raise SystemExit(f"{node.name} ({node.op_type}) also reads a weight to re-encode")
    changed = 0
    for name in sorted(targets):
        init = inits[name]
        if init.data_type == TensorProto.UINT8:
            continue
        if init.data_type != TensorProto.INT8:
            raise SystemExit(f"{name}: expected int8, found type {init.data_type}")
        q = numpy_helper.to_array(init).astype(np.int16) + 128
        init.CopyFrom(numpy_helper.from_array(q.astype(np.uint8), name))
        changed += 1
    return changed


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    model = onnx.load(src)
    n = to_u8(model)
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    print(f"u8: {n} weight tensors re-encoded as uint8 -> {dst}")


if __name__ == "__main__":
    main()
