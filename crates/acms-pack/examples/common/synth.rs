//! Synthetic packing instances shaped like retrieved code, shared by the `pack_figures`
//! example and the `pack` criterion bench (both include this file with `#[path]`), so the
//! ratios and the timings are measured on the same instances.
//!
//! Full-source cost is log-normal (median ~250, clamped to 50–2000 tokens); skeleton 30–40 %,
//! signature + doc 10–15 %, signature 3–8 % of it, at least 10 tokens (the spec's minimum
//! fragment size). The value is a skewed relevance score times a concave "how much of the
//! symbol this depth shows" factor. A SplitMix64 generator keeps every run identical.

use acms_pack::{Candidate, Depth, DepthOption};

/// SplitMix64: a tiny deterministic generator, so the instances are the same on every run.
pub struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// `n` synthetic candidates (ids 0..n).
pub fn instance(n: usize, seed: u64) -> Vec<Candidate> {
    let mut rng = Rng(seed.wrapping_mul(0xA24B_AED4_963E_E407) ^ n as u64);
    (0..n as u64)
        .map(|id| {
            // Median ~250 tokens, long tail up to 2000.
            let full = (250.0 * (0.9 * rng.normal()).exp()).clamp(50.0, 2000.0);
            // Skewed relevance: most fragments are weak matches, a few are strong.
            let score = rng.unit().powi(3) + 0.01;
            let mut option = |depth: Depth, share: (f64, f64), shown: (f64, f64)| DepthOption {
                depth,
                tokens: ((full * rng.range(share.0, share.1)).round() as u32).max(10),
                value: score * rng.range(shown.0, shown.1),
            };
            let options = vec![
                option(Depth::Full, (1.0, 1.0), (1.0, 1.0)),
                option(Depth::Skeleton, (0.30, 0.40), (0.55, 0.75)),
                option(Depth::Doc, (0.10, 0.15), (0.30, 0.45)),
                option(Depth::Signature, (0.03, 0.08), (0.12, 0.25)),
            ];
            Candidate { id, options }
        })
        .collect()
}
