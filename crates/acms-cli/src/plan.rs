//! `acms plan start|phase|child|decide|close|history|show|correct`: plans and decision memory
//! over the `acms::Workspace` API. A plan is named by the id `start` prints (`p1`, ...),
//! a decision by the id `decide` prints (`d1`, ...). Errors are the library's one-line
//! messages, identical to the MCP server's.

use std::path::PathBuf;
use std::process::ExitCode;

use acms::{BudgetSpec, DecisionId, PhaseRequest, PlanId, Tier, TierReport, Workspace};
use serde_json::json;

use crate::Format;

/// Which repository and index a command works on.
#[derive(clap::Args, Clone)]
pub struct WorkspaceArgs {
    /// The repository (indexed on first use).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Index directory (default: <REPO>/.acms).
    #[arg(long)]
    pub index: Option<PathBuf>,
    /// Configuration file (default: <REPO>/acms.toml when present).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl WorkspaceArgs {
    /// What can be checked without opening anything: the repository exists, the
    /// configuration reads.
    pub fn check(&self) -> anyhow::Result<()> {
        if !self.repo.is_dir() {
            anyhow::bail!(
                "repository {} does not exist or is not a directory",
                self.repo.display()
            );
        }
        crate::load_config(self.config.as_deref(), Some(&self.repo))?;
        Ok(())
    }

    /// Opens the workspace, indexing the repository when it has no index yet.
    pub fn open(&self) -> anyhow::Result<Workspace> {
        self.check()?;
        let config = crate::load_config(self.config.as_deref(), Some(&self.repo))?.context;
        lib(Workspace::open_with(
            &self.repo,
            acms::WorkspaceOptions {
                index_dir: self.index.clone(),
                config: Some(config),
                ..acms::WorkspaceOptions::default()
            },
        ))
    }
}

/// A library result with its error flattened to the one line the MCP server also returns.
pub fn lib<T>(r: acms::Result<T>) -> anyhow::Result<T> {
    r.map_err(|e| crate::failure::Failure::library(&e).into())
}

fn parse<T: std::str::FromStr<Err = acms::plan::Error>>(s: &str) -> anyhow::Result<T> {
    s.parse::<T>()
        .map_err(|e| crate::failure::Failure::plan(&e).into())
}

#[derive(clap::Args, Clone)]
pub struct Common {
    #[command(flatten)]
    ws: WorkspaceArgs,
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(clap::Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    command: PlanCommand,
}

#[derive(clap::Subcommand)]
enum PlanCommand {
    /// Start a plan for a task; prints its id.
    Start {
        #[command(flatten)]
        common: Common,
        /// What the plan is for (`-` reads it from stdin).
        task: String,
    },
    /// The context of a phase of a plan (changed files are re-indexed first).
    Phase {
        #[command(flatten)]
        common: Common,
        /// The plan id (`p1`).
        plan: String,
        /// The phase: explore, design, implement, verify, ...
        phase: String,
        /// What this phase focuses on, beyond the plan's task.
        #[arg(long, default_value = "")]
        focus: String,
        /// Token budget (capped at context.hot.max-tokens).
        #[arg(long)]
        budget: Option<usize>,
        /// The model's context window: the budget is derived from it.
        #[arg(long)]
        window: Option<usize>,
        /// Tokens of tool definitions in the window (with --window).
        #[arg(long, default_value_t = 0)]
        tool_tokens: usize,
        /// A file this phase is about (repeatable).
        #[arg(long = "file")]
        files: Vec<String>,
        /// A symbol this phase is about (repeatable).
        #[arg(long = "symbol")]
        symbols: Vec<String>,
    },
    /// Start a child plan; its phases inherit the parent's skeleton.
    Child {
        #[command(flatten)]
        common: Common,
        /// The parent plan id.
        parent: String,
        /// What the child plan is for.
        task: String,
    },
    /// Record a decision taken in a phase that has run.
    Decide {
        #[command(flatten)]
        common: Common,
        plan: String,
        phase: String,
        /// The decision and why.
        #[arg(long)]
        notes: Option<String>,
        /// A node id of the phase's manifest the decision is about (repeatable; default all).
        #[arg(long = "fragment")]
        fragments: Vec<String>,
    },
    /// Close a plan.
    Close {
        #[command(flatten)]
        common: Common,
        plan: String,
    },
    /// A plan's phases, decisions and children; without a plan, the decisions in memory.
    History {
        #[command(flatten)]
        common: Common,
        plan: Option<String>,
        /// Only decisions of this tier (hot, warm, cold).
        #[arg(long)]
        tier: Option<String>,
    },
    /// One decision in full (audit).
    Show {
        #[command(flatten)]
        common: Common,
        decision: String,
    },
    /// Mark a decision corrected: its fragments are demoted in later scoring.
    Correct {
        #[command(flatten)]
        common: Common,
        decision: String,
        /// What was wrong.
        #[arg(long)]
        note: Option<String>,
    },
}

fn print_json(v: &serde_json::Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn memory_note(m: &TierReport) {
    if let Some(behind) = m.clock_behind {
        eprintln!("note: the clock is {behind} s behind the latest time seen: using that time");
    }
    if m.promoted + m.demoted + m.expired > 0 {
        eprintln!(
            "memory: {} promoted, {} demoted, {} expired; hot {} warm {} cold {}",
            m.promoted, m.demoted, m.expired, m.counts[0], m.counts[1], m.counts[2]
        );
    }
}

fn decision_line(d: &acms::Decision) -> String {
    let corrected = if d.corrected.is_some() {
        " (corrected)"
    } else {
        ""
    };
    format!(
        "{} [{}{}] plan {} phase {}: {} ({} fragments)",
        d.id,
        d.tier,
        corrected,
        d.plan,
        d.phase,
        d.notes.as_deref().unwrap_or("-"),
        d.manifest.len()
    )
}

pub fn run(args: &PlanArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        PlanCommand::Start { common, task } => {
            let mut ws = common.ws.open()?;
            let (plan, memory) = lib(ws.start_plan(&crate::read_task(task)?))?;
            match common.format {
                Format::Json => print_json(&json!({ "plan": plan, "memory": memory }))?,
                Format::Text => {
                    println!("{}", plan.id);
                    eprintln!("plan {} started: {}", plan.id, plan.task);
                }
            }
        }
        PlanCommand::Child {
            common,
            parent,
            task,
        } => {
            let mut ws = common.ws.open()?;
            let (plan, memory) = lib(ws.child_plan(parse::<PlanId>(parent)?, task))?;
            match common.format {
                Format::Json => print_json(&json!({ "plan": plan, "memory": memory }))?,
                Format::Text => {
                    println!("{}", plan.id);
                    eprintln!(
                        "plan {} started as a child of {parent}: {}",
                        plan.id, plan.task
                    );
                }
            }
        }
        PlanCommand::Phase {
            common,
            plan,
            phase,
            focus,
            budget,
            window,
            tool_tokens,
            files,
            symbols,
        } => {
            let mut ws = common.ws.open()?;
            let request = PhaseRequest {
                focus: focus.clone(),
                budget: BudgetSpec {
                    tokens: *budget,
                    window: *window,
                    tool_definitions: *tool_tokens,
                },
                mentioned_files: files.clone(),
                mentioned_symbols: symbols.clone(),
            };
            let r = lib(ws.phase(parse::<PlanId>(plan)?, phase, request))?;
            match common.format {
                Format::Json => print_json(&json!({
                    "plan": r.plan.id,
                    "phase": r.phase.name,
                    "seq": r.phase.seq,
                    "context": r.context.text,
                    "tokens": r.context.tokens,
                    "budget": r.context.budget,
                    "tokenizer": r.context.tokenizer,
                    "manifest": r.context.manifest,
                    "inherited_tokens": r.inherited_tokens,
                    "refresh": r.refresh,
                    "memory": r.memory,
                    "seeded_by": r.phase.inputs.seeded_by,
                    "changes": r.changes,
                    "diagnostics": r.context.diagnostics,
                }))?,
                Format::Text => {
                    if let Some(c) = &r.changes {
                        eprintln!("note: {}", c.line());
                    }
                    for note in &r.context.diagnostics.notes {
                        eprintln!("note: {note}");
                    }
                    print!("{}", r.context.text);
                    memory_note(&r.memory);
                    eprintln!(
                        "[plan {} phase {} #{}: {} tokens of {}, {} fragments, {} files refreshed]",
                        r.plan.id,
                        r.phase.name,
                        r.phase.seq,
                        r.context.tokens,
                        r.context.budget,
                        r.context.manifest.len(),
                        r.refresh.refreshed
                    );
                }
            }
        }
        PlanCommand::Decide {
            common,
            plan,
            phase,
            notes,
            fragments,
        } => {
            let mut ws = common.ws.open()?;
            let (d, memory) =
                lib(ws.decide(parse::<PlanId>(plan)?, phase, notes.as_deref(), fragments))?;
            if d.notes.is_none() {
                // Recorded all the same (a later phase may only need the fragments), but not
                // silently: say what the decision holds.
                eprintln!(
                    "note: decision {} has no notes: it records {} fragments of phase `{}`{}; pass --notes to say what was decided and why",
                    d.id,
                    d.manifest.len(),
                    d.phase,
                    if fragments.is_empty() {
                        " (its whole context)"
                    } else {
                        ""
                    }
                );
            }
            match common.format {
                Format::Json => print_json(&json!({ "decision": d, "memory": memory }))?,
                Format::Text => {
                    println!("{}", d.id);
                    eprintln!("decision {} recorded: {}", d.id, decision_line(&d));
                    memory_note(&memory);
                }
            }
        }
        PlanCommand::Close { common, plan } => {
            let mut ws = common.ws.open()?;
            let (p, memory) = lib(ws.close_plan(parse::<PlanId>(plan)?))?;
            match common.format {
                Format::Json => print_json(&json!({ "plan": p, "memory": memory }))?,
                Format::Text => {
                    println!("plan {} closed", p.id);
                    memory_note(&memory);
                }
            }
        }
        PlanCommand::History { common, plan, tier } => {
            let mut ws = common.ws.open()?;
            let tier = tier.as_deref().map(parse::<Tier>).transpose()?;
            match plan {
                Some(plan) => {
                    let (h, memory) = lib(ws.history(parse::<PlanId>(plan)?))?;
                    match common.format {
                        Format::Json => print_json(&json!({ "history": h, "memory": memory }))?,
                        Format::Text => {
                            let state = if h.plan.closed.is_some() {
                                "closed"
                            } else {
                                "open"
                            };
                            println!("plan {} ({state}): {}", h.plan.id, h.plan.task);
                            if let Some(p) = h.plan.parent {
                                println!("  child of {p}");
                            }
                            for ph in &h.phases {
                                println!(
                                    "  phase #{} {}: {} of {} tokens, {} fragments, {} files refreshed",
                                    ph.seq,
                                    ph.name,
                                    ph.tokens,
                                    ph.budget,
                                    ph.manifest.len(),
                                    ph.refreshed
                                );
                            }
                            for d in h
                                .decisions
                                .iter()
                                .filter(|d| tier.is_none_or(|t| d.tier == t))
                            {
                                println!("  {}", decision_line(d));
                            }
                            for c in &h.children {
                                println!("  child plan {c}");
                            }
                        }
                    }
                }
                None => {
                    let (ds, memory) = lib(ws.decisions(tier))?;
                    match common.format {
                        Format::Json => print_json(&json!({ "decisions": ds, "memory": memory }))?,
                        Format::Text => {
                            for d in &ds {
                                println!("{}", decision_line(d));
                            }
                            memory_note(&memory);
                        }
                    }
                }
            }
        }
        PlanCommand::Show { common, decision } => {
            let mut ws = common.ws.open()?;
            let (d, memory) = lib(ws.decision(parse::<DecisionId>(decision)?))?;
            match common.format {
                Format::Json => print_json(&json!({ "decision": d, "memory": memory }))?,
                Format::Text => {
                    println!("{}", decision_line(&d));
                    println!("  task: {}", d.task);
                    if let Some(c) = &d.correction {
                        println!("  corrected: {c}");
                    }
                    for f in &d.manifest {
                        println!(
                            "  {} {}:{}-{} {} depth {} ({} tokens)",
                            f.node, f.path, f.start_line, f.end_line, f.name, f.depth, f.tokens
                        );
                    }
                }
            }
        }
        PlanCommand::Correct {
            common,
            decision,
            note,
        } => {
            let mut ws = common.ws.open()?;
            let (d, memory) = lib(ws.correct(parse::<DecisionId>(decision)?, note.as_deref()))?;
            match common.format {
                Format::Json => print_json(&json!({ "decision": d, "memory": memory }))?,
                Format::Text => {
                    println!(
                        "decision {} marked corrected ({}): its {} fragments are demoted in later scoring",
                        d.id,
                        d.tier,
                        d.manifest.len()
                    );
                    memory_note(&memory);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
