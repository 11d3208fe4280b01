//! Stored vectors as int8: each unit vector becomes `dim` signed bytes (its largest component
//! at ±127) and one norm, a quarter of the bytes of f32 — what a one-shot query reads and
//! holds. A score is `q · x / ‖x‖` with the query `q` in f32, so only the stored side is
//! rounded: at 384 dimensions a cosine moves by about 1e-3 (a test bounds it at 0.01).
//!
//! Quantizing is idempotent: `quantize(dequantize(x))` gives back the same bytes and norm, so
//! a vector that is saved, logged and replayed never drifts.

/// `v` (finite, not zero) as int8 components into `out`, and the norm of those components.
pub(crate) fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let step = if max > 0.0 { 127.0 / max } else { 0.0 };
    for (o, x) in out.iter_mut().zip(v) {
        *o = (x * step).round().clamp(-127.0, 127.0) as i8;
    }
    norm(out)
}

/// The Euclidean norm of int8 components (the sum of squares is exact in integers).
fn norm(x: &[i8]) -> f32 {
    let squares: i64 = x.iter().map(|&c| i64::from(c) * i64::from(c)).sum();
    (squares as f64).sqrt() as f32
}

/// The unit vector the int8 components stand for.
pub(crate) fn dequantize(x: &[i8], norm: f32) -> Vec<f32> {
    x.iter().map(|&c| f32::from(c) / norm).collect()
}

/// Cosine of the unit query `q` and the stored vector `(x, norm)`.
#[inline]
pub(crate) fn score(q: &[f32], x: &[i8], norm: f32) -> f32 {
    if norm > 0.0 {
        crate::embed::dot_as(q, x) / norm
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::{dot, normalize};
    use proptest::prelude::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let mut v = v.to_vec();
        normalize(&mut v);
        v
    }

    #[test]
    fn an_axis_scores_exactly_one_against_itself() {
        let mut x = [0i8; 4];
        let n = quantize(&[0.0, 1.0, 0.0, 0.0], &mut x);
        assert_eq!(x, [0, 127, 0, 0]);
        assert_eq!(score(&[0.0, 1.0, 0.0, 0.0], &x, n), 1.0);
    }

    proptest! {
        /// Quantized cosines stay within 0.01 of the f32 ones at the model's dimension (the
        /// bound is loose: the typical error is about 1e-3).
        #[test]
        fn scores_stay_close_to_f32(
            a in proptest::collection::vec(-1f32..1.0, 384),
            b in proptest::collection::vec(-1f32..1.0, 384),
        ) {
            let (a, b) = (unit(&a), unit(&b));
            prop_assume!(a.iter().any(|x| *x != 0.0) && b.iter().any(|x| *x != 0.0));
            let mut x = vec![0i8; 384];
            let n = quantize(&b, &mut x);
            prop_assert!((score(&a, &x, n) - dot(&a, &b)).abs() < 0.01);
        }

        /// A dequantized vector quantizes to the same bytes and norm: saving, logging and
        /// replaying a vector never moves it.
        #[test]
        fn quantizing_is_idempotent(v in proptest::collection::vec(-1f32..1.0, 1..64)) {
            prop_assume!(v.iter().any(|x| x.abs() > 1e-6));
            let mut x = vec![0i8; v.len()];
            let n = quantize(&unit(&v), &mut x);
            let mut y = vec![0i8; v.len()];
            let m = quantize(&dequantize(&x, n), &mut y);
            prop_assert_eq!(x, y);
            prop_assert_eq!(n, m);
        }
    }
}
