//! End-to-end tests of the `acms` binary: exit codes, output formats, and an index run
//! killed mid-way.

mod artifact;
mod cli;
mod compact;
mod determinism;
mod kill;
mod mcp;
mod plan;
mod proxy;

use std::process::{Command, Output};

pub fn acms() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acms"))
}

pub fn run(args: &[&str]) -> Output {
    acms().args(args).output().expect("run acms")
}

pub fn fixture() -> tempfile::TempDir {
    acms_testkit::shop()
}

/// Runs `acms` and parses its stdout as JSON, failing with its stderr otherwise.
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "acms {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "acms {args:?}: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
