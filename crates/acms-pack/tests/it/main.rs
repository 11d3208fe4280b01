//! Integration tests of `acms-pack`: one binary, one module per concern.

mod packers;
mod props;
mod verify;

use acms_pack::{Candidate, Depth, DepthOption};

/// A candidate from `(depth, tokens, value)` triples.
pub fn cand(id: u64, opts: &[(u8, u32, f64)]) -> Candidate {
    Candidate {
        id,
        options: opts
            .iter()
            .map(|&(d, tokens, value)| DepthOption {
                depth: Depth::try_from(d).expect("test depths are 0, 2, 4 or 9"),
                tokens,
                value,
            })
            .collect(),
    }
}

/// A typical four-depth candidate: full source of `full` tokens worth `value`, shallower
/// depths cheaper and worth proportionally less than they cost.
pub fn typical(id: u64, full: u32, value: f64) -> Candidate {
    cand(
        id,
        &[
            (9, full, value),
            (4, (full * 35 / 100).max(1), value * 0.6),
            (2, (full * 12 / 100).max(1), value * 0.35),
            (0, (full * 5 / 100).max(1), value * 0.2),
        ],
    )
}
