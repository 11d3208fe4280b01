//! End-to-end tests of the `acms` binary: exit codes, output formats, and an index run
//! killed mid-way.

mod cli;
mod compact;
mod determinism;
mod hostile;
mod kill;
mod recovery;

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
