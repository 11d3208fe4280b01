use serde::{Deserialize, Serialize};

/// How much of a code symbol a rendering shows.
///
/// The numbers are the spec's: 0 signature, 2 signature + doc, 4 signature + body skeleton,
/// 9 full source. Ordering follows the amount shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum Depth {
    /// Signature only.
    Signature = 0,
    /// Signature and docstring / doc comment.
    Doc = 2,
    /// Signature and body skeleton (nested signatures, control-flow outline).
    Skeleton = 4,
    /// Full source, verbatim.
    Full = 9,
}

impl Depth {
    /// All depths, deepest first: the packer's fallback order.
    pub const FALLBACK: [Depth; 4] = [Depth::Full, Depth::Skeleton, Depth::Doc, Depth::Signature];

    /// The spec's numeric value.
    pub fn value(self) -> u8 {
        self as u8
    }

    /// Position in a `[_; 4]` array ordered shallowest first (0, 2, 4, 9).
    pub fn index(self) -> usize {
        match self {
            Depth::Signature => 0,
            Depth::Doc => 1,
            Depth::Skeleton => 2,
            Depth::Full => 3,
        }
    }

    /// Inverse of [`Depth::index`].
    pub fn from_index(i: usize) -> Option<Depth> {
        [Depth::Signature, Depth::Doc, Depth::Skeleton, Depth::Full]
            .get(i)
            .copied()
    }

    /// The next shallower depth, if any.
    pub fn shallower(self) -> Option<Depth> {
        match self {
            Depth::Full => Some(Depth::Skeleton),
            Depth::Skeleton => Some(Depth::Doc),
            Depth::Doc => Some(Depth::Signature),
            Depth::Signature => None,
        }
    }
}

impl TryFrom<u8> for Depth {
    type Error = crate::Error;
    fn try_from(v: u8) -> crate::Result<Depth> {
        match v {
            0 => Ok(Depth::Signature),
            2 => Ok(Depth::Doc),
            4 => Ok(Depth::Skeleton),
            9 => Ok(Depth::Full),
            other => Err(crate::Error::InvalidDepth(other)),
        }
    }
}

impl From<Depth> for u8 {
    fn from(d: Depth) -> u8 {
        d.value()
    }
}

impl std::fmt::Display for Depth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_orders() {
        for d in Depth::FALLBACK {
            assert_eq!(Depth::try_from(d.value()).unwrap(), d);
            assert_eq!(Depth::from_index(d.index()), Some(d));
        }
        assert!(Depth::try_from(3).is_err());
        assert!(Depth::Full > Depth::Skeleton && Depth::Doc > Depth::Signature);
        assert_eq!(Depth::Full.shallower(), Some(Depth::Skeleton));
        assert_eq!(Depth::Signature.shallower(), None);
    }
}
