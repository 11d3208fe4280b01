//! Assembles one task repeatedly on an opened engine, for profiling the assembly path:
//! `cargo run --release -p acms-eval --example assemble_loop -- INDEX_DIR TASK_FILE BUDGET N`;
//! `ACMS_MANIFEST_MODEL=DIR` assembles with the embedding model in DIR, as the real-issue
//! benchmark's indexes built with it expect.

use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (index, task, budget, n) = (
        std::path::PathBuf::from(&args[1]),
        std::fs::read_to_string(&args[2])?,
        args[3].parse::<usize>()?,
        args[4].parse::<usize>()?,
    );
    let model = std::env::var_os("ACMS_MANIFEST_MODEL").map(std::path::PathBuf::from);
    let config = acms_eval::issues::base_config(model.as_deref());
    let engine = acms::Engine::open(&index, &config)?;
    let mut ms = Vec::new();
    let mut stages: Vec<(String, f64)> = Vec::new();
    for round in 0..n {
        let t = Instant::now();
        let ctx = engine.assemble(&acms::AssemblyRequest {
            query: acms::Query::new(task.as_str()),
            budget: acms::Budget::Tokens(budget),
            parent: None,
        })?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        if round + 1 == n {
            for r in &ctx.diagnostics.strategies {
                eprintln!("{:>24} {:>8.2} ms (last round)", r.strategy, r.millis);
            }
        }
        // The first round pays one-time costs (tokenizer tables, page cache): left out.
        if round > 0 {
            for (i, s) in ctx.diagnostics.stages.iter().enumerate() {
                if stages.len() <= i {
                    stages.push((s.stage.clone(), 0.0));
                }
                stages[i].1 += s.millis / (n - 1) as f64;
            }
        }
    }
    for (stage, mean) in &stages {
        eprintln!("{stage:>24} {mean:>8.2} ms");
    }
    ms.sort_by(f64::total_cmp);
    println!("p50 {:.1} ms, min {:.1} ms over {n}", ms[n / 2], ms[0]);
    Ok(())
}
