# check.py - validate ONNX models with Debian's python3-onnx, for
# tests/test_onnx.c: run as /usr/bin/python3 tests/onnx/check.py FILE...
#
# Each FILE must load and pass onnx.checker.check_model with full_check
# (which runs shape inference), use the default opset 13 or later, and
# have one input "input" (with --inputs NAME,... one input per named
# input, so named) and one output, "probabilities" (a classifier)
# or "values" (a regression network), or with --heads NAME,... one output
# per head so named, each input's and output's first dimension the
# symbolic "N".
# Prints "ok FILE: last node OP" per model, OP being the operator that
# computes the output (Softmax, Sigmoid, Identity; with --heads one
# "NAME OP" per output, comma-separated); exit status
# 0 all pass, 1 one fails (the reason on stderr), 3 when python3-onnx is
# not installed (the test then skips).
import sys

try:
    import onnx
except ImportError as err:
    print(f"check.py: python3-onnx is not installed ({err})", file=sys.stderr)
    sys.exit(3)


def check(path, heads, inputs):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets.get("", 0) < 13:
        raise ValueError(f"default opset {opsets.get('', 0)}, want 13 or later")
    g = model.graph
    want = inputs or ["input"]
    if [v.name for v in g.input] != want:
        raise ValueError(f"inputs {[v.name for v in g.input]}, want {want}")
    names = [v.name for v in g.output]
    if heads and names != heads:
        raise ValueError(f"outputs {names}, want {heads}")
    if not heads and (len(names) != 1 or names[0] not in ("probabilities", "values")):
        raise ValueError(f"outputs {names}, want one of ['probabilities', 'values']")
    ops = []
    for v in list(g.input) + list(g.output):
        dim0 = v.type.tensor_type.shape.dim[0]
        if dim0.dim_param != "N":
            raise ValueError(f"{v.name} batch dimension {dim0}, want 'N'")
    for out in g.output:
        last = [n for n in g.node if out.name in n.output]
        if len(last) != 1:
            raise ValueError(f"{len(last)} nodes write the output {out.name}, want 1")
        ops.append(f"{out.name} {last[0].op_type}" if heads else last[0].op_type)
    return ", ".join(ops)


status = 0
args = sys.argv[1:]
heads, inputs = [], []
while args[:1] in (["--heads"], ["--inputs"]):
    if args[0] == "--heads":
        heads = args[1].split(",")
    else:
        inputs = args[1].split(",")
    args = args[2:]
for path in args:
    try:
        op = check(path, heads, inputs)
        print(f"ok {path}: last node {op}")
    except Exception as err:  # the checker raises its own error types
        print(f"check.py: {path}: {type(err).__name__}: {err}", file=sys.stderr)
        status = 1
sys.exit(status)
