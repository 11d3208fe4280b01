//! Integration tests of acms-vector: one binary (see STYLE.md), one module per concern.

mod cache;
mod index;
mod model;

/// Deterministic pseudo-random unit vectors (splitmix64 → uniform in [-1, 1), normalized), so
/// recall figures are reproducible without a rand dependency.
pub fn random_vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    };
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = (0..dim).map(|_| next()).collect();
            acms_vector::normalize(&mut v);
            v
        })
        .collect()
}
