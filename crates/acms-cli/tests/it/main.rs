//! End-to-end tests of the `acms` binary: exit codes, output formats, and an index run
//! killed mid-way.

mod artifact;
mod cli;
mod compact;
mod determinism;
mod hostile;
mod kill;
mod mcp;
mod mcp_frames;
mod model;
mod plan;
mod proxy;
mod recovery;
mod trust;
mod untrusted_artifacts;
mod vocabulary;

use std::process::{Command, Output};

/// The binary, isolated from the developer's own acms configuration and model variables (the
/// user model cache stays: tests that need another cache set `XDG_CACHE_HOME` themselves).
/// It never fetches a model (`ACMS_MODEL_FETCH=0`): a test with an empty cache stays off the
/// network, and the one test of fetching serves the wheels itself.
pub fn acms() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_acms"));
    c.env("XDG_CONFIG_HOME", config_home())
        .env("ACMS_MODEL_FETCH", "0")
        .env_remove("ACMS_MODEL_MIRROR")
        .env_remove("ACMS_MODEL_DIR")
        .env_remove("ORT_DYLIB_PATH");
    c
}

/// The configuration directory the binary runs with: no `config.toml`, but this test process's
/// index key, so an index the binary seals is one the tests may open with the library too.
pub fn config_home() -> std::path::PathBuf {
    static KEY: std::sync::Once = std::sync::Once::new();
    let home =
        std::env::temp_dir().join(format!("acms-cli-tests-no-config-{}", std::process::id()));
    KEY.call_once(|| {
        let key: String = acms_index::seal::user_key()
            .expect("the test process's index key")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = home.join("acms");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(acms_index::seal::KEY_FILE), format!("{key}\n")).unwrap();
    });
    home
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

/// Garbles the root page of `table` in the store at `db` from byte 64 through its end (a
/// page's cells fill it from the end), as a disk error would: a page every check reads,
/// wherever the store's layout puts it.
pub fn garble_table_page(db: &std::path::Path, table: &str) {
    let root: i64 = rusqlite::Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = ?1",
            [table],
            |r| r.get(0),
        )
        .unwrap();
    let page = 4096;
    let start = (root as usize - 1) * page;
    let mut bytes = std::fs::read(db).unwrap();
    assert!(bytes.len() >= start + page, "{} bytes", bytes.len());
    for b in &mut bytes[start + 64..start + page] {
        *b = 0xa5;
    }
    std::fs::write(db, &bytes).unwrap();
}
