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
    // The server reports indexing progress over the protocol; nothing else touches stdout.
    args.workspace.check()?;
    let ws = &args.workspace;
    let config = crate::load_config(ws.config.as_deref(), Some(&ws.repo))?.context;
    acms_mcp::serve_stdio_opening(acms_mcp::OpenSpec {
        repo: ws.repo.clone(),
        index_dir: ws.index.clone(),
        config,
    })?;
    Ok(ExitCode::SUCCESS)
}
