# check.py - validate ONNX models with Debian's python3-onnx, for
# tests/test_onnx.c: run as /usr/bin/python3 tests/onnx/check.py FILE...
#
# Each FILE must load and pass onnx.checker.check_model with full_check
# (which runs shape inference), use the default opset 13 or later, and
# have one input "input" and one output, "probabilities" (a classifier)
# or "values" (a regression network), whose first dimension is the
# symbolic "N". Prints "ok FILE: last node OP" per model, OP being the
# operator that computes the output (Softmax, Sigmoid, Identity); exit status
# 0 all pass, 1 one fails (the reason on stderr), 3 when python3-onnx is
# not installed (the test then skips).
import sys

try:
    import onnx
except ImportError as err:
    print(f"check.py: python3-onnx is not installed ({err})", file=sys.stderr)
    sys.exit(3)


def check(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets.get("", 0) < 13:
        raise ValueError(f"default opset {opsets.get('', 0)}, want 13 or later")
    g = model.graph
    for what, vals, names in (("input", g.input, ["input"]),
                              ("output", g.output, ["probabilities", "values"])):
        if len(vals) != 1 or vals[0].name not in names:
            raise ValueError(f"{what}s {[v.name for v in vals]}, want one of {names}")
        dim0 = vals[0].type.tensor_type.shape.dim[0]
        if dim0.dim_param != "N":
            raise ValueError(f"{what} batch dimension {dim0}, want 'N'")
    last = [n for n in g.node if g.output[0].name in n.output]
    if len(last) != 1:
        raise ValueError(f"{len(last)} nodes write the output, want 1")
    return last[0].op_type


status = 0
for path in sys.argv[1:]:
    try:
        op = check(path)
        print(f"ok {path}: last node {op}")
    except Exception as err:  # the checker raises its own error types
        print(f"check.py: {path}: {type(err).__name__}: {err}", file=sys.stderr)
        status = 1
sys.exit(status)
