//! `acms compact`: reads a conversation (OpenAI or Anthropic messages JSON), bounds it with
//! the provider seam of `acms-compact` (one bounded assembly: eviction, offload, the tiered
//! reducer's proposals verified independently, preservation-only fallback), writes the
//! result to stdout in the same format, and the diagnostics as JSON lines to stderr (or
//! `--diagnostics FILE`): the seam's events (started, completed or terminated, composed,
//! each with its assembly id), one line per stage, then the `result`, ending with one human
//! line that states the outcome.
//!
//! A conversation that needs no change is written back byte for byte; otherwise unchanged
//! messages keep every field they had (see `acms_compact::format`).
//!
//! Exit codes: 0 the output fits the hard limit; 3 it cannot fit (the system prompt, latest
//! user turn and pinned messages alone exceed it; nothing is written to stdout); 4 bad
//! input (malformed JSON, unknown role, wrong shape, unreadable file); 1 any other error.
//! This module only parses arguments and formats output; all decisions are the library's.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use acms::compact::format::{self, Format};
use acms::compact::{
    ArtifactStore, AssemblyDiagnostics, AssemblyPolicy, CollectingSink, CompactConfig,
    CompactionProfile, Compactor, Conversation, Error, LlmSummarizer, Measured, Meter,
    ProgressSink, Seam, TieredReducer,
};
use anyhow::Context;
use serde_json::{Value, json};

use crate::failure::Failure;

/// Exit code: the conversation cannot fit the limit.
pub const EXIT_IRREDUCIBLE: u8 = 3;
/// Exit code: the input could not be read as a conversation.
pub const EXIT_BAD_INPUT: u8 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum UnitArg {
    /// Exact tokens with --tokenizer.
    Tokens,
    /// Estimated tokens (UTF-8 bytes / 3, rounded up).
    Estimated,
    /// UTF-8 bytes.
    Bytes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TokenizerArg {
    /// Also spelled `cl100k_base`, as `query --tokenizer` and the configuration write it.
    #[value(alias = "cl100k_base")]
    Cl100k,
    #[value(alias = "o200k_base")]
    O200k,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Openai,
    Anthropic,
}

/// The meter `--unit` and `--tokenizer` describe.
pub fn meter(unit: UnitArg, tokenizer: TokenizerArg) -> Meter {
    match unit {
        UnitArg::Bytes => Meter::bytes(),
        UnitArg::Estimated => Meter::estimated_tokens(),
        UnitArg::Tokens => Meter::tokens(match tokenizer {
            TokenizerArg::Cl100k => acms::core::Tokenizer::Cl100kBase,
            TokenizerArg::O200k => acms::core::Tokenizer::O200kBase,
        }),
    }
}

/// Compact a conversation to fit a context limit.
#[derive(clap::Args, Debug)]
#[command(after_help = "Exit codes: 0 fits; 3 cannot fit (nothing written); 4 bad input.")]
pub struct CompactArgs {
    /// Conversation JSON file, or `-` for stdin.
    #[arg(long, default_value = "-")]
    pub input: String,
    /// Hard limit for the output, in --unit: never exceeded.
    #[arg(long = "hard-limit", visible_alias = "limit")]
    pub limit: usize,
    /// Reduction aims at `hard-limit - trigger-margin` and starts above it.
    #[arg(long, default_value_t = 0)]
    pub trigger_margin: usize,
    /// Reducer proposals before the preservation-only fallback.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: usize,
    /// Context window the budget states refer to (default: the limit).
    #[arg(long)]
    pub window: Option<usize>,
    /// What the limit counts.
    #[arg(long, value_enum, default_value_t = UnitArg::Tokens)]
    pub unit: UnitArg,
    /// Tokenizer for --unit tokens.
    #[arg(long, value_enum, default_value_t = TokenizerArg::Cl100k)]
    pub tokenizer: TokenizerArg,
    /// Input and output format (default: detected from the input).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Write diagnostics (JSON lines) to this file instead of stderr.
    #[arg(long)]
    pub diagnostics: Option<PathBuf>,
    /// Offload large old tool results to this content-addressed artifact directory.
    #[arg(long)]
    pub artifacts: Option<PathBuf>,
    /// Tier 3: summarize with the model configured under `context.llm` (else tier 2).
    #[arg(long)]
    pub llm_summary: bool,
    /// Configuration file (read for --llm-summary).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Current time in unix seconds, for tool-result ages (default: the clock).
    #[arg(long)]
    pub now: Option<f64>,
    /// Recent context tiers 2 and 3 keep at most, in --unit (default: all that fits).
    #[arg(long)]
    pub keep_recent: Option<usize>,
}

pub fn run(args: &CompactArgs) -> anyhow::Result<ExitCode> {
    let text = if args.input == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map(|_| s)
    } else {
        std::fs::read_to_string(&args.input)
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            let message = format!("cannot read {}: {e}", args.input);
            return Err(Failure::input(message, EXIT_BAD_INPUT).into());
        }
    };
    let format = args.format.map(|f| match f {
        FormatArg::Openai => Format::OpenAi,
        FormatArg::Anthropic => Format::Anthropic,
    });
    let doc = match format::read(&text, format) {
        Ok(d) => d,
        Err(e) => return Err(Failure::input(e.to_string(), EXIT_BAD_INPUT).into()),
    };
    let meter = meter(args.unit, args.tokenizer);
    let mut sink: Box<dyn Write> = match &args.diagnostics {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p)
                .with_context(|| format!("cannot create diagnostics file {}", p.display()))?,
        )),
        None => Box::new(std::io::stderr()),
    };
    for w in &doc.warnings {
        line(&mut sink, "warning", serde_json::to_value(w)?)?;
    }
    // Anthropic's writer merges consecutive same-role messages, which changes message
    // boundaries; the limit is checked again on the output as it reads back, and the
    // assembly is retried with the overshoot taken off (bounded: at most three attempts).
    let mut limit = args.limit;
    // The seam's event stream (started, completed or terminated, composed, with the
    // assembly id) goes to the diagnostics first; the `result` line stays the last JSON line.
    let events = CollectingSink::new();
    for _ in 0..3 {
        let observer: Arc<dyn ProgressSink> = events.clone();
        let seam = Seam::new(profile(args, meter.clone(), limit)?, Some(observer))?;
        match seam.prepare(None, doc.conversation.messages.clone()) {
            Ok(p) => {
                let out = if p.changed {
                    format::write(&doc, &Conversation::new(p.messages))
                } else {
                    // Nothing to change: the input exactly as it was given.
                    text.trim_end().to_string()
                };
                let sent = if p.changed {
                    format::read(&out, Some(doc.format))
                        .map(|d| Measured::new(&d.conversation, &meter).total)
                        .unwrap_or(usize::MAX)
                } else {
                    p.diagnostics.final_size
                };
                if sent > args.limit {
                    limit = limit.saturating_sub(sent - args.limit).max(1);
                    continue;
                }
                write_events(&mut sink, &events)?;
                write_diagnostics(&mut sink, &p.diagnostics, args.limit)?;
                writeln!(sink, "{}", summary_line(&p.diagnostics))?;
                sink.flush()?;
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(out.as_bytes())?;
                stdout.write_all(b"\n")?;
                return Ok(ExitCode::SUCCESS);
            }
            Err(Error::Terminated(t)) => {
                // The terminated event's diagnostics are not part of the error on purpose;
                // the numbers it carries are all that is reported.
                write_events(&mut sink, &events)?;
                line(
                    &mut sink,
                    "result",
                    json!({"outcome": t.outcome, "unit": t.unit, "final_size": t.final_size,
                           "hard_limit": args.limit, "limit": args.limit}),
                )?;
                sink.flush()?;
                drop(sink);
                eprintln!(
                    "error: {} (system prompt, latest user message and pinned messages are never dropped); raise --hard-limit or shorten them",
                    t
                );
                return Ok(ExitCode::from(EXIT_IRREDUCIBLE));
            }
            Err(e) => return Err(e.into()),
        }
    }
    eprintln!(
        "error: the written conversation stays over the limit after 3 attempts; lower --hard-limit"
    );
    Ok(ExitCode::from(EXIT_IRREDUCIBLE))
}

/// The seam's profile for a hard `limit`: the tiered reducer configured from the arguments.
fn profile(args: &CompactArgs, meter: Meter, limit: usize) -> anyhow::Result<CompactionProfile> {
    let mut policy = AssemblyPolicy::new(limit);
    policy.trigger_margin = args.trigger_margin.min(limit.saturating_sub(1));
    policy.max_attempts = args.max_attempts;
    let target = policy.trigger_threshold().max(1);
    let mut config = CompactConfig::new(target);
    config.window = args.window.or(Some(args.limit));
    config.keep_recent = args.keep_recent.unwrap_or(limit);
    config.summary_reserve = limit / 5;
    config.restore_file_max = (limit / 10).max(1);
    config.restore_files_total = limit / 4;
    config.restore_skill_max = (limit / 10).max(1);
    config.category_report = false;
    let mut compactor = Compactor::new(config, meter.clone())?;
    if let Some(now) = args.now {
        compactor = compactor.at_time(now);
    }
    if args.llm_summary {
        let cfg = match &args.config {
            Some(p) => acms::core::Config::from_file(p)?,
            None => acms::core::Config::default(),
        };
        let client = acms_llm::HttpClient::from_config(&cfg.context.llm)?;
        let per_unit = match args.unit {
            UnitArg::Bytes => 0.25,
            _ => 1.0,
        };
        compactor = compactor.with_summarizer(Box::new(LlmSummarizer::new(client, per_unit)));
    }
    let mut profile =
        CompactionProfile::new(policy, meter, Arc::new(TieredReducer::new(compactor)));
    if let Some(dir) = &args.artifacts {
        profile = profile.with_artifacts(Arc::new(ArtifactStore::new(dir)));
    }
    Ok(profile)
}

fn line(sink: &mut dyn Write, event: &str, value: Value) -> anyhow::Result<()> {
    let mut v = value;
    if let Value::Object(o) = &mut v {
        o.insert("event".into(), json!(event));
    }
    writeln!(sink, "{}", serde_json::to_string(&v)?)?;
    Ok(())
}

/// One JSON line per stage, then one `result` line (no stages).
fn write_diagnostics(
    sink: &mut dyn Write,
    d: &AssemblyDiagnostics,
    limit: usize,
) -> anyhow::Result<()> {
    for s in &d.stages {
        line(sink, "stage", serde_json::to_value(s)?)?;
    }
    let mut result = serde_json::to_value(d)?;
    if let Value::Object(o) = &mut result {
        o.remove("stages");
        o.insert("limit".into(), json!(limit));
    }
    line(sink, "result", result)
}

/// One JSON line per seam event (`"event"`: started, completed, terminated, composed), in
/// order, with its assembly id and headline numbers.
fn write_events(sink: &mut dyn Write, events: &CollectingSink) -> anyhow::Result<()> {
    for e in events.take() {
        writeln!(sink, "{}", serde_json::to_string(&e.summary())?)?;
    }
    Ok(())
}

/// The human line that closes the diagnostics.
fn summary_line(d: &AssemblyDiagnostics) -> String {
    format!(
        "acms compact: {}, {} -> {} {} (hard limit {}, trigger {}), {} of {} attempts, {} -> {} messages",
        d.outcome,
        d.original_size,
        d.final_size,
        d.unit,
        d.hard_limit,
        d.trigger_threshold,
        d.attempts,
        d.max_attempts,
        d.original_messages,
        d.final_messages
    )
}
