//! `acms index`: build or update the knowledge index of a repository, and the model flags
//! every command that embeds (index, query, search) shares.

use std::path::PathBuf;
use std::process::ExitCode;

use acms::index::IndexOptions;
use acms::{ContextConfig, EmbeddingOptions, RepositoryIndex};
use indicatif::{ProgressBar, ProgressStyle};

use crate::Format;

#[derive(clap::Args)]
pub struct IndexArgs {
    /// The repository to index.
    repo: PathBuf,
    /// Index directory (default: <REPO>/.acms, or a folder of your cache when <REPO>/.acms
    /// holds an index acms did not write for you).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Configuration file (default: ~/.config/acms/config.toml, then <REPO>/acms.toml, which
    /// may not choose the model or raise limits).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Discard the existing index and build it from scratch.
    #[arg(long)]
    rebuild: bool,
    /// Skip embeddings (the semantic strategy then reports itself unavailable).
    #[arg(long)]
    no_vectors: bool,
    #[command(flatten)]
    model: ModelArgs,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// Which embedder to use; each flag overrides the configuration. Queries must use the same
/// embedder as the index they read.
#[derive(clap::Args, Default)]
pub struct ModelArgs {
    /// Embedding model directory (default: the user's model cache, ~/.cache/acms/models/NAME,
    /// filled by `acms model fetch` or on first use).
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Model name in the user's model cache (see `acms model list`).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// `model` (a local ONNX model) or `hash` (the built-in lexical embedder, for tests).
    #[arg(long, value_name = "KIND", value_parser = ["model", "hash"])]
    embedder: Option<String>,
}

impl ModelArgs {
    /// Writes the flags given into `config` (a relative `--model-dir` is relative to the
    /// current directory, as the user typed it).
    pub fn apply(&self, config: &mut ContextConfig) -> anyhow::Result<()> {
        let s = &mut config.strategies.semantic_embedding;
        if let Some(dir) = &self.model_dir {
            s.model_dir = Some(std::path::absolute(dir)?.to_string_lossy().into_owned());
        }
        if let Some(name) = &self.model {
            if !acms::core::valid_model_name(name) {
                anyhow::bail!("--model {name}: not a model name (see `acms model list`)");
            }
            s.model = name.clone();
        }
        match self.embedder.as_deref() {
            Some("hash") => s.embedder = acms::core::EmbedderKind::Hash,
            Some(_) => s.embedder = acms::core::EmbedderKind::Model,
            None => {}
        }
        Ok(())
    }
}

pub fn run(args: &IndexArgs) -> anyhow::Result<ExitCode> {
    if !args.repo.is_dir() {
        anyhow::bail!(
            "repository {} does not exist or is not a directory",
            args.repo.display()
        );
    }
    let mut config = crate::load_config(args.config.as_deref(), Some(&args.repo))?;
    args.model.apply(&mut config.context)?;
    let bar = crate::interactive().then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{spinner} indexing {pos}/{len} files {wide_bar} {eta}")
                .expect("static template"),
        );
        bar
    });
    // The bar shows files, then (first use) the model's download, then symbols embedded.
    let downloading = std::sync::atomic::AtomicBool::new(false);
    let embedding_style = || {
        ProgressStyle::with_template(
            "{spinner} embedding {pos}/{len} symbols {wide_bar} {per_sec} ETA {eta} \
             (keyword and graph queries already work)",
        )
        .expect("static template")
    };
    let progress = |done: usize, total: usize| {
        if let Some(bar) = &bar {
            if downloading.swap(false, std::sync::atomic::Ordering::Relaxed) {
                bar.set_style(embedding_style());
                bar.reset_eta();
            }
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    };
    let searchable = || {
        if let Some(bar) = &bar {
            bar.set_style(embedding_style());
            bar.set_position(0);
            bar.set_length(0);
            bar.reset_eta();
        }
    };
    let fetch_progress = |e: acms::model::Event<'_>| {
        let Some(bar) = &bar else { return };
        match e {
            acms::model::Event::Download { file, done, total } => {
                if done == 0 {
                    downloading.store(true, std::sync::atomic::Ordering::Relaxed);
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{spinner} {msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} \
                             ETA {eta}",
                        )
                        .expect("static template"),
                    );
                    bar.set_message(format!("first use: downloading {file}"));
                    bar.set_length(total);
                    bar.reset_eta();
                }
                bar.set_position(done);
            }
            acms::model::Event::Write { path, what } => {
                bar.set_message(format!("first use: {what} {}", path.display()));
            }
            acms::model::Event::Downloaded { .. } => {}
        }
    };
    let mut opts = IndexOptions::new(&args.repo);
    opts.index_dir = crate::index_dir(args.index.as_ref(), &args.repo)?;
    opts.config = config.context;
    opts.rebuild = args.rebuild;
    opts.progress = Some(&progress);
    // First use: a missing model is fetched after the keyword index is committed (queries
    // already work), then embedding goes on.
    let embedding = EmbeddingOptions {
        enabled: !args.no_vectors,
        on_searchable: Some(&searchable),
        progress: Some(&progress),
        embedder: None,
        fetch_model: true,
        fetch_progress: Some(&fetch_progress),
        stop: None,
    };
    let report = acms::index_repository_with(&args.repo, &opts, &embedding)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    match args.format {
        Format::Json => crate::out(&format!("{}\n", serde_json::to_string_pretty(&report)?))?,
        Format::Text => crate::out(&text_report(
            &report,
            &opts.index_dir,
            opts.config.strategies.semantic_embedding.all_places,
        ))?,
    }
    Ok(ExitCode::SUCCESS)
}

fn text_report(report: &RepositoryIndex, index_dir: &std::path::Path, all_places: bool) -> String {
    use std::fmt::Write;
    let r = &report.index;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    let mut out = String::new();
    // First, on both streams: an index that does not hold every file is not to be missed
    // among the warnings.
    if let Some(left_out) = &r.left_out {
        eprintln!("warning: {left_out}");
        let _ = writeln!(out, "{left_out}");
    }
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
    if let Some(fetched) = &report.model_fetched {
        eprintln!("note: {fetched}");
    }
    if let Some(why) = &report.semantic_unavailable {
        eprintln!("note: {why}");
    }
    if let Some(line) = &report.embedder {
        if let Some(note) = &d.vectors_note {
            eprintln!("note: vectors: {note}");
        }
        let rate = if d.embed_seconds > 0.0 {
            format!(", {:.0} symbols/s", d.embedded as f64 / d.embed_seconds)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "vectors: {} embedded, {} total{} ({:.2} s{rate}){}; {line}",
            d.embedded,
            d.vectors.unwrap_or(0),
            if all_places {
                ""
            } else {
                " for source and docs (tests, examples, vendored and generated code: keyword \
                 and graph only, unless all-places = true)"
            },
            d.embed_seconds,
            if d.vectors_complete {
                ""
            } else {
                " — incomplete, the next `acms index` resumes"
            }
        );
    }
    out
}
