//! `acms-eval`: the command line of the evaluation harness (argument parsing, progress, and
//! writing `docs/EVAL.md`). All measuring lives in the library.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "acms-eval",
    about = "Retrieval-quality evaluation of acms against peers"
)]
struct Cli {
    /// The acms checkout (default: the one this binary was built from, else the current dir).
    #[arg(long, global = true)]
    repo: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the evaluation and write the tables into docs/EVAL.md.
    Run {
        /// Corpus names (default: every `eval` corpus of scripts/fetch-corpus.sh).
        #[arg(long = "corpus", value_delimiter = ',', num_args = 1..)]
        corpus: Vec<String>,
        /// Tasks per corpus and set (default: all sampled tasks, at most 150).
        #[arg(long)]
        tasks: Option<usize>,
        #[arg(long, value_delimiter = ',', default_value = "2000,4000,8000")]
        budgets: Vec<usize>,
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        set: Vec<u8>,
        /// Peers: aider, bm25, bm25-first-fit.
        #[arg(long, value_delimiter = ',')]
        peers: Vec<String>,
        /// Also run the ablations (at 4k).
        #[arg(long)]
        ablations: bool,
        /// Use the built-in hashing embedder instead of a model.
        #[arg(long)]
        no_model: bool,
        /// The embedding model (`acms model list`; default: acms' default).
        #[arg(long)]
        model: Option<String>,
        /// The model's token limit per text (default: acms' `max-tokens`).
        #[arg(long)]
        max_tokens: Option<usize>,
        /// Embed tests, examples, vendored and generated code too (acms' `all-places`).
        #[arg(long)]
        all_places: bool,
        /// Also run acms without the semantic strategy on every set and budget.
        #[arg(long)]
        without_semantic: bool,
        /// Markdown file whose generated section is replaced ("-" = stdout only).
        #[arg(long, default_value = "docs/EVAL.md")]
        out: String,
    },
    /// The real-issue benchmark: SWE-bench Lite tasks and mined commits of TypeScript and Rust
    /// projects, against the git repositories under --repos; tables into docs/EVAL.md.
    Issues {
        /// Directory with the tasks' git repositories (`owner+name/repo`, `owner/name`,
        /// `name` or `name.git`; bare clones are fine).
        #[arg(long)]
        repos: PathBuf,
        /// Task sets: swe, hono, axum, or .jsonl files of the same format.
        #[arg(long = "set", value_delimiter = ',', default_value = "swe,hono,axum")]
        sets: Vec<String>,
        /// At most this many tasks per set (spread evenly over the set).
        #[arg(long)]
        tasks: Option<usize>,
        /// Only these task ids.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        #[arg(long, value_delimiter = ',', default_value = "4000,16000,32000")]
        budgets: Vec<usize>,
        /// Peers: aider, bm25, bm25-first-fit.
        #[arg(long, value_delimiter = ',')]
        peers: Vec<String>,
        /// Ablations to run at 16k (`all` = every one).
        #[arg(long, value_delimiter = ',')]
        ablations: Vec<String>,
        /// Use acms without the embedding model.
        #[arg(long)]
        no_model: bool,
        /// The embedding model (`acms model list`; default: acms' default).
        #[arg(long)]
        model: Option<String>,
        /// Re-index the task trees even when an index exists.
        #[arg(long)]
        reindex: bool,
        /// Keep this run's result files apart (`issues-<set>-<tag>.*`); not written to the doc.
        #[arg(long)]
        tag: Option<String>,
        /// Markdown file whose generated real-issue section is replaced ("-" = stdout only).
        #[arg(long, default_value = "docs/EVAL.md")]
        out: String,
    },
    /// Mine commit-level tasks from a git repository's history (JSON lines on stdout).
    Mine {
        /// The git directory (bare or `.git`).
        #[arg(long)]
        git_dir: PathBuf,
        /// `owner/name` of the repository.
        #[arg(long)]
        slug: String,
        /// ts, rust, python, js, java, go, c, cpp, csharp, ruby, php, kotlin, swift, scala, bash.
        #[arg(long)]
        lang: String,
        /// The newest commit mined (a commit id pins a set; default the mirror's HEAD).
        #[arg(long, default_value = "HEAD")]
        rev: String,
        #[arg(long, default_value_t = 60)]
        count: usize,
        /// Commits scanned at most (newest first).
        #[arg(long, default_value_t = 3000)]
        scan: usize,
    },
    /// Re-render docs/EVAL.md from the reports saved by earlier runs.
    Report {
        #[arg(long, default_value = "docs/EVAL.md")]
        out: String,
    },
    /// Print one corpus's tasks as JSON lines (and write its stripped copy).
    Tasks {
        #[arg(long)]
        corpus: String,
    },
}

fn repo_root(arg: Option<PathBuf>) -> PathBuf {
    if let Some(r) = arg {
        return r;
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if built.join("scripts/fetch-corpus.sh").is_file() {
        return built.canonicalize().unwrap_or(built);
    }
    PathBuf::from(".")
}

fn sh(repo: &Path, cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .current_dir(repo)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into())
}

/// The eval corpora in `scripts/fetch-corpus.sh` order, plus any other corpus just measured.
fn all_corpora(repo: &Path, reports: &[acms_eval::CorpusReport]) -> Vec<String> {
    let mut names = acms_eval::harness::eval_corpora(repo).unwrap_or_default();
    for r in reports {
        if !names.contains(&r.corpus) {
            names.push(r.corpus.clone());
        }
    }
    names
}

fn write_doc(
    repo: &Path,
    out: &str,
    reports: &[acms_eval::CorpusReport],
    budgets: &[usize],
) -> Result<()> {
    let header = "Each corpus lists the commit and command it was measured with.\n\n";
    let section = acms_eval::report::generated_section(reports, budgets, header);
    if out == "-" {
        print!("{section}");
        return Ok(());
    }
    let path = repo.join(out);
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, acms_eval::report::splice(&doc, &section))
        .with_context(|| format!("writing {}", path.display()))?;
    print!("{section}");
    eprintln!("acms-eval: wrote {}", path.display());
    Ok(())
}

fn provenance(repo: &Path, extra: &str) -> String {
    let command = format!(
        "cargo run --release -p acms-eval -- {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into());
    format!(
        "commit `{}`, `{command}`, {} build, {} cores, load average at start {load}{extra}",
        sh(repo, "git", &["rev-parse", "--short", "HEAD"]),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    )
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let repo = repo_root(cli.repo);
    match cli.command {
        Cmd::Issues {
            repos,
            sets,
            tasks,
            only,
            budgets,
            peers,
            ablations,
            no_model,
            model,
            reindex,
            tag,
            out,
        } => {
            let mut run = acms_eval::RunOptions::new(&repo);
            run.tasks = tasks;
            run.budgets = budgets;
            run.peers = peers;
            run.model = !no_model;
            run.model_name = model;
            run.verbose = true;
            run.provenance = Some(provenance(&repo, ""));
            let ablations = if ablations.iter().any(|a| a == "all") {
                acms_eval::issues::ablations(&acms::ContextConfig::default())
                    .into_iter()
                    .map(|(name, _)| name)
                    .collect()
            } else {
                ablations
            };
            let opts = acms_eval::issues::IssueOptions {
                run,
                repos,
                sets,
                only,
                reindex,
                ablations,
                tag,
            };
            let reports = acms_eval::issues::run(&opts).context("real-issue benchmark failed")?;
            if opts.tag.is_some() {
                // An experiment: its tables on stdout only.
                print!("{}", acms_eval::report::issues_section(&reports));
                return Ok(());
            }
            let names: Vec<&str> = acms_eval::realtasks::SETS.iter().map(|s| s.0).collect();
            let mut saved = acms_eval::issues::saved_reports(&opts.run.work_dir, &names)?;
            for r in reports {
                if !saved.iter().any(|s| s.set == r.set) {
                    saved.push(r);
                }
            }
            let section = acms_eval::report::issues_section(&saved);
            if out == "-" {
                print!("{section}");
            } else {
                let path = repo.join(&out);
                let doc = std::fs::read_to_string(&path).unwrap_or_default();
                std::fs::write(
                    &path,
                    acms_eval::report::splice_between(
                        &doc,
                        &section,
                        acms_eval::report::ISSUES_BEGIN,
                        acms_eval::report::ISSUES_END,
                    ),
                )
                .with_context(|| format!("writing {}", path.display()))?;
                print!("{section}");
                eprintln!("acms-eval: wrote {}", path.display());
            }
        }
        Cmd::Mine {
            git_dir,
            slug,
            rev,
            lang,
            count,
            scan,
        } => {
            let lang = acms_eval::lang::Lang::parse(&lang)?;
            let tasks = acms_eval::mine::mine(&git_dir, &slug, &rev, lang, count, scan)?;
            for t in &tasks {
                println!("{}", serde_json::to_string(t)?);
            }
            eprintln!("acms-eval: {} tasks from {slug}", tasks.len());
        }
        Cmd::Tasks { corpus } => {
            let opts = acms_eval::RunOptions::new(&repo);
            let (registry, _) = acms_eval::harness::ensure_corpus(&opts, &corpus)?;
            let (tasks, stripped, stats) =
                acms_eval::harness::prepare_tasks(&opts, &corpus, &registry)?;
            for t in &tasks {
                println!("{}", serde_json::to_string(t)?);
            }
            if let Some(s) = stats {
                eprintln!("acms-eval: {}", serde_json::to_string(&s)?);
            }
            eprintln!(
                "acms-eval: {} tasks; stripped copy at {}",
                tasks.len(),
                stripped.display()
            );
        }
        Cmd::Run {
            corpus,
            tasks,
            budgets,
            set,
            peers,
            ablations,
            no_model,
            model,
            max_tokens,
            all_places,
            without_semantic,
            out,
        } => {
            let mut opts = acms_eval::RunOptions::new(&repo);
            opts.corpora = corpus;
            opts.tasks = tasks;
            opts.budgets = budgets;
            opts.sets = set;
            opts.peers = peers;
            opts.ablations = ablations;
            opts.model = !no_model;
            opts.model_name = model;
            opts.max_tokens = max_tokens;
            opts.all_places = all_places;
            opts.without_semantic = without_semantic;
            opts.verbose = true;
            if opts.ablations && !opts.budgets.contains(&acms_eval::harness::ABLATION_BUDGET) {
                bail!("--ablations are measured at 4000 tokens: include 4000 in --budgets");
            }
            opts.provenance = Some(provenance(&repo, ""));
            let reports = acms_eval::run(&opts).context("evaluation failed")?;
            // The document shows every corpus with a saved report, so corpora measured by
            // separate runs end up in one set of tables.
            let names = all_corpora(&repo, &reports);
            let saved = acms_eval::harness::saved_reports(&opts.work_dir, &names)?;
            write_doc(&repo, &out, &saved, &opts.budgets)?;
        }
        Cmd::Report { out } => {
            let opts = acms_eval::RunOptions::new(&repo);
            let names = all_corpora(&repo, &[]);
            let saved = acms_eval::harness::saved_reports(&opts.work_dir, &names)?;
            if saved.is_empty() {
                bail!(
                    "no saved reports under {}: run `acms-eval run` first",
                    opts.work_dir.display()
                );
            }
            let budgets: Vec<usize> = saved[0]
                .rows
                .first()
                .map(|r| r.budgets.keys().copied().collect())
                .unwrap_or_default();
            write_doc(&repo, &out, &saved, &budgets)?;
        }
    }
    Ok(())
}
