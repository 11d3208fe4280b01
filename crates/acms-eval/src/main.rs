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
        /// Use the built-in embedder even when the model can be fetched.
        #[arg(long)]
        no_model: bool,
        /// Markdown file whose generated section is replaced ("-" = stdout only).
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

fn main() -> Result<()> {
    let cli = Cli::parse();
    let repo = repo_root(cli.repo);
    match cli.command {
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
            opts.verbose = true;
            if opts.ablations && !opts.budgets.contains(&acms_eval::harness::ABLATION_BUDGET) {
                bail!("--ablations are measured at 4000 tokens: include 4000 in --budgets");
            }
            let command = format!(
                "cargo run --release -p acms-eval -- {}",
                std::env::args().skip(1).collect::<Vec<_>>().join(" ")
            );
            let load = std::fs::read_to_string("/proc/loadavg")
                .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .unwrap_or_else(|_| "?".into());
            let started = std::time::Instant::now();
            let reports = acms_eval::run(&opts).context("evaluation failed")?;
            let environment = format!(
                "{} cores, load average at start {load}, {} build, run took {:.0} s",
                std::thread::available_parallelism().map_or(0, |n| n.get()),
                if cfg!(debug_assertions) {
                    "debug"
                } else {
                    "release"
                },
                started.elapsed().as_secs_f64()
            );
            let commit = sh(&repo, "git", &["rev-parse", "--short", "HEAD"]);
            let section = acms_eval::report::generated_section(
                &reports,
                &opts.budgets,
                &commit,
                &command,
                &environment,
            );
            if out == "-" {
                print!("{section}");
            } else {
                let path = repo.join(&out);
                let doc = std::fs::read_to_string(&path).unwrap_or_default();
                let updated = acms_eval::report::splice(&doc, &section);
                std::fs::write(&path, updated)
                    .with_context(|| format!("writing {}", path.display()))?;
                print!("{section}");
                eprintln!("acms-eval: wrote {}", path.display());
            }
        }
    }
    Ok(())
}
