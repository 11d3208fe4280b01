use serde::{Deserialize, Serialize};

/// Identity of a UKO node.
///
/// Derived from the node's repository-relative path, kind and qualified name (plus an
/// ordinal for same-named siblings), never from its position in a run, so the id of an
/// unchanged symbol is the same after every re-index.
///
/// In JSON it is its 16 hex digits as a string, on every surface: ids use all 64 bits and a
/// JSON number above 2^53 loses digits in JavaScript (and in any reader that parses numbers
/// as doubles). A plain number is still accepted on input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

impl std::str::FromStr for NodeId {
    type Err = String;

    /// 1 to 16 hex digits, as [`NodeId`]'s `Display` writes them.
    fn from_str(s: &str) -> Result<NodeId, String> {
        let t = s.trim();
        if t.is_empty() || t.len() > 16 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("`{s}` is not a node id (16 hex digits)"));
        }
        u64::from_str_radix(t, 16)
            .map(NodeId)
            .map_err(|e| e.to_string())
    }
}

impl Serialize for NodeId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NodeId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NodeId, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Hex(String),
            Number(u64),
        }
        match Form::deserialize(d)? {
            Form::Hex(s) => s.parse().map_err(serde::de::Error::custom),
            Form::Number(n) => Ok(NodeId(n)),
        }
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

    #[test]
    fn json_carries_ids_as_hex_strings_that_keep_every_bit() {
        let big = NodeId(0xfedc_ba98_7654_3210);
        let json = serde_json::to_string(&big).unwrap();
        assert_eq!(json, "\"fedcba9876543210\"");
        assert_eq!(serde_json::from_str::<NodeId>(&json).unwrap(), big);
        // Numbers written before are still read.
        assert_eq!(serde_json::from_str::<NodeId>("42").unwrap(), NodeId(42));
        assert!(serde_json::from_str::<NodeId>("\"xyz\"").is_err());
        assert!(serde_json::from_str::<NodeId>("\"10000000000000000\"").is_err());
    }
}
