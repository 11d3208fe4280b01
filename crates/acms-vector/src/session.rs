//! One ONNX Runtime session of a sentence-embedding model: the tokenizer set up as fastembed
//! sets it up, the graph run on token ids, and fastembed's pooling of the output.
//!
//! The session is ours rather than fastembed's `TextEmbedding` for one reason: fastembed takes
//! the graph's bytes by value and frees them once the session exists, so a session can only
//! copy the graph. The optimized graph in ONNX Runtime's own format ([`crate::graph`]) can
//! instead be run from the bytes where they lie (`commit_from_memory_directly`): a session
//! starts in ~10 ms instead of ~60 and holds ~90 MiB less, and every session of a model shares
//! one copy of those bytes. The arithmetic is the same: the vectors are bit-identical to
//! fastembed's (`fast::tests::the_vectors_are_the_ones_fastembed_computes`).

use std::sync::Arc;

use fastembed::{OutputKey, Pooling, SingleBatchOutput, TokenizerFiles};
use ndarray::Array2;
use ort::environment::Environment;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::{InMemorySession, Session};
use ort::value::Value;
use tokenizers::{AddedToken, PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// The graph bytes a session may run from where they lie, shared by every session of a model.
pub(crate) type GraphBytes = Arc<memmap2::Mmap>;

type BorrowedSession<'a> = InMemorySession<'a>;

self_cell::self_cell!(
    /// A session running from bytes it keeps alive (ONNX Runtime reads the graph's weights
    /// from them for as long as the session lives).
    struct DirectSession {
        owner: GraphBytes,
        #[covariant]
        dependent: BorrowedSession,
    }
);

/// How a session holds its graph.
enum Graph {
    /// Runs from the shared bytes of a graph in ONNX Runtime's format.
    Direct(DirectSession),
    /// Made from an ONNX file, whose bytes ONNX Runtime copied.
    Copied(Session),
}

/// What to do with the graph's output: which output holds per-token vectors, and how to pool.
#[derive(Clone)]
pub(crate) struct Output {
    pub key: OutputKey,
    pub pooling: Pooling,
}

/// One single-threaded session and what it needs to turn texts into unit vectors.
pub(crate) struct ModelSession {
    tokenizer: Arc<Tokenizer>,
    graph: Graph,
    token_type_ids: bool,
    output: Output,
}

/// The graph's bytes, and whether they are ONNX Runtime's own format (run where they lie) or
/// ONNX (copied by the session).
pub(crate) enum GraphSource<'a> {
    Ort(&'a GraphBytes),
    Onnx(&'a [u8]),
}

impl ModelSession {
    pub fn new(
        env: &Environment,
        graph: GraphSource<'_>,
        tokenizer: Arc<Tokenizer>,
        output: Output,
    ) -> Result<ModelSession, String> {
        let graph = match graph {
            GraphSource::Ort(bytes) => Graph::Direct(DirectSession::try_new(
                Arc::clone(bytes),
                |bytes| -> Result<_, String> {
                    builder(env)?
                        .commit_from_memory_directly(bytes)
                        .map_err(|e| e.to_string())
                },
            )?),
            GraphSource::Onnx(bytes) => Graph::Copied(
                builder(env)?
                    .commit_from_memory(bytes)
                    .map_err(|e| e.to_string())?,
            ),
        };
        let session = match &graph {
            Graph::Direct(d) => d.borrow_dependent(),
            Graph::Copied(s) => s,
        };
        let token_type_ids = session
            .inputs()
            .iter()
            .any(|input| input.name() == "token_type_ids");
        Ok(ModelSession {
            tokenizer,
            graph,
            token_type_ids,
            output,
        })
    }

    /// The unit vectors of `texts`, run as one batch (padded to the longest text).
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| format!("cannot tokenize: {e}"))?;
        let width = encodings.first().map_or(0, |e| e.len());
        let tensor = |field: fn(&tokenizers::Encoding) -> &[u32]| {
            let data: Vec<i64> = encodings
                .iter()
                .flat_map(|e| field(e).iter().map(|&x| i64::from(x)))
                .collect();
            Array2::from_shape_vec((encodings.len(), width), data).map_err(|e| e.to_string())
        };
        let attention_mask = tensor(tokenizers::Encoding::get_attention_mask)?;
        let value = |a: Array2<i64>| Value::from_array(a).map_err(|e| e.to_string());
        let mut inputs = ort::inputs![
            "input_ids" => value(tensor(tokenizers::Encoding::get_ids)?)?,
            "attention_mask" => value(attention_mask.clone())?,
        ];
        if self.token_type_ids {
            inputs.push((
                "token_type_ids".into(),
                value(tensor(tokenizers::Encoding::get_type_ids)?)?.into(),
            ));
        }
        let output = &self.output;
        let pool = |outputs: ort::session::SessionOutputs<'_>| {
            let batch = SingleBatchOutput {
                outputs: outputs
                    .into_iter()
                    .map(|(name, v)| (name.to_string(), v))
                    .collect(),
                attention_mask_array: attention_mask,
            };
            let pooled = batch
                .select_and_pool_output(&&output.key, Some(output.pooling.clone()))
                .map_err(|e| e.to_string())?;
            Ok(pooled
                .rows()
                .into_iter()
                .map(|r| normalize(&r.to_vec()))
                .collect())
        };
        let run = |e: ort::Error| format!("the model did not run: {e}");
        match &mut self.graph {
            Graph::Direct(d) => d.with_dependent_mut(|_, s| pool(s.run(inputs).map_err(run)?)),
            Graph::Copied(s) => pool(s.run(inputs).map_err(run)?),
        }
    }
}

/// A single-threaded session builder with fastembed's options: level-3 optimization, and no
/// spinning (an idle worker must not burn the core another one needs).
pub(crate) fn builder(env: &Environment) -> Result<SessionBuilder, String> {
    let text = |e: ort::Error<SessionBuilder>| e.to_string();
    Session::builder(env)
        .map_err(|e| e.to_string())?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(text)?
        .with_intra_threads(1)
        .map_err(text)?
        .with_config_entry("session.intra_op.allow_spinning", "0")
        .map_err(text)
}

/// `v` scaled to unit length, as fastembed scales it (the epsilon included, so the vectors are
/// the very ones fastembed computed for indexes built before).
fn normalize(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|&x| x / (norm + 1e-12)).collect()
}

/// Which tokenizer file a setup error is about, and why.
pub(crate) struct TokenizerError {
    pub file: &'static str,
    pub message: String,
}

/// The model's tokenizer, set up as fastembed's `load_tokenizer` sets it up: padding to the
/// longest text of a batch with the model's pad token, truncation at `max_tokens` (or the
/// model's own limit when lower), the special tokens of `special_tokens_map.json` added.
pub(crate) fn tokenizer(
    files: &TokenizerFiles,
    max_tokens: usize,
) -> Result<Tokenizer, TokenizerError> {
    let fail = |file: &'static str, e: &dyn std::fmt::Display| TokenizerError {
        file,
        message: e.to_string(),
    };
    let json = |file: &'static str, bytes: &[u8]| {
        serde_json::from_slice::<serde_json::Value>(bytes)
            .map_err(|e| fail(file, &format!("not valid JSON ({e})")))
    };
    let config = json("config.json", &files.config_file)?;
    let special = json("special_tokens_map.json", &files.special_tokens_map_file)?;
    let settings = json("tokenizer_config.json", &files.tokenizer_config_file)?;
    let mut tokenizer =
        Tokenizer::from_bytes(&files.tokenizer_file).map_err(|e| fail("tokenizer.json", &e))?;

    let missing = |what: &str| TokenizerError {
        file: "tokenizer_config.json",
        message: format!("missing {what}"),
    };
    let model_max = settings["model_max_length"]
        .as_f64()
        .ok_or_else(|| missing("a numeric `model_max_length`"))? as f32;
    let max_length = max_tokens.min(model_max as usize);
    let pad = &settings["pad_token"];
    let pad_token: String = pad
        .as_str()
        .or_else(|| pad["content"].as_str())
        .ok_or_else(|| missing("a string `pad_token`"))?
        .into();
    let pad_id = config["pad_token_id"]
        .as_u64()
        .map(|id| id as u32)
        .or_else(|| tokenizer.token_to_id(&pad_token))
        .unwrap_or(0);
    tokenizer
        .with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_token,
            pad_id,
            ..Default::default()
        }))
        .with_truncation(Some(TruncationParams {
            max_length,
            ..Default::default()
        }))
        .map_err(|e| fail("tokenizer_config.json", &e))?;
    if let serde_json::Value::Object(tokens) = special {
        for value in tokens.values() {
            let token = if let Some(content) = value.as_str() {
                Some(AddedToken {
                    content: content.into(),
                    special: true,
                    ..Default::default()
                })
            } else if let (
                Some(content),
                Some(single_word),
                Some(lstrip),
                Some(rstrip),
                Some(normalized),
            ) = (
                value["content"].as_str(),
                value["single_word"].as_bool(),
                value["lstrip"].as_bool(),
                value["rstrip"].as_bool(),
                value["normalized"].as_bool(),
            ) {
                Some(AddedToken {
                    content: content.into(),
                    special: true,
                    single_word,
                    lstrip,
                    rstrip,
                    normalized,
                })
            } else {
                None
            };
            tokenizer
                .add_special_tokens(token)
                .map_err(|e| fail("special_tokens_map.json", &e))?;
        }
    }
    Ok(tokenizer)
}
