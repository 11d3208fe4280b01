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
    // Indexing a repository the first time may print nothing but must not touch stdout.
    let ws = args.workspace.open()?;
    acms_mcp::serve_stdio(ws)?;
    Ok(ExitCode::SUCCESS)
}
