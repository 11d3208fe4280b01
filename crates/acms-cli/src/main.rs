//! The `acms` binary: argument parsing and output formats only. Every command is one call on
//! the `acms` library API.
//!
//! Exit codes: 0 success; 1 an error (message on stderr says what to do); 2 bad usage.

mod artifact;
mod compact;
mod index;
mod mcp;
mod plan;
mod proxy;
mod query;
mod search;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "acms",
    version,
    about = "The right context at the right size for LLM agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index a repository (incremental: only changed files are re-parsed).
    Index(index::IndexArgs),
    /// Assemble the context for a task within a token budget.
    Query(query::QueryArgs),
    /// Show the raw hits of the retrieval strategies for a query.
    Search(search::SearchArgs),
    /// Compact a conversation (OpenAI/Anthropic JSON) to fit a context limit.
    Compact(compact::CompactArgs),
    /// Serve an OpenAI-compatible proxy that bounds every request before forwarding it.
    Proxy(proxy::ProxyArgs),
    /// Read or verify a stored artifact (`get` / `verify DIGEST`).
    Artifact(artifact::ArtifactArgs),
    /// Plans with phases, child plans and decision memory.
    Plan(plan::PlanArgs),
    /// Serve acms to agent hosts over the Model Context Protocol (stdio).
    Mcp(mcp::McpArgs),
}

/// Output format shared by the commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Human-readable text.
    #[default]
    Text,
    /// One JSON document for machines.
    Json,
}

/// The configuration: `--config FILE` (trusted, every key), else the user's
/// `~/.config/acms/config.toml` overridden by `<repo>/acms.toml` (which may not choose the
/// model or the LLM endpoint, nor raise limits: such keys are ignored with a warning).
pub fn load_config(config: Option<&Path>, repo: Option<&Path>) -> anyhow::Result<acms::Config> {
    let loaded = match (config, repo) {
        (Some(path), _) => acms::Config::load(Some(path), None)?,
        (None, Some(repo)) => acms::Config::for_repo_with_warnings(repo)?,
        (None, None) => {
            let user = acms::core::user_config_path().filter(|p| p.is_file());
            acms::Config::load(user.as_deref(), None)?
        }
    };
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    Ok(loaded.config)
}

/// The task text: the argument itself, or stdin when it is `-`.
pub fn read_task(arg: &str) -> anyhow::Result<String> {
    if arg == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        Ok(s)
    } else {
        Ok(arg.to_string())
    }
}

/// Whether progress bars should be drawn.
pub fn interactive() -> bool {
    std::io::stderr().is_terminal()
}

/// The index directory: `--index DIR`, else `<repo>/.acms`.
pub fn index_dir(index: Option<&PathBuf>, repo: &Path) -> PathBuf {
    index.cloned().unwrap_or_else(|| repo.join(".acms"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Index(args) => index::run(args),
        Command::Query(args) => query::run(args),
        Command::Search(args) => search::run(args),
        Command::Compact(args) => compact::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Artifact(args) => artifact::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Mcp(args) => mcp::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}
