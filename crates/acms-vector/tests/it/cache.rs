//! EmbeddingCache: unchanged texts are never re-embedded; persistence and invalidation.

use std::sync::atomic::{AtomicUsize, Ordering};

use acms_vector::{CACHE_FILE, CacheLoad, Embedder, EmbeddingCache, HashEmbedder, Result};

/// Counts the texts it embeds, so the test can see what the cache saved.
struct Counting {
    inner: HashEmbedder,
    embedded: AtomicUsize,
}

impl Embedder for Counting {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embedded.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed(texts)
    }
}

#[test]
fn unchanged_texts_are_not_re_embedded_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let e = Counting {
        inner: HashEmbedder::default(),
        embedded: AtomicUsize::new(0),
    };
    let (mut cache, how) = EmbeddingCache::load(dir.path(), &e);
    assert_eq!(how, CacheLoad::Missing);
    let (v1, n) = cache.embed(&e, &["fn a()", "fn b()", "fn a()"]).unwrap();
    assert_eq!((n, e.embedded.load(Ordering::SeqCst)), (2, 2));
    assert_eq!(v1[0], v1[2]);
    cache.save(dir.path()).unwrap();

    // Next index run: one text changed.
    let (mut cache, how) = EmbeddingCache::load(dir.path(), &e);
    assert_eq!((how, cache.len()), (CacheLoad::Loaded, 2));
    let (v2, n) = cache.embed(&e, &["fn a()", "fn c()"]).unwrap();
    assert_eq!((n, e.embedded.load(Ordering::SeqCst)), (1, 3));
    assert_eq!(v2[0], v1[0]);
    assert_eq!(v2[1], e.inner.embed_one("fn c()"));
}

#[test]
fn another_embedder_or_a_damaged_file_gives_an_empty_cache() {
    let dir = tempfile::tempdir().unwrap();
    let e = HashEmbedder::default();
    let (mut cache, _) = EmbeddingCache::load(dir.path(), &e);
    cache.embed(&e, &["x", "y"]).unwrap();
    cache.save(dir.path()).unwrap();

    let other = HashEmbedder::new(128);
    let (c, how) = EmbeddingCache::load(dir.path(), &other);
    assert_eq!(
        how,
        CacheLoad::OtherEmbedder {
            found: "acms-hash-v1-384".into()
        }
    );
    assert!(c.is_empty());

    let path = dir.path().join(CACHE_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let (c, how) = EmbeddingCache::load(dir.path(), &e);
    assert!(c.is_empty());
    match how {
        CacheLoad::Damaged(msg) => assert!(msg.contains(CACHE_FILE), "{msg}"),
        other => panic!("expected Damaged, got {other:?}"),
    }
}

#[test]
fn retain_drops_texts_that_are_gone() {
    let e = HashEmbedder::default();
    let mut cache = EmbeddingCache::new(&e);
    cache.embed(&e, &["keep", "drop"]).unwrap();
    let keep = acms_core::ContentHash::of(b"keep");
    cache.retain(|h| *h == keep);
    assert_eq!(cache.len(), 1);
    assert!(cache.get(&keep).is_some());
}
