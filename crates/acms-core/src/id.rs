use serde::{Deserialize, Serialize};

/// Identity of a UKO node.
///
/// Derived from the node's repository-relative path, kind and qualified name (plus an
/// ordinal for same-named siblings), never from its position in a run, so the id of an
/// unchanged symbol is the same after every re-index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u64);

impl NodeId {
    /// The id of the symbol `qualified_name` of `kind` in `path`; `ordinal` separates
    /// same-named siblings (overloads, redefinitions) in source order.
    pub fn new(path: &str, kind: &str, qualified_name: &str, ordinal: u32) -> NodeId {
        let mut h = blake3::Hasher::new();
        for part in [path, kind, qualified_name] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        h.update(&ordinal.to_le_bytes());
        let bytes = h.finalize();
        NodeId(u64::from_le_bytes(
            bytes.as_bytes()[..8].try_into().expect("8 bytes"),
        ))
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// A content hash (blake3, hex) used for change detection and deduplication.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ContentHash(pub String);

impl ContentHash {
    /// Hash of `bytes`.
    pub fn of(bytes: &[u8]) -> ContentHash {
        ContentHash(blake3::hash(bytes).to_hex().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = NodeId::new("src/a.py", "function", "a.f", 0);
        assert_eq!(a, NodeId::new("src/a.py", "function", "a.f", 0));
        assert_ne!(a, NodeId::new("src/a.py", "function", "a.f", 1));
        assert_ne!(a, NodeId::new("src/a.py", "method", "a.f", 0));
        // Field boundaries matter: ("ab", "c") must differ from ("a", "bc").
        assert_ne!(
            NodeId::new("ab", "c", "x", 0),
            NodeId::new("a", "bc", "x", 0)
        );
        assert_eq!(ContentHash::of(b"x"), ContentHash::of(b"x"));
    }
}
