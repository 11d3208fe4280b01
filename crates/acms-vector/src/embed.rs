//! The `Embedder` seam and the built-in `HashEmbedder`, plus the small vector helpers (dot,
//! cosine, L2 normalization) everything else in the crate uses.
//!
//! The `HashEmbedder` needs no model file: tests use it, and a user may choose it explicitly
//! (`embedder = "hash"`); it is never a silent fallback for a missing model. It captures lexical
//! overlap only (shared words, identifier sub-words, character trigrams), not meaning; the real
//! model lives in `fast.rs`. This module does no I/O.

use rayon::prelude::*;

use crate::error::Result;

/// Turns texts into vectors. Implementations are shared across threads by the retrieval
/// executor, hence `Send + Sync`.
pub trait Embedder: Send + Sync {
    /// Model identity, stored with every persisted vector so that a model change invalidates
    /// them (it includes a hash of the model file where there is one).
    fn id(&self) -> &str;
    /// Length of every vector this embedder returns.
    fn dim(&self) -> usize;
    /// Typical cosines of an unrelated and of a clearly related (query, code) pair: a
    /// strategy maps this range onto relevance [0, 1]. Scales differ a lot between embedders,
    /// and an absolute scale (unlike BM25's relative one) lets a query that matches nothing
    /// find nothing.
    fn calibration(&self) -> (f32, f32) {
        (0.2, 0.7)
    }
    /// One vector per text, in order, each of length `dim()` and L2-normalized; a text without
    /// any feature (such as the empty string) may map to the zero vector. Implementations batch
    /// internally, so callers should pass many texts at once.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Whether this embedder can never embed again (a model that failed to start): a caller
    /// that keeps embedders loads a new one.
    fn failed(&self) -> bool {
        false
    }
    /// Whether a start in the background may still be running: whoever keeps the embedder
    /// beyond its users' lifetime must not (dropping the last user waits for the start).
    fn starting(&self) -> bool {
        false
    }
}

/// Dot product. Eight independent accumulators let the compiler vectorize the loop (a single
/// running sum is a dependency chain it must keep in order).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_as(a, b)
}

/// [`dot`] of an f32 vector with one whose components widen to f32 (the int8 of `quant`).
#[inline]
pub(crate) fn dot_as<T: Copy + Into<f32>>(a: &[f32], b: &[T]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, &y)| x * y.into())
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i].into();
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot(a, b) / (na * nb)
    }
}

/// Scales `v` to unit length in place; returns false (and leaves `v` alone) for a zero or
/// non-finite vector.
pub fn normalize(v: &mut [f32]) -> bool {
    let n = dot(v, v).sqrt();
    if n == 0.0 || !n.is_finite() {
        return false;
    }
    v.iter_mut().for_each(|x| *x /= n);
    true
}

/// Deterministic feature-hashing embedder: lower-cased words, identifier sub-words (camelCase,
/// snake_case, digits) and character trigrams of each sub-word, signed-hashed into `dim`
/// buckets with sublinear term frequency (1 + ln tf), then L2-normalized.
///
/// Two texts get a high cosine when they share words, identifier parts or spellings, which is
/// what keyword-ish code search needs from a fallback; it knows no synonyms.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dim: usize,
    id: String,
}

/// English words that carry no topic: hashing them would make every sentence look alike.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of",
    "on", "or", "that", "the", "this", "to", "was", "with",
];

/// Feature weights: a whole word or identifier part is strong evidence, a trigram is weak
/// (there are many per word) but survives typos, plurals and partial identifiers.
const WORD_WEIGHT: f32 = 1.0;
const SUBWORD_WEIGHT: f32 = 1.0;
const TRIGRAM_WEIGHT: f32 = 0.4;

/// Above this many texts the batch is spread over rayon's thread pool.
const PARALLEL_BATCH: usize = 64;

impl HashEmbedder {
    /// The dimension of the default embedder: the same as the MiniLM model, so a store's
    /// layout does not depend on which embedder made it.
    const DEFAULT_DIM: usize = 384;

    /// An embedder with `dim` buckets (at least 1).
    pub fn new(dim: usize) -> HashEmbedder {
        let dim = dim.max(1);
        HashEmbedder {
            dim,
            id: format!("acms-hash-v1-{dim}"),
        }
    }

    /// The vector of one text.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut features: std::collections::HashMap<u64, (u32, f32)> =
            std::collections::HashMap::new();
        let mut add = |kind: u8, s: &str, weight: f32| {
            let e = features.entry(fnv1a(kind, s)).or_insert((0, weight));
            e.0 += 1;
        };
        for word in words(text) {
            let lower = word.to_lowercase();
            if STOP_WORDS.contains(&lower.as_str()) {
                continue;
            }
            add(b'w', &lower, WORD_WEIGHT);
            let parts = split_identifier(word);
            for part in &parts {
                if parts.len() > 1 {
                    add(b's', part, SUBWORD_WEIGHT);
                }
                let chars: Vec<char> = std::iter::once('^')
                    .chain(part.chars())
                    .chain(std::iter::once('$'))
                    .collect();
                let mut tri = String::with_capacity(12);
                for w in chars.windows(3) {
                    tri.clear();
                    tri.extend(w);
                    add(b't', &tri, TRIGRAM_WEIGHT);
                }
            }
        }
        let mut v = vec![0f32; self.dim];
        for (h, (tf, weight)) in features {
            // The low bits choose the bucket, the top bit the sign: signed hashing makes
            // collisions cancel on average instead of piling up.
            let bucket = (h % self.dim as u64) as usize;
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            v[bucket] += sign * weight * (1.0 + (tf as f32).ln());
        }
        normalize(&mut v);
        v
    }
}

impl Default for HashEmbedder {
    fn default() -> HashEmbedder {
        HashEmbedder::new(HashEmbedder::DEFAULT_DIM)
    }
}

impl Embedder for HashEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    /// Its related pairs score about where a trained model's unrelated ones do (measured on
    /// the `tests/data/shop` fixture).
    fn calibration(&self) -> (f32, f32) {
        (0.15, 0.5)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.len() >= PARALLEL_BATCH {
            Ok(texts.par_iter().map(|t| self.embed_one(t)).collect())
        } else {
            Ok(texts.iter().map(|t| self.embed_one(t)).collect())
        }
    }
}

/// 64-bit FNV-1a over a kind byte and the feature text, then a murmur-style finalizer so the
/// top bit (the sign) and the low bits (the bucket) are well mixed. Stable across platforms
/// and releases, unlike `std`'s hasher, which vectors persisted on disk require.
fn fnv1a(kind: u8, s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in std::iter::once(kind).chain(s.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// Maximal runs of alphanumeric characters and underscores (identifiers and words, any script).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Lower-cased parts of an identifier: `parseHTTPResponse_v2` → `parse`, `http`, `response`,
/// `v`, `2`. Boundaries are underscores, lower→upper, the last capital of an acronym before a
/// lower-case letter, and letter↔digit changes.
pub(crate) fn split_identifier(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut parts = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            if !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|j| chars.get(j)) {
            let next = chars.get(i + 1).copied();
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(|n| n.is_lowercase()))
                || (prev.is_alphabetic() && c.is_numeric())
                || (prev.is_numeric() && c.is_alphabetic());
            if boundary && !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(word: &str, expected: &[&str]) {
        assert_eq!(split_identifier(word), expected, "{word}");
    }

    #[test]
    fn identifiers_split_into_lowercase_parts() {
        check(
            "parseHTTPResponse_v2",
            &["parse", "http", "response", "v", "2"],
        );
        check("snake_case_name", &["snake", "case", "name"]);
        check("__init__", &["init"]);
        check("XMLHttpRequest", &["xml", "http", "request"]);
        check("plain", &["plain"]);
        check("Ünïcode名前", &["ünïcode名前"]);
        check("", &[]);
    }

    fn cos(e: &HashEmbedder, a: &str, b: &str) -> f32 {
        cosine(&e.embed_one(a), &e.embed_one(b))
    }

    #[test]
    fn related_texts_are_closer_than_unrelated_ones() {
        let e = HashEmbedder::default();
        // (query, related, unrelated)
        let cases = [
            (
                "parse the http response",
                "fn parse_http_response(buf: &[u8]) -> Response",
                "class ImageResizer: scales thumbnails to fit",
            ),
            (
                "read configuration file",
                "def load_config_file(path): reads the configuration",
                "def render_triangle(mesh, shader)",
            ),
            (
                "tokenCounter",
                "struct TokenCounter counts tokens exactly",
                "impl Drop for FileLock",
            ),
        ];
        for (q, related, unrelated) in cases {
            let (r, u) = (cos(&e, q, related), cos(&e, q, unrelated));
            assert!(r > u + 0.1, "{q}: related {r} vs unrelated {u}");
        }
    }

    #[test]
    fn embeddings_are_deterministic_normalized_and_batched_in_order() {
        let e = HashEmbedder::default();
        let texts = ["alpha beta", "gamma_delta", "", "!!!", "日本語のテキスト"];
        let a = e.embed(&texts).unwrap();
        let many: Vec<&str> = texts.iter().cycle().take(200).copied().collect();
        let b = e.embed(&many).unwrap();
        for (i, v) in a.iter().enumerate() {
            assert_eq!(v.len(), 384);
            assert_eq!(v, &b[i], "parallel batch changes nothing");
            assert_eq!(v, &e.embed_one(texts[i]));
        }
        // Empty and punctuation-only texts have no features: the zero vector.
        assert!(a[2].iter().all(|&x| x == 0.0));
        assert!(a[3].iter().all(|&x| x == 0.0));
        assert!((dot(&a[4], &a[4]) - 1.0).abs() < 1e-5);
        // Pinned: 20 features (the word, 3 parts, 16 distinct trigrams) in 19 buckets (one
        // collision). A change to hashing or tokenizing must also change the embedder id, or
        // persisted vectors would silently mix two embeddings.
        let v = e.embed_one("parse_http_response");
        let nonzero = v.iter().filter(|&&x| x != 0.0).count();
        assert_eq!((nonzero, e.id()), (19, "acms-hash-v1-384"));
    }

    proptest! {
        #[test]
        fn any_text_gives_a_unit_or_zero_vector(text in "\\PC{0,200}") {
            let v = HashEmbedder::new(64).embed_one(&text);
            prop_assert_eq!(v.len(), 64);
            let n = dot(&v, &v);
            prop_assert!(n == 0.0 || (n - 1.0).abs() < 1e-4, "norm² {}", n);
        }

        #[test]
        fn dot_matches_the_naive_sum(v in proptest::collection::vec(-10f32..10.0, 0..70)) {
            let naive: f32 = v.iter().map(|x| x * x).sum();
            prop_assert!((dot(&v, &v) - naive).abs() <= 1e-3 * naive.max(1.0));
        }
    }
}
