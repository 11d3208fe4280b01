//! `acms query`: the assembled context for a task within a token budget.

use std::path::PathBuf;
use std::process::ExitCode;

use acms::{BudgetSpec, Query, Tokenizer, Workspace, WorkspaceOptions};

use crate::Format;

#[derive(clap::Args)]
pub struct QueryArgs {
    /// Index directory (as written by `acms index`).
    #[arg(long)]
    index: PathBuf,
    /// Token budget of the assembled context (preamble and headers included).
    #[arg(long)]
    budget: usize,
    /// Tokenizer the budget is counted with (default: the configuration's, cl100k).
    #[arg(long, value_parser = parse_tokenizer)]
    tokenizer: Option<Tokenizer>,
    /// Configuration file.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    model: crate::index::ModelArgs,
    /// A file the task mentions (repeatable).
    #[arg(long = "file")]
    files: Vec<String>,
    /// A symbol the task mentions (repeatable).
    #[arg(long = "symbol")]
    symbols: Vec<String>,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// The task (`-` reads it from stdin).
    task: String,
}

fn parse_tokenizer(s: &str) -> Result<Tokenizer, String> {
    s.parse().map_err(|e: acms::core::Error| e.to_string())
}

pub fn run(args: &QueryArgs) -> anyhow::Result<ExitCode> {
    let mut config = crate::load_config(args.config.as_deref(), None)?.context;
    args.model.apply(&mut config)?;
    if let Some(t) = args.tokenizer {
        config.tokenizer = t;
    }
    // Through the workspace, so files changed since the last index run are re-indexed first.
    let mut ws = crate::plan::lib(Workspace::open_index(
        &args.index,
        WorkspaceOptions {
            config: Some(config),
            ..WorkspaceOptions::default()
        },
    ))?;
    let query = Query {
        text: crate::read_task(&args.task)?,
        mentioned_files: args.files.clone(),
        mentioned_symbols: args.symbols.clone(),
        previous: Vec::new(),
    };
    let ctx = crate::plan::lib(ws.context(query, BudgetSpec::tokens(args.budget)))?.context;
    match args.format {
        Format::Json => {
            let out = serde_json::json!({
                "context": ctx.text,
                "tokens": ctx.tokens,
                "budget": ctx.budget,
                "tokenizer": ctx.tokenizer,
                "manifest": ctx.manifest,
                "dropped": ctx.dropped.len(),
                "skeleton": ctx.skeleton,
                "diagnostics": ctx.diagnostics,
            });
            crate::out(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
        }
        Format::Text => {
            for note in &ctx.diagnostics.notes {
                eprintln!("note: {note}");
            }
            crate::out(&ctx.text)?;
            eprintln!(
                "[{} tokens of {} ({}), {} fragments, {:.1} ms]",
                ctx.tokens,
                ctx.budget,
                ctx.tokenizer,
                ctx.manifest.len(),
                ctx.diagnostics.millis
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
