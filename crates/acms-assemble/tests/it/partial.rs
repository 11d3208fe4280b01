//! `context.file.max-total-size` counts only what is indexed, and an index it cut short says
//! so: in the run's report and in the notes of every context assembled from it.

use acms_core::ContextConfig;

use crate::assemble;

fn module(i: usize) -> String {
    let mut s = format!("\"\"\"Module {i}.\"\"\"\n\n");
    for f in 0..12 {
        s.push_str(&format!(
            "def handler_{i}_{f}(request):\n    \"\"\"Handle request {f}.\"\"\"\n    return request.reply({f})\n\n"
        ));
    }
    s
}

fn write(dir: &std::path::Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn index_with_cap(dir: &std::path::Path, cap: u64) -> acms_index::IndexReport {
    let mut opts = acms_index::IndexOptions::new(dir);
    opts.config.file.max_total_size = cap;
    acms_index::index_repo(dir, &opts).unwrap()
}

#[test]
fn files_acms_does_not_index_cost_nothing_against_the_total_cap() {
    let dir = tempfile::tempdir().unwrap();
    let size = module(0).len() as u64;
    // Walked first, far over the cap, and not indexed (binary, and a lock file).
    std::fs::write(dir.path().join("a_blob.bin"), vec![0u8; 200_000]).unwrap();
    write(dir.path(), "a_deps.lock", &"x = 1\n".repeat(30_000));
    for i in 0..3 {
        write(dir.path(), &format!("pkg/m{i}.py"), &module(i));
    }
    let report = index_with_cap(dir.path(), 3 * size + 10);
    assert_eq!(report.left_out, None, "{:?}", report.warnings);
    assert_eq!(report.languages.get("python"), Some(&3));
}

#[test]
fn a_partial_index_says_so_in_its_report_and_in_every_context() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        write(dir.path(), &format!("pkg/m{i}.py"), &module(i));
    }
    let size = module(0).len() as u64;
    let report = index_with_cap(dir.path(), 2 * size + 10);
    let left_out = report.left_out.clone().expect("the cap left files out");
    assert_eq!(left_out.files, 3);
    assert_eq!(left_out.bytes, 3 * size);
    assert!(left_out.to_string().contains("context.file.max-total-size"));

    let config = ContextConfig::default();
    acms_retrieve::update_derived(&dir.path().join(".acms"), &report.changes, &config, None)
        .unwrap();
    let mut config = config;
    config
        .strategies
        .enabled
        .retain(|s| s != "semantic-embedding");
    let engine = acms_assemble::Engine::open(&dir.path().join(".acms"), &config).unwrap();
    let ctx = assemble(&engine, "handler_0_3 replies with the wrong value", 2_000);
    assert!(
        ctx.diagnostics
            .notes
            .iter()
            .any(|n| n.starts_with("partial index: 3 indexable files")),
        "{:?}",
        ctx.diagnostics.notes
    );

    // Raised, the same index holds everything and the note is gone.
    let report = index_with_cap(dir.path(), 512 << 20);
    assert_eq!(report.left_out, None);
    assert_eq!(report.languages.get("python"), Some(&5));
    let engine = acms_assemble::Engine::open(&dir.path().join(".acms"), &config).unwrap();
    let ctx = assemble(&engine, "handler_4_3 replies with the wrong value", 2_000);
    assert!(
        !ctx.diagnostics
            .notes
            .iter()
            .any(|n| n.contains("partial index")),
        "{:?}",
        ctx.diagnostics.notes
    );
}
