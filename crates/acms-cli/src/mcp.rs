//! `acms mcp`: the Model Context Protocol server over stdio (see `acms-mcp`). Stdout carries
//! protocol messages only; the exit code is 0 when the client closes stdin.

use std::process::ExitCode;

use crate::plan::WorkspaceArgs;

#[derive(clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    workspace: WorkspaceArgs,
}

pub fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    // What is cheap to check fails the start; opening (or first indexing) the repository runs
    // while `initialize` is answered, so a large repository does not keep the host waiting.
    // Indexing may print progress but must not touch stdout.
    args.workspace.check()?;
    let workspace = args.workspace.clone();
    acms_mcp::serve_stdio_opening(Box::new(move || {
        workspace.open().map_err(|e| format!("{e:#}"))
    }))?;
    Ok(ExitCode::SUCCESS)
}
