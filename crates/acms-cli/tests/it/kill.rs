//! An index run killed at any point leaves the previous index readable.

use acms_index::Store;

use crate::{acms, run};

/// Files in the generated repository: enough for a run to take a while in a debug build.
const FILES: usize = 250;

#[test]
fn killing_an_index_run_leaves_the_previous_index_readable() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let write_all = |generation: usize| {
        for i in 0..FILES {
            let p = repo.join(format!("pkg{}/mod{i}.py", i % 20));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let body: String = (0..generation + 3)
                .map(|k| {
                    format!("def f{i}_{k}(x):\n    \"\"\"Doc {k}.\"\"\"\n    return x + {k}\n\n")
                })
                .collect();
            std::fs::write(p, body).unwrap();
        }
    };
    write_all(0);
    let root = repo.to_str().unwrap();
    let started = std::time::Instant::now();
    assert!(run(&["index", root, "--no-vectors"]).status.success());
    // A full run of changed files takes about as long as the first one: kill at fractions of
    // it, so some kills land during analysis and some during the store transaction.
    let full = started.elapsed();
    let index = repo.join(".acms");
    let mut previous = Store::open(&index).unwrap().nodes().unwrap().len();
    assert_eq!(previous, FILES * 4);

    // Change every file, then kill runs at increasing delays; whatever the moment, the index
    // opens and holds either the old or the new complete state.
    for (round, fraction) in [0.3, 0.7, 0.9, 0.97].into_iter().enumerate() {
        write_all(round + 1);
        let mut child = acms()
            .args(["index", root, "--no-vectors"])
            .spawn()
            .unwrap();
        std::thread::sleep(full.mul_f64(fraction));
        let _ = child.kill();
        let _ = child.wait();
        let store = Store::open(&index).expect("index readable after kill");
        let nodes = store.nodes().expect("nodes readable").len();
        let per_file_now = round + 1 + 3;
        let complete_new = FILES * (per_file_now + 1); // functions + module node
        assert!(
            nodes == previous || nodes == complete_new,
            "round {round}: {nodes} nodes is neither the previous ({previous}) nor the new state"
        );
        // Finish the run so the next round starts from a known state.
        let out = run(&["index", root, "--no-vectors"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let done = Store::open(&index).unwrap().nodes().unwrap().len();
        assert_eq!(done, complete_new);
        previous = done;
    }
}
