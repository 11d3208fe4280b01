//! `acms compact`: reads a conversation (OpenAI or Anthropic messages JSON), compacts it to a
//! hard limit with `acms-compact`, writes the result to stdout in the same format and the
//! per-stage diagnostics as JSON lines to stderr (or `--diagnostics FILE`).
//!
//! Exit codes: 0 the output fits the limit; 3 it cannot fit (the system prompt, latest user
//! turn and pinned messages alone exceed the limit; nothing is written to stdout); 4 bad
//! input (malformed JSON, unknown role, wrong shape, unreadable file); 1 any other error.
//! This module only parses arguments and formats output; all decisions are the library's.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use acms::compact::format::{self, Format};
use acms::compact::{
    ArtifactStore, CompactConfig, Compactor, Diagnostics, Error, LlmSummarizer, Measured, Meter,
};
use anyhow::Context;
use serde_json::{Value, json};

/// Exit code: the conversation cannot fit the limit.
pub const EXIT_IRREDUCIBLE: u8 = 3;
/// Exit code: the input could not be read as a conversation.
pub const EXIT_BAD_INPUT: u8 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum UnitArg {
    Tokens,
    Bytes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TokenizerArg {
    Cl100k,
    O200k,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Openai,
    Anthropic,
}

/// Compact a conversation to fit a context limit.
#[derive(clap::Args, Debug)]
#[command(after_help = "Exit codes: 0 fits; 3 cannot fit (nothing written); 4 bad input.")]
pub struct CompactArgs {
    /// Conversation JSON file, or `-` for stdin.
    #[arg(long, default_value = "-")]
    pub input: String,
    /// Hard limit for the output, in --unit.
    #[arg(long)]
    pub limit: usize,
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
    /// Recent context tiers 2 and 3 keep, in --unit (default 10000).
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
            eprintln!("error: cannot read {}: {e}", args.input);
            return Ok(ExitCode::from(EXIT_BAD_INPUT));
        }
    };
    let format = args.format.map(|f| match f {
        FormatArg::Openai => Format::OpenAi,
        FormatArg::Anthropic => Format::Anthropic,
    });
    let doc = match format::read(&text, format) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(EXIT_BAD_INPUT));
        }
    };
    let meter = match args.unit {
        UnitArg::Bytes => Meter::bytes(),
        UnitArg::Tokens => Meter::tokens(match args.tokenizer {
            TokenizerArg::Cl100k => acms::core::Tokenizer::Cl100kBase,
            TokenizerArg::O200k => acms::core::Tokenizer::O200kBase,
        }),
    };
    let mut sink: Box<dyn Write> = match &args.diagnostics {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p)
                .with_context(|| format!("cannot create diagnostics file {}", p.display()))?,
        )),
        None => Box::new(std::io::stderr()),
    };
    // Anthropic's writer merges consecutive same-role messages, which changes message
    // boundaries; the limit is checked again on the output as it reads back, and compaction
    // is retried with the overshoot taken off (bounded: at most three attempts).
    let mut limit = args.limit;
    for _attempt in 0..3 {
        let compactor = build(args, meter, limit)?;
        match compactor.compact(&doc.conversation) {
            Ok(out) => {
                let text = format::write(&doc, &out.conversation);
                let sent = format::read(&text, Some(doc.format))
                    .map(|d| Measured::new(&d.conversation, &meter).total)
                    .unwrap_or(usize::MAX);
                if sent > args.limit {
                    limit = limit.saturating_sub(sent - args.limit).max(1);
                    continue;
                }
                write_diagnostics(&mut sink, &out.diagnostics)?;
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(text.as_bytes())?;
                stdout.write_all(b"\n")?;
                return Ok(ExitCode::SUCCESS);
            }
            Err(Error::Irreducible {
                size, diagnostics, ..
            }) => {
                write_diagnostics(&mut sink, &diagnostics)?;
                drop(sink);
                eprintln!(
                    "error: the conversation cannot fit: {size} remain against a limit of {} \
                     (system prompt, latest user message and pinned messages are never dropped); \
                     raise --limit or shorten them",
                    args.limit
                );
                return Ok(ExitCode::from(EXIT_IRREDUCIBLE));
            }
            Err(e) => return Err(e.into()),
        }
    }
    eprintln!(
        "error: the written conversation stays over the limit after 3 attempts; lower --limit"
    );
    Ok(ExitCode::from(EXIT_IRREDUCIBLE))
}

/// The compactor the arguments describe, for a hard `limit`.
fn build(args: &CompactArgs, meter: Meter, limit: usize) -> anyhow::Result<Compactor> {
    let mut config = CompactConfig::new(limit);
    config.window = args.window.or(Some(args.limit));
    if let Some(k) = args.keep_recent {
        config.keep_recent = k;
    }
    let mut compactor = Compactor::new(config, meter)?;
    if let Some(now) = args.now {
        compactor = compactor.at_time(now);
    }
    if let Some(dir) = &args.artifacts {
        compactor = compactor.with_artifacts(ArtifactStore::new(dir));
    }
    if args.llm_summary {
        let cfg = match &args.config {
            Some(p) => acms::core::Config::from_file(p)?,
            None => acms::core::Config::default(),
        };
        let client = acms_llm::HttpClient::from_config(&cfg.context.llm)?;
        let per_unit = if args.unit == UnitArg::Bytes {
            0.25
        } else {
            1.0
        };
        compactor = compactor.with_summarizer(Box::new(LlmSummarizer::new(client, per_unit)));
    }
    Ok(compactor)
}

/// One JSON line per structure warning and per stage, then one `result` line.
fn write_diagnostics(sink: &mut dyn Write, d: &Diagnostics) -> anyhow::Result<()> {
    let mut line = |event: &str, value: Value| -> anyhow::Result<()> {
        let mut v = value;
        if let Value::Object(o) = &mut v {
            o.insert("event".into(), json!(event));
        }
        writeln!(sink, "{}", serde_json::to_string(&v)?)?;
        Ok(())
    };
    for w in &d.warnings {
        line("warning", serde_json::to_value(w)?)?;
    }
    for s in &d.stages {
        line("stage", serde_json::to_value(s)?)?;
    }
    let mut result = serde_json::to_value(d)?;
    if let Value::Object(o) = &mut result {
        o.remove("stages");
        o.remove("warnings");
    }
    line("result", result)?;
    sink.flush()?;
    Ok(())
}
