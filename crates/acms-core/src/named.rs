//! What the name types ([`crate::Choice`], [`crate::StrategyId`]) share: a few built-in values
//! and any other name, where two values are the same when their names are and order by name.
//! Ordering by name keeps maps keyed by them iterating — and floating-point sums over those
//! maps adding up — in the order of the strings they replaced.

/// Implements comparison, hashing, `Borrow<str>`, comparison with `str`, `Display` and serde
/// (as the bare name) for `$ty`, all through its `as_str`; deserializing goes through its
/// `From<String>`, so every string is accepted.
macro_rules! by_name {
    ($ty:ty $(, $g:ident: $bound:path)?) => {
        impl$(<$g: $bound>)? PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl$(<$g: $bound>)? Eq for $ty {}

        impl$(<$g: $bound>)? PartialOrd for $ty {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl$(<$g: $bound>)? Ord for $ty {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        // Hashes as the name does, so maps keyed by the type can be asked with a `&str`.
        impl$(<$g: $bound>)? std::hash::Hash for $ty {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                std::hash::Hash::hash(self.as_str(), state)
            }
        }

        impl$(<$g: $bound>)? std::borrow::Borrow<str> for $ty {
            fn borrow(&self) -> &str {
                self.as_str()
            }
        }

        impl$(<$g: $bound>)? PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl$(<$g: $bound>)? PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl$(<$g: $bound>)? std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl$(<$g: $bound>)? serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de $(, $g: $bound)?> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                <String as serde::Deserialize>::deserialize(deserializer).map(<$ty>::from)
            }
        }
    };
}

pub(crate) use by_name;
