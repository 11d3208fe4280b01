//! Packing benchmarks: the three packers of `acms-pack` on synthetic fragment sets of
//! 100 / 1 000 / 10 000 candidates and budgets of 4k / 32k / 128k tokens.
//!
//! Before the criterion timings it prints a quality table: each packer's value as a ratio of
//! the exact optimum (computed with `ExactPacker::optimum_value`, the O(budget)-memory DP, so
//! even 10 000 × 128k is measured), and the hull packer's certified gap. Set
//! `ACMS_PACK_QUALITY=0` to skip the table; under `cargo test --benches` (criterion's
//! `--test`) it is limited to the 100-candidate sets.
//!
//! The instances are synthetic but shaped like retrieved code: full-source cost log-normal in
//! 50–2000 tokens, skeleton 30–40 %, signature + doc 10–15 %, signature 3–8 % of it (at least
//! 10 tokens, the spec's minimum fragment size), and a skewed relevance score times a concave
//! "how much of the symbol this depth shows" factor as the value.

use acms_core::Depth;
use acms_pack::{Candidate, DepthOption, ExactPacker, GreedyPacker, HullPacker, Packer};
use criterion::{BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [100, 1_000, 10_000];
const BUDGETS: [u32; 3] = [4_096, 32_768, 131_072];
const SEEDS: [u64; 3] = [1, 2, 3];

/// SplitMix64: a tiny deterministic generator, so the instances are the same on every run.
struct Rng(u64);

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
fn instance(n: usize, seed: u64) -> Vec<Candidate> {
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

fn packers() -> Vec<Box<dyn Packer>> {
    vec![Box::new(GreedyPacker), Box::new(HullPacker)]
}

fn quality_table(sizes: &[usize]) {
    println!("packing quality: value / exact optimum, mean and min over seeds {SEEDS:?}");
    println!(
        "{:>6} {:>7} | {:>8} {:>8} | {:>10} {:>10} | {:>11} {:>9}",
        "n", "budget", "greedy", "min", "hull", "min", "hull gap*", "exact ms"
    );
    for &n in sizes {
        for &budget in &BUDGETS {
            let mut ratios: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
            let mut gaps = Vec::new();
            let mut exact_ms = 0.0;
            for &seed in &SEEDS {
                let cs = instance(n, seed);
                let t = Instant::now();
                let opt = ExactPacker::optimum_value(&cs, budget).expect("4 options each");
                exact_ms += t.elapsed().as_secs_f64() * 1e3 / SEEDS.len() as f64;
                for (k, p) in packers().iter().enumerate() {
                    let packing = p.pack(&cs, budget);
                    ratios[k].push(if opt > 0.0 { packing.value / opt } else { 1.0 });
                    if let Some(g) = packing.certified_gap {
                        gaps.push(g);
                    }
                }
            }
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
            println!(
                "{n:>6} {budget:>7} | {:>8.5} {:>8.5} | {:>10.6} {:>10.6} | {:>11.6} {exact_ms:>9.1}",
                mean(&ratios[0]),
                min(&ratios[0]),
                mean(&ratios[1]),
                min(&ratios[1]),
                max(&gaps),
            );
        }
    }
    println!(
        "* hull gap: largest certified gap 1 - value/LP bound over the seeds (an upper bound on the true loss)"
    );
}

fn bench(c: &mut Criterion) {
    for &n in &SIZES {
        let cs = instance(n, SEEDS[0]);
        let mut group = c.benchmark_group(format!("pack/{n}"));
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for &budget in &BUDGETS {
            for p in packers() {
                group.bench_with_input(
                    BenchmarkId::new(p.name(), budget),
                    &budget,
                    |b, &budget| b.iter(|| p.pack(black_box(&cs), black_box(budget))),
                );
            }
            // The exact DP only where its choice table fits the default guard; beyond that
            // `pack` would silently time the hull fallback.
            let exact = ExactPacker::default();
            if exact.try_pack(&cs, budget).is_ok() {
                group.sample_size(10);
                group.bench_with_input(BenchmarkId::new("exact", budget), &budget, |b, &budget| {
                    b.iter(|| exact.try_pack(black_box(&cs), black_box(budget)))
                });
                group.sample_size(100);
            }
        }
        group.finish();
    }
}

fn main() {
    let test_mode = std::env::args().any(|a| a == "--test");
    if std::env::var("ACMS_PACK_QUALITY").as_deref() != Ok("0") {
        quality_table(if test_mode { &SIZES[..1] } else { &SIZES });
    }
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
