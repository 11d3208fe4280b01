//! One real-issue task's assembly, fragment by fragment, for finding where its gold is lost:
//! `cargo run --release -p acms-eval --example manifest -- SET_FILE TASK_ID BUDGET`, after
//! `acms-eval issues --no-model` has exported and indexed the task's tree under
//! `.cache/acms-eval` (keyword + graph, as that run measures it). Environment:
//! `ACMS_MANIFEST_TEXT=FILE` writes the assembled text to FILE, `ACMS_MANIFEST_PATH=PART` lists
//! every dropped node of the files whose path contains PART, `ACMS_MANIFEST_PACKER=NAME` packs
//! with another packer, `ACMS_MANIFEST_MODEL=DIR` assembles with the embedding model in DIR
//! on the indexes `acms-eval issues --model` built with it.

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [set, id, budget] = args.as_slice() else {
        anyhow::bail!("usage: manifest SET_FILE TASK_ID BUDGET");
    };
    let budget: usize = budget.parse()?;
    let tasks = acms_eval::realtasks::load(std::path::Path::new(set))?;
    let task = tasks
        .iter()
        .find(|t| &t.instance_id == id)
        .ok_or_else(|| anyhow::anyhow!("no task {id} in {set}"))?;
    let work = std::path::Path::new(".cache/acms-eval");
    let slug = task.repo.replace('/', "+");
    let tree = work.join("trees").join(&slug).join(&task.base_commit);
    let model = std::env::var_os("ACMS_MANIFEST_MODEL").map(std::path::PathBuf::from);
    let mut config = acms_eval::issues::base_config(model.as_deref());
    let index = acms_eval::issues::index_root(work, model.as_deref(), &config)
        .join(&slug)
        .join(&task.base_commit);
    let gold = acms_eval::realtasks::resolve_gold(task, &tree);
    if let Ok(p) = std::env::var("ACMS_MANIFEST_PACKER") {
        config.pipeline.budget_packer = p.into();
    }
    let engine = acms::Engine::open(&index, &config)?;
    let ctx = engine.assemble(&acms::AssemblyRequest {
        query: acms::Query::new(task.problem_statement.as_str()),
        budget: acms::Budget::Tokens(budget),
        parent: None,
    })?;
    let gold_lines: Vec<(&str, u32)> = gold
        .symbols
        .iter()
        .map(|s| (s.path.as_str(), s.start_line))
        .collect();
    let corpus = engine.retriever().corpus();
    let is_gold = |path: &str, line: u32| gold_lines.contains(&(path, line));
    let mut entries: Vec<&acms::ManifestEntry> = ctx.manifest.iter().collect();
    entries.sort_by(|a, b| b.score.total_cmp(&a.score));
    for e in entries {
        let mark = if is_gold(&e.path, e.start_line) {
            "GOLD"
        } else {
            ""
        };
        println!(
            "{:.3} d{} {:>5}t {}:{} {} {:?} {mark}",
            e.score, e.depth, e.tokens, e.path, e.start_line, e.name, e.reasons
        );
    }
    let watched = std::env::var("ACMS_MANIFEST_PATH").ok();
    for d in &ctx.dropped {
        let Some(n) = corpus.node(d.node) else {
            continue;
        };
        if watched.as_deref().is_some_and(|w| n.path.contains(w)) {
            println!(
                "dropped {:.3} {}:{} {:?}",
                d.score, n.path, n.qualified_name, d.reason
            );
        }
        if is_gold(&n.path, n.start_line) {
            let tokens: Vec<u32> = acms::Depth::FALLBACK
                .iter()
                .map(|&depth| n.tokens_at(depth))
                .collect();
            println!(
                "dropped GOLD {:.3} {}:{} {:?} tokens at 9/4/2/0: {tokens:?}",
                d.score, n.path, n.qualified_name, d.reason
            );
        }
    }
    if let Ok(path) = std::env::var("ACMS_MANIFEST_TEXT") {
        std::fs::write(&path, &ctx.text)?;
    }
    println!(
        "gold: {:?}",
        gold.symbols.iter().map(|s| &s.spec).collect::<Vec<_>>()
    );
    Ok(())
}
