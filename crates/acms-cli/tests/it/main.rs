//! End-to-end tests of the `acms` binary: exit codes, output formats, and an index run
//! killed mid-way.

mod cli;
mod kill;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn acms() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acms"))
}

pub fn run(args: &[&str]) -> Output {
    acms().args(args).output().expect("run acms")
}

pub fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/shop");
    copy_dir(&src, dir.path());
    dir
}

pub fn copy_dir(src: &Path, dst: &Path) {
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).unwrap();
        }
    }
}
