//! `acms index`: build or update the knowledge index of a repository.

use std::path::PathBuf;
use std::process::ExitCode;

use acms::RepositoryIndex;
use acms::index::IndexOptions;
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
    /// Skip embeddings (the semantic strategy then reports itself unavailable).
    #[arg(long)]
    no_vectors: bool,
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
    let report = acms::index_repository(&args.repo, &opts, !args.no_vectors)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    match args.format {
        Format::Json => crate::out(&format!("{}\n", serde_json::to_string_pretty(&report)?))?,
        Format::Text => crate::out(&text_report(&report, &opts.index_dir))?,
    }
    Ok(ExitCode::SUCCESS)
}

fn text_report(report: &RepositoryIndex, index_dir: &std::path::Path) -> String {
    use std::fmt::Write;
    let r = &report.index;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    let mut out = String::new();
    let langs: Vec<String> = r
        .languages
        .iter()
        .map(|(l, n)| format!("{l} {n}"))
        .collect();
    let _ = writeln!(
        out,
        "indexed {} files ({} parsed, {} unchanged, {} removed) into {}",
        r.files,
        r.parsed,
        r.unchanged,
        r.removed,
        index_dir.display()
    );
    let _ = writeln!(
        out,
        "{} nodes, {} edges, {} warnings, {:.2} s; languages: {}",
        r.nodes,
        r.edges,
        r.warnings.len(),
        r.seconds,
        langs.join(", ")
    );
    let d = &report.derived;
    let _ = writeln!(
        out,
        "keyword index: {} documents written{}",
        d.keyword_docs,
        if d.keyword_rebuilt { " (rebuilt)" } else { "" }
    );
    if let Some(line) = &report.embedder {
        let _ = writeln!(
            out,
            "vectors: {} embedded, {} total ({:.2} s); {line}",
            d.embedded,
            d.vectors.unwrap_or(0),
            d.embed_seconds
        );
    }
    out
}
