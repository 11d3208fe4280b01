//! `acms search`: the raw hits of the retrieval strategies, for people debugging retrieval.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use acms::{Query, Retriever, StrategyRegistry};

use crate::Format;

#[derive(clap::Args)]
pub struct SearchArgs {
    /// Index directory (as written by `acms index`).
    #[arg(long)]
    index: PathBuf,
    /// Configuration file.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    model: crate::index::ModelArgs,
    /// Run only this strategy (repeatable).
    #[arg(long = "strategy", help = strategy_help())]
    strategies: Vec<String>,
    /// Hits to show per strategy.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// The query text (`-` reads it from stdin).
    query: String,
}

pub fn run(args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let mut config = crate::load_config(args.config.as_deref(), None)?.context;
    args.model.apply(&mut config)?;
    let retriever = Retriever::open(&args.index, &config, &StrategyRegistry::new(), None)?;
    let known: Vec<&str> = retriever.strategies().iter().map(|s| s.name()).collect();
    if let Some(unknown) = args
        .strategies
        .iter()
        .find(|s| !known.contains(&s.as_str()))
    {
        // A typo must not look like "no hits".
        return Err(crate::failure::Failure::usage(
            format!("unknown strategy `{unknown}` for --strategy"),
            format!("the configured strategies are {}", known.join(", ")),
        )
        .into());
    }
    for note in retriever.notes() {
        eprintln!("{note}");
    }
    let query = Query::new(crate::read_task(&args.query)?);
    let execution = retriever.retrieve(&query, &args.strategies, &HashMap::new(), 8_000);
    let corpus = retriever.corpus();
    let mut by_strategy: Vec<(acms::core::StrategyId, Vec<&acms::Hit>)> = Vec::new();
    for run in &execution.runs {
        let mut hits: Vec<&acms::Hit> = execution
            .hits
            .iter()
            .filter(|h| h.strategy == run.strategy)
            .collect();
        hits.sort_by(|a, b| {
            b.relevance
                .total_cmp(&a.relevance)
                .then(a.node.cmp(&b.node))
        });
        hits.truncate(args.limit);
        by_strategy.push((run.strategy.clone(), hits));
    }
    let rendered = match args.format {
        Format::Json => {
            let out: Vec<serde_json::Value> = by_strategy
                .iter()
                .map(|(name, hits)| {
                    let run = execution.runs.iter().find(|r| &r.strategy == name);
                    serde_json::json!({
                        "strategy": name,
                        "run": run,
                        "hits": hits.iter().map(|h| {
                            let n = corpus.node(h.node);
                            serde_json::json!({
                                "node": h.node,
                                "path": n.map(|n| n.path.as_str()),
                                "start_line": n.map(|n| n.start_line),
                                "end_line": n.map(|n| n.end_line),
                                "name": n.map(|n| n.qualified_name.as_str()),
                                "relevance": h.relevance,
                                "reason": h.reason,
                            })
                        }).collect::<Vec<_>>(),
                    })
                })
                .collect();
            format!("{}\n", serde_json::to_string_pretty(&out)?)
        }
        Format::Text => {
            use std::fmt::Write;
            let mut text = String::new();
            for (name, hits) in &by_strategy {
                let run = execution.runs.iter().find(|r| &r.strategy == name);
                writeln!(text, "== {name} ({:?})", run.map(|r| &r.status))?;
                for h in hits {
                    if let Some(n) = corpus.node(h.node) {
                        writeln!(
                            text,
                            "{:.3}  {}:{}-{}  {}  {}",
                            h.relevance,
                            n.path,
                            n.start_line,
                            n.end_line,
                            n.qualified_name,
                            serde_json::to_string(&h.reason)?
                        )?;
                    }
                }
            }
            text
        }
    };
    // A store read that failed on the way found nothing: no partial answer passed off as whole.
    if let Some(e) = corpus.take_failure() {
        return Err(e.into());
    }
    crate::out(&rendered)?;
    Ok(ExitCode::SUCCESS)
}

/// `--strategy`'s help, from the one table of strategy names.
fn strategy_help() -> String {
    let names: Vec<&str> = acms::core::StrategyId::BUILT_IN
        .iter()
        .map(|s| s.as_str())
        .collect();
    format!(
        "Run only this strategy (repeatable): {}, or a custom one's name",
        names.join(", ")
    )
}
