//! Markdown for `docs/EVAL.md`: one table per corpus and the generated section between
//! markers, so a re-run replaces its numbers and keeps the hand-written analysis above.
//!
//! It renders only; it measures nothing.

use std::fmt::Write as _;

use crate::harness::{CorpusReport, Metrics, Row};
use crate::issues::{IssueMetrics, IssueRow, SetReport};

/// The markers around the generated part of `docs/EVAL.md`.
pub const BEGIN: &str =
    "<!-- BEGIN acms-eval generated: re-running the harness replaces everything up to END -->";
pub const END: &str = "<!-- END acms-eval generated -->";

fn k(budget: usize) -> String {
    if budget.is_multiple_of(1000) {
        format!("{}k", budget / 1000)
    } else {
        budget.to_string()
    }
}

fn cells(m: Option<&Metrics>) -> String {
    match m {
        Some(m) => format!(
            " {:.2} | {:.2} | {:.0} | {} | {:.0}/{:.0} |",
            m.symbol_recall, m.code_recall, m.mean_tokens, m.violations, m.p50_ms, m.p95_ms
        ),
        None => " – | – | – | – | – |".into(),
    }
}

/// One corpus: a short fact list and the table (rows: acms, peers, ablations; five columns per
/// budget).
pub fn corpus_markdown(r: &CorpusReport, budgets: &[usize]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### {} ({}, {})\n", r.corpus, r.source, r.language);
    if let Some(p) = &r.provenance {
        let _ = writeln!(s, "- measured: {p}");
    }
    let per_set: Vec<String> = r
        .tasks_per_set
        .iter()
        .map(|(set, n)| format!("set {set}: {n}"))
        .collect();
    let _ = writeln!(
        s,
        "- index of the stripped copy: {} files, {} nodes, {:.1} s; embedder: {}",
        r.files_indexed, r.nodes_indexed, r.index_seconds, r.embedder
    );
    let cands = r
        .ts_candidates
        .map(|c| format!(" (of {c} qualifying JSDoc'd functions)"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "- tasks: {} sampled{cands}, used {}; targets located by the analyzer: {}/{}\n",
        r.tasks_sampled,
        per_set.join(", "),
        r.targets_resolved,
        r.tasks_sampled
    );
    s.push_str(&table_head(
        &["system", "set"],
        budgets,
        &["sym", "code", "tokens", "viol", "p50/p95 ms"],
    ));
    for row in &r.rows {
        s.push_str(&row_markdown(row, budgets));
    }
    s
}

fn row_markdown(row: &Row, budgets: &[usize]) -> String {
    let name = match &row.note {
        Some(n) => format!("{} ({n})", row.system),
        None => row.system.clone(),
    };
    let mut line = format!("| {name} | {} |", row.set);
    for b in budgets {
        line.push_str(&cells(row.budgets.get(b)));
    }
    line.push('\n');
    line
}

/// The whole generated section (markers included).
pub fn generated_section(reports: &[CorpusReport], budgets: &[usize], header: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{BEGIN}\n");
    let _ = writeln!(s, "## Results (generated)\n");
    s.push_str(header);
    let _ = writeln!(
        s,
        "- columns per budget: symbol recall, code-visible recall, mean tokens (exact cl100k_base \
         recount), budget violations (recount > budget), p50/p95 latency in ms; ablation rows \
         are measured at 4k only\n"
    );
    for r in reports {
        s.push_str(&corpus_markdown(r, budgets));
        s.push('\n');
    }
    let _ = writeln!(s, "{END}");
    s
}

/// `doc` with its generated section replaced by `section` (appended when there is none).
pub fn splice(doc: &str, section: &str) -> String {
    splice_between(doc, section, BEGIN, END)
}

/// [`splice`] for the section between the markers `begin` and `end`.
pub fn splice_between(doc: &str, section: &str, begin: &str, end: &str) -> String {
    match (doc.find(begin), doc.find(end)) {
        (Some(a), Some(b)) if b >= a => {
            let tail = &doc[b + end.len()..];
            let tail = tail.strip_prefix('\n').unwrap_or(tail);
            format!("{}{section}{tail}", &doc[..a])
        }
        _ => {
            let mut out = doc.trim_end().to_string();
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(section);
            out
        }
    }
}

/// The markers around the generated real-issue section of `docs/EVAL.md`.
pub const ISSUES_BEGIN: &str = "<!-- BEGIN acms-eval issues generated: re-running `acms-eval issues` replaces everything up to END -->";
pub const ISSUES_END: &str = "<!-- END acms-eval issues generated -->";

fn issue_cells(m: Option<&IssueMetrics>) -> String {
    match m {
        Some(m) => format!(
            " {:.2} | {:.2} | **{:.2}** | {:.0} | {} | {:.0} |",
            m.files_all, m.symbols, m.changed, m.mean_tokens, m.over_budget, m.p50_ms
        ),
        None => " – | – | – | – | – | – |".into(),
    }
}

fn issue_row(row: &IssueRow, budgets: &[usize]) -> String {
    let name = match &row.note {
        Some(n) => format!("{} ({n})", row.system),
        None => row.system.clone(),
    };
    let mut line = format!("| {name} |");
    for b in budgets {
        line.push_str(&issue_cells(row.budgets.get(b)));
    }
    line.push('\n');
    line
}

/// One set of the real-issue benchmark: facts, then one table (rows: acms, peers, ablations;
/// six columns per budget).
pub fn set_markdown(r: &SetReport, budgets: &[usize]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### {} ({}; {})\n",
        r.set,
        r.language,
        r.repos.join(", ")
    );
    if let Some(p) = &r.provenance {
        let _ = writeln!(s, "- measured: {p}");
    }
    let first = r.rows.first().and_then(|row| row.budgets.values().next());
    let _ = writeln!(
        s,
        "- {} tasks; {} gold symbols located ({} not found in the base tree), {} tasks with \
         changed lines; embedder: {}\n",
        r.tasks,
        first.map_or(0, |m| m.symbols_total),
        r.symbols_unresolved,
        first.map_or(0, |m| m.changed_tasks),
        r.embedder
    );
    s.push_str(&table_head(
        &["system"],
        budgets,
        &["files", "symbols", "changed", "tokens", "over", "p50 ms"],
    ));
    for row in &r.rows {
        s.push_str(&issue_row(row, budgets));
    }
    s
}

/// A table's header and rule: the `leading` columns, then each of `columns` per budget.
fn table_head(leading: &[&str], budgets: &[usize], columns: &[&str]) -> String {
    let mut header = format!("| {} |", leading.join(" | "));
    let mut rule = "|---".repeat(leading.len()) + "|";
    for &b in budgets {
        let b = k(b);
        for c in columns {
            let _ = write!(header, " {b} {c} |");
            rule.push_str("---:|");
        }
    }
    format!("{header}\n{rule}\n")
}

/// The budgets a set was measured at (each set's report keeps its own: sets run separately
/// may use different budgets).
fn set_budgets(r: &SetReport) -> Vec<usize> {
    let all: std::collections::BTreeSet<usize> = r
        .rows
        .iter()
        .flat_map(|row| row.budgets.keys().copied())
        .collect();
    all.into_iter().collect()
}

/// The whole generated real-issue section (markers included).
pub fn issues_section(reports: &[SetReport]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{ISSUES_BEGIN}\n");
    let _ = writeln!(s, "## Real issues: results (generated)\n");
    let _ = writeln!(
        s,
        "- columns per budget: all gold files in the context; gold symbols whose declaration \
         line is visible; **changed-line coverage** (removed lines of the fix, trimmed, ≥ 12 \
         characters, verbatim in their file's part of the context); mean tokens (exact \
         cl100k_base recount); results over budget; p50 latency in ms (acms: assembly after \
         the engine is open; peers: their own per-task time)\n"
    );
    for r in reports {
        s.push_str(&set_markdown(r, &set_budgets(r)));
        s.push('\n');
    }
    let _ = writeln!(s, "{ISSUES_END}");
    s
}
