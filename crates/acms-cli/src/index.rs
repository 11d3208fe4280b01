//! `acms index`: build or update the knowledge index of a repository.

use std::path::PathBuf;
use std::process::ExitCode;

use acms::index::{IndexOptions, IndexReport, index_repo};
use indicatif::{ProgressBar, ProgressStyle};

use crate::Format;

#[derive(clap::Args)]
pub struct IndexArgs {
    /// The repository to index.
    repo: PathBuf,
    /// Index directory (default: <REPO>/.acms).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Configuration file (default: <REPO>/acms.toml when present).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Discard the existing index and build it from scratch.
    #[arg(long)]
    rebuild: bool,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(args: &IndexArgs) -> anyhow::Result<ExitCode> {
    if !args.repo.is_dir() {
        anyhow::bail!(
            "repository {} does not exist or is not a directory",
            args.repo.display()
        );
    }
    let config = crate::load_config(args.config.as_deref(), Some(&args.repo))?;
    let bar = crate::interactive().then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{spinner} indexing {pos}/{len} files {wide_bar} {eta}")
                .expect("static template"),
        );
        bar
    });
    let progress = |done: usize, total: usize| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    };
    let mut opts = IndexOptions::new(&args.repo);
    opts.index_dir = crate::index_dir(args.index.as_ref(), &args.repo);
    opts.config = config.context;
    opts.rebuild = args.rebuild;
    opts.progress = Some(&progress);
    let report = index_repo(&args.repo, &opts)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Text => print_text(&report, &opts.index_dir),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(r: &IndexReport, index_dir: &std::path::Path) {
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    let langs: Vec<String> = r
        .languages
        .iter()
        .map(|(l, n)| format!("{l} {n}"))
        .collect();
    println!(
        "indexed {} files ({} parsed, {} unchanged, {} removed) into {}",
        r.files,
        r.parsed,
        r.unchanged,
        r.removed,
        index_dir.display()
    );
    println!(
        "{} nodes, {} edges, {} warnings, {:.2} s; languages: {}",
        r.nodes,
        r.edges,
        r.warnings.len(),
        r.seconds,
        langs.join(", ")
    );
}
