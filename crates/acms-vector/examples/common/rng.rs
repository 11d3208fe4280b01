//! Deterministic synthetic vectors shared by `examples/measure.rs` and `benches/vector.rs`
//! (included with `#[path]`), so both measure the same inputs.

use acms_vector::normalize;

/// Dimension of the synthetic vectors: the real model's.
pub const DIM: usize = 384;

/// SplitMix64: the same inputs on every run.
pub struct Rng(pub u64);

#[allow(dead_code)] // Each includer uses a subset.
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniformly random unit vector.
    pub fn unit_vector(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIM)
            .map(|_| (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect();
        normalize(&mut v);
        v
    }

    /// A point near one of `centres` (noise about as large as the centre): shaped like real
    /// embeddings, which have far fewer effective dimensions than uniform random vectors.
    /// With no centres, a uniform unit vector.
    pub fn clustered(&mut self, centres: &[Vec<f32>]) -> Vec<f32> {
        if centres.is_empty() {
            return self.unit_vector();
        }
        let c = &centres[(self.next_u64() % centres.len() as u64) as usize];
        let noise = self.unit_vector();
        let mut v: Vec<f32> = c.iter().zip(&noise).map(|(a, b)| a + 0.8 * b).collect();
        normalize(&mut v);
        v
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next_u64() % xs.len() as u64) as usize]
    }
}
