//! The `acms` binary: argument parsing and output formats only. A command is one call on the
//! `acms` library API, except `mcp` and `proxy`, which run those crates' servers, and
//! `compact --llm-summary`, which builds an `acms_llm::HttpClient` for the summarizer.
//!
//! Exit codes: 0 success; 1 an error (message on stderr says what to do); 2 bad usage.
//! An error prints as one line, each cause once. A closed stdout (`acms … | head`) ends the
//! command quietly with 0: the work is done, only its report had no reader.

mod artifact;
mod compact;
mod failure;
mod index;
mod mcp;
mod model;
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
    /// The embedding models: list, fetch (pinned by URL and sha256), verify.
    Model(model::ModelArgs),
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
        (None, Some(repo)) => acms::Config::for_repo_with_warnings(repo)?,
        _ => acms::Config::for_user(config)?,
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

/// The index directory: `--index DIR`, else `<repo>/.acms` — unless that holds an index acms
/// did not write for this user (one shipped with a clone), which is left alone for a folder in
/// the user's cache; that is said on stderr, first.
pub fn index_dir(index: Option<&PathBuf>, repo: &Path) -> anyhow::Result<PathBuf> {
    if let Some(dir) = index {
        return Ok(dir.clone());
    }
    let (dir, note) = acms::index::default_index_dir(repo)?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    Ok(dir)
}

/// Exit code of a usage error (as clap's own).
pub const EXIT_USAGE: u8 = 2;

/// Writes `text` to stdout. A closed stdout is an `io::Error` of kind `BrokenPipe` that
/// `main` turns into a quiet exit, where `print!` would panic.
pub fn out(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// True when the error is (caused by) writing to a closed pipe.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes on one line, each said once: library errors often repeat their
/// source in their own message, which the chain would print a second time.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line.replace('\n', " ")
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().collect();
    let json = failure::wants_json(&raw);
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(err) => return failure::report_usage(&err, json),
    };
    if matches!(
        cli.command,
        Command::Query(_) | Command::Search(_) | Command::Plan(_)
    ) {
        // One-shot: the model starts while the index opens and the repository is walked;
        // every command drops its engine before `main` returns, which waits for the start.
        acms::start_models_in_background();
    }
    let result = match &cli.command {
        Command::Index(args) => index::run(args),
        Command::Query(args) => query::run(args),
        Command::Search(args) => search::run(args),
        Command::Compact(args) => compact::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Artifact(args) => artifact::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Mcp(args) => mcp::run(args),
        Command::Model(args) => model::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => failure::report(&err, json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_printed_once() {
        let io = std::io::Error::other("no such table: meta");
        let err =
            anyhow::Error::new(io).context("index store /x/index.sqlite: no such table: meta");
        assert_eq!(
            one_line(&err),
            "index store /x/index.sqlite: no such table: meta"
        );
        let err = anyhow::Error::new(std::io::Error::other("denied")).context("cannot open /y");
        assert_eq!(one_line(&err), "cannot open /y: denied");
    }

    #[test]
    fn a_broken_pipe_is_recognized_through_context() {
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(is_broken_pipe(
            &anyhow::Error::new(io).context("writing the report")
        ));
        assert!(!is_broken_pipe(&anyhow::anyhow!("other")));
    }
}
