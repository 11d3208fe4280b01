//! What the load-time check of ONNX Runtime costs: the stamped check (a `stat` and a small
//! read when nothing changed) against hashing the library, as every process start would
//! without the stamp.
//!
//! `cargo run --release -p acms-model --example runtime_check [LIB]` (default: the user
//! cache's pinned library).

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lib = match std::env::args_os().nth(1) {
        Some(p) => std::path::PathBuf::from(p),
        None => acms_model::runtime_dir()
            .ok_or("no user cache")?
            .join(acms_model::RUNTIME.name),
    };
    acms_model::check_runtime(&lib)?; // leaves the stamp
    let runs = 20;
    let t = Instant::now();
    for _ in 0..runs {
        acms_model::check_runtime(&lib)?;
    }
    let stamped = t.elapsed().as_secs_f64() / f64::from(runs);
    let t = Instant::now();
    for _ in 0..runs {
        let d = acms_model::digest::sha256_file(&lib)?;
        assert_eq!(d, acms_model::RUNTIME.sha256);
    }
    let hashed = t.elapsed().as_secs_f64() / f64::from(runs);
    println!(
        "{}: stamped check {:.1} µs, full sha256 {:.1} ms ({:.0}x)",
        lib.display(),
        stamped * 1e6,
        hashed * 1e3,
        hashed / stamped
    );
    Ok(())
}
