//! Names of paths by their words: the conventions the index's resolver and retrieval's places
//! share (a directory named for tests).

/// A directory named for tests in one of its words (`Newtonsoft.Json.Tests`, `AlamofireTests`,
/// Kotlin's `jvmTest` source set, `test-shrinker`, `okio-testing-support`): C#, Swift and
/// Gradle projects name test projects and source sets after what they test. A word inside a
/// name (`_pytest`, `latest`, `contest`) is not one.
pub fn test_directory(dir: &str) -> bool {
    name_words(dir).any(|w| ["test", "tests", "testing"].contains(&w.to_ascii_lowercase().as_str()))
}

/// The words of a name: split at `.`, `-`, `_` and camel-case humps (`FuzzTests` → `Fuzz`,
/// `Tests`; `wasmWasiTest` → `wasm`, `Wasi`, `Test`).
pub fn name_words(name: &str) -> impl Iterator<Item = &str> {
    // Without allocating: retrieval's `place` runs for every candidate of every query.
    name.split(['.', '-', '_']).flat_map(|part| {
        let bytes = part.as_bytes();
        let mut start = 0;
        std::iter::from_fn(move || {
            if start >= bytes.len() {
                return None;
            }
            let end = (start + 1..bytes.len())
                .find(|&i| {
                    bytes[i].is_ascii_uppercase()
                        && (bytes[i - 1].is_ascii_lowercase() || bytes[i - 1].is_ascii_digit())
                })
                .unwrap_or(bytes.len());
            let word = &part[start..end];
            start = end;
            Some(word)
        })
    })
}
