//! `acms mcp`: the Model Context Protocol server over stdio (see `acms-mcp`). Stdout carries
//! protocol messages only; the exit code is 0 when the client closes stdin.
//!
//! `acms mcp --print-config` prints the `mcpServers` entry a host needs to start this very
//! binary on this repository, with absolute paths: hosts start servers without the user's
//! shell (no `PATH` from its profile, no `~` or `$HOME`), so a bare `acms` is not found.

use std::process::ExitCode;

use anyhow::Context as _;

use crate::plan::WorkspaceArgs;

#[derive(clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    workspace: WorkspaceArgs,
    /// Print the host configuration (`mcpServers` JSON) that starts this binary on this
    /// repository, with absolute paths, and exit.
    #[arg(long)]
    print_config: bool,
}

pub fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    // What is cheap to check fails the start; opening (or first indexing) the repository runs
    // while `initialize` is answered, so a large repository does not keep the host waiting.
    // The server reports indexing progress over the protocol; nothing else touches stdout.
    args.workspace.check()?;
    let ws = &args.workspace;
    if args.print_config {
        crate::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&host_config(ws)?)?
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let config = crate::load_config(ws.config.as_deref(), Some(&ws.repo))?.context;
    acms_mcp::serve_stdio_opening(acms_mcp::OpenSpec {
        repo: ws.repo.clone(),
        index_dir: ws.index.clone(),
        config,
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A host's configuration with one server: `command` before `args`, as hosts write it.
#[derive(serde::Serialize)]
struct HostConfig {
    #[serde(rename = "mcpServers")]
    mcp_servers: std::collections::BTreeMap<&'static str, Server>,
}

#[derive(serde::Serialize)]
struct Server {
    command: String,
    args: Vec<String>,
}

/// The `mcpServers` entry that starts this binary with these arguments, every path absolute.
fn host_config(ws: &WorkspaceArgs) -> anyhow::Result<HostConfig> {
    let exe = std::env::current_exe().context("cannot tell where this acms binary is")?;
    let absolute = |p: &std::path::Path| -> anyhow::Result<String> {
        let p = std::path::absolute(p)
            .with_context(|| format!("cannot make {} absolute", p.display()))?;
        let p = p.canonicalize().unwrap_or(p);
        p.to_str()
            .map(str::to_string)
            .with_context(|| format!("{} is not valid UTF-8: JSON cannot hold it", p.display()))
    };
    let mut args = vec!["mcp".to_string(), "--repo".into(), absolute(&ws.repo)?];
    if let Some(index) = &ws.index {
        args.extend(["--index".into(), absolute(index)?]);
    }
    if let Some(config) = &ws.config {
        args.extend(["--config".into(), absolute(config)?]);
    }
    let server = Server {
        command: absolute(&exe)?,
        args,
    };
    Ok(HostConfig {
        mcp_servers: [("acms", server)].into(),
    })
}
