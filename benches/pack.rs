//! Packing benchmarks: time per pack of the three packers of `acms-pack` on synthetic fragment
//! sets of 100 / 1 000 / 10 000 candidates and budgets of 4k / 32k / 128k tokens (the exact DP
//! only where its choice table fits the default guard).
//!
//! The instances come from `crates/acms-pack/examples/common/synth.rs`, shared with the
//! `pack_figures` example, which prints each packer's value as a ratio of the exact optimum
//! on the same instances (`cargo run --release -p acms-pack --example pack_figures`).

#[path = "../crates/acms-pack/examples/common/synth.rs"]
mod synth;

use acms_pack::{ExactPacker, GreedyPacker, HullPacker, Packer};
use criterion::{BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 3] = [100, 1_000, 10_000];
const BUDGETS: [u32; 3] = [4_096, 32_768, 131_072];

fn packers() -> Vec<Box<dyn Packer>> {
    vec![Box::new(GreedyPacker), Box::new(HullPacker)]
}

fn bench(c: &mut Criterion) {
    for &n in &SIZES {
        let cs = synth::instance(n, 1);
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
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
