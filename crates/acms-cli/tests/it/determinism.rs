//! Equal inputs give equal outputs, across processes: each process seeds its hash maps
//! differently and runs the strategies on threads that finish in any order, so comparing two
//! processes' bytes catches any of that reaching the output.

use crate::{fixture, run};

#[test]
fn the_same_query_in_two_processes_gives_the_same_bytes() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let indexed = run(&["index", root]);
    assert!(
        indexed.status.success(),
        "{}",
        String::from_utf8_lossy(&indexed.stderr)
    );
    let index = format!("{root}/.acms");
    let query = |budget: &str| {
        let out = run(&[
            "query",
            "--index",
            &index,
            "--budget",
            budget,
            "--format",
            "json",
            "compute the cart total with discount and sales tax, see `apply_discount`",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // Timings are measurements, not output.
        v["diagnostics"] = serde_json::Value::Null;
        serde_json::to_vec(&v).unwrap()
    };
    for budget in ["600", "3000"] {
        let first = query(budget);
        for _ in 0..3 {
            assert!(first == query(budget), "budget {budget}: outputs differ");
        }
    }
}
