//! Prints the packing figures for `docs/BENCHMARKS.md`: on synthetic fragment sets of
//! 100 / 1 000 / 10 000 candidates and budgets of 4k / 32k / 128k tokens, each packer's value
//! as a ratio of the exact optimum (mean and worst over three seeds), the hull packer's
//! certified gap, and the median time per pack.
//!
//! The optimum comes from `ExactPacker::optimum_value`, the O(budget)-memory DP, so even the
//! 10 000 × 128k instances are measured (it takes seconds there; that is the point of `hull`).
//! Run with `cargo run --release -p acms-pack --example pack_figures`. The criterion bench
//! `benches/pack.rs` times the same instances more carefully.

#[path = "common/synth.rs"]
mod synth;

use acms_pack::{ExactPacker, GreedyPacker, HullPacker, Packer};
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [100, 1_000, 10_000];
const BUDGETS: [u32; 3] = [4_096, 32_768, 131_072];
const SEEDS: [u64; 3] = [1, 2, 3];

/// Median wall time of `f` over repeated runs (at least 5, about 300 ms in total).
fn median_time(mut f: impl FnMut()) -> Duration {
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (start.elapsed() < Duration::from_millis(300) && times.len() < 1000) {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort_unstable();
    times[times.len() / 2]
}

/// User + system CPU seconds of this process so far, from `/proc/self/stat` (Linux; clock
/// ticks at the usual 100 Hz). On a shared machine wall time includes waiting for a core;
/// CPU time per run does not, so both are reported.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Mean CPU time per run of `f`, over at least 0.5 s of CPU (50 ticks) so the 10 ms tick
/// resolution costs at most 2 %. Runs in doubling batches so reading `/proc` stays off the
/// measured path.
fn cpu_time_per_run(mut f: impl FnMut()) -> Option<Duration> {
    let start = cpu_seconds()?;
    let (mut runs, mut batch) = (0u32, 1u32);
    loop {
        for _ in 0..batch {
            f();
        }
        runs += batch;
        batch = batch.saturating_mul(2);
        let used = cpu_seconds()? - start;
        if used >= 0.5 {
            return Some(Duration::from_secs_f64(used / f64::from(runs)));
        }
    }
}

fn main() {
    let packers: [&dyn Packer; 2] = [&GreedyPacker, &HullPacker];
    println!("value / exact optimum (mean, worst of seeds {SEEDS:?}); hull gap = worst certified");
    println!(
        "gap 1 - value/LP bound; times on seed {}: median wall µs, mean CPU µs",
        SEEDS[0]
    );
    println!(
        "| n | budget | greedy mean | greedy worst | hull mean | hull worst | hull gap | greedy µs | hull µs | greedy CPU µs | hull CPU µs | exact DP ms |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in SIZES {
        for budget in BUDGETS {
            let mut ratios = [Vec::new(), Vec::new()];
            let mut gap: f64 = 0.0;
            let mut exact_ms = 0.0;
            for seed in SEEDS {
                let cs = synth::instance(n, seed);
                let t = Instant::now();
                let opt = ExactPacker::default()
                    .optimum_value(&cs, budget)
                    .expect("four options each, 128k budget");
                if seed == SEEDS[0] {
                    exact_ms = t.elapsed().as_secs_f64() * 1e3;
                }
                for (k, p) in packers.iter().enumerate() {
                    let packing = p.pack(&cs, budget);
                    ratios[k].push(if opt > 0.0 { packing.value / opt } else { 1.0 });
                    gap = gap.max(packing.certified_gap.unwrap_or(0.0));
                }
            }
            let cs = synth::instance(n, SEEDS[0]);
            let run = |p: &dyn Packer| {
                std::hint::black_box(p.pack(std::hint::black_box(&cs), budget));
            };
            let us: Vec<f64> = packers
                .iter()
                .map(|p| median_time(|| run(*p)).as_secs_f64() * 1e6)
                .collect();
            let cpu_us: Vec<f64> = packers
                .iter()
                .map(|p| cpu_time_per_run(|| run(*p)).map_or(f64::NAN, |d| d.as_secs_f64() * 1e6))
                .collect();
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let worst = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "| {n} | {budget} | {:.4} | {:.4} | {:.6} | {:.6} | {gap:.6} | {:.0} | {:.0} | {:.0} | {:.0} | {exact_ms:.0} |",
                mean(&ratios[0]),
                worst(&ratios[0]),
                mean(&ratios[1]),
                worst(&ratios[1]),
                us[0],
                us[1],
                cpu_us[0],
                cpu_us[1],
            );
        }
    }
}
