//! Query benchmark on the same real corpus as the index benchmark: per-strategy retrieval
//! latency (p50/p95), all three default strategies together, and end-to-end assembly
//! (`Engine::assemble`, the call behind `acms query`) at an 8k budget. Queries are the first
//! sentences of docstrings in the corpus. Vectors use the default model installed by
//! `acms model fetch` (without it the semantic strategy is unavailable); the table says
//! which.
//!
//! `cargo bench -p acms-benches --bench query`

use std::collections::HashMap;
use std::time::Instant;

use acms::index::IndexOptions;
use acms::retrieve::names;
use acms::{AssemblyRequest, Budget, Engine, Query, Retriever, StrategyRegistry};

fn main() -> anyhow::Result<()> {
    let corpus = std::env::var("ACMS_BENCH_CORPUS").unwrap_or_else(|_| "docutils".into());
    let src = acms_benches::fetch_corpus(&corpus)?;
    let repo = acms_benches::copy_tree(&src)?;
    let opts = IndexOptions::new(repo.path());
    let t = Instant::now();
    let indexed = acms::index_repository(repo.path(), &opts, true)?;
    println!(
        "corpus {corpus}: {} nodes; index with vectors {:.1} s ({} embedded in {:.1} s); {}",
        indexed.index.nodes,
        t.elapsed().as_secs_f64(),
        indexed.derived.embedded,
        indexed.derived.embed_seconds,
        indexed.embedder.as_deref().unwrap_or("no vectors")
    );

    let config = acms::ContextConfig::default();
    let t = Instant::now();
    let retriever = Retriever::open(&opts.index_dir, &config, &StrategyRegistry::new(), None)?;
    println!(
        "open retriever (store, graph, keyword, vectors, model load): {:.0} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    let queries: Vec<String> = retriever
        .corpus()
        .nodes()
        .iter()
        .filter_map(|n| n.doc.as_deref())
        .map(|d| d.split(". ").next().unwrap_or(d).trim().to_string())
        .filter(|d| d.split_whitespace().count() >= 5)
        .step_by(7)
        .take(60)
        .collect();
    println!("{} queries\n", queries.len());
    println!("| what | p50 ms | p95 ms |");
    println!("|---|---|---|");
    let measure = |label: &str, f: &mut dyn FnMut(&str)| {
        f(&queries[0]); // warm caches
        let mut ms: Vec<f64> = queries
            .iter()
            .map(|q| {
                let t = Instant::now();
                f(q);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        let (p50, p95) = acms_benches::p50_p95(&mut ms);
        println!("| {label} | {p50:.1} | {p95:.1} |");
    };
    for strategy in [names::KEYWORD, names::SEMANTIC, names::NAVIGATOR] {
        measure(strategy, &mut |q| {
            retriever.retrieve(
                &Query::new(q),
                &[strategy.to_string()],
                &HashMap::new(),
                8000,
            );
        });
    }
    measure("all three (parallel executor)", &mut |q| {
        retriever.retrieve(&Query::new(q), &[], &HashMap::new(), 8000);
    });
    let t = Instant::now();
    let engine = Engine::open(&opts.index_dir, &config)?;
    let open_ms = t.elapsed().as_secs_f64() * 1000.0;
    measure("end-to-end assemble, 8k budget", &mut |q| {
        engine
            .assemble(&AssemblyRequest {
                query: Query::new(q),
                budget: Budget::Tokens(8000),
                parent: None,
            })
            .expect("assemble");
    });
    println!("\nengine open (model load included, excluded above): {open_ms:.0} ms");
    real_fragment_sets(&engine, &queries)?;
    Ok(())
}

/// The packers on the knapsack instances real queries produce: value as a ratio of the exact
/// optimum, the hull packer's certified gap, and time per pack.
fn real_fragment_sets(engine: &Engine, queries: &[String]) -> anyhow::Result<()> {
    use acms::pack::{ExactPacker, GreedyPacker, HullPacker, Packer};
    println!(
        "\n| budget | instances | mean candidates | packer | mean value / optimum | min | mean certified gap | mean µs |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for budget in [4_000usize, 32_000] {
        let mut instances = Vec::new();
        for q in queries {
            let (_, instance) = engine.assemble_with_instance(&AssemblyRequest {
                query: Query::new(q.as_str()),
                budget: Budget::Tokens(budget),
                parent: None,
            })?;
            instances.push((instance.candidates, instance.budget));
        }
        let optimum: Vec<Option<f64>> = instances
            .iter()
            .map(|(c, b)| ExactPacker::default().try_pack(c, *b).ok().map(|p| p.value))
            .collect();
        let mean_n =
            instances.iter().map(|(c, _)| c.len()).sum::<usize>() as f64 / instances.len() as f64;
        let packers: [&dyn Packer; 3] = [&HullPacker, &GreedyPacker, &ExactPacker::default()];
        for packer in packers {
            let (mut ratios, mut gaps, mut micros) = (Vec::new(), Vec::new(), Vec::new());
            for ((c, b), opt) in instances.iter().zip(&optimum) {
                let t = Instant::now();
                let p = packer.pack(c, *b);
                micros.push(t.elapsed().as_secs_f64() * 1e6);
                if let Some(opt) = opt.filter(|o| *o > 0.0) {
                    ratios.push(p.value / opt);
                }
                if let Some(g) = p.certified_gap {
                    gaps.push(g);
                }
            }
            let mean = |v: &[f64]| {
                if v.is_empty() {
                    f64::NAN
                } else {
                    v.iter().sum::<f64>() / v.len() as f64
                }
            };
            let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "| {budget} | {} ({} with optimum) | {mean_n:.0} | {} | {:.5} | {:.5} | {:.5} | {:.0} |",
                instances.len(),
                ratios.len(),
                packer.name(),
                mean(&ratios),
                min,
                mean(&gaps),
                mean(&micros)
            );
        }
    }
    Ok(())
}
