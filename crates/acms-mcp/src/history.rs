//! The `plan_history` result: a plan's summary, the fragments of one phase run when asked
//! for, and the cuts that keep it within `max_tokens`.

use acms::{History, PlanId, TierReport, TokenCounter};

use crate::reply::{
    self, DecisionOut, HistoryOut, MemoryOut, PhaseDetail, PhaseSummary, PlanOut, RefOut,
};

/// The history of `plan` within `max_tokens`, with the fragments of `phase` (a run number or
/// a phase name: its latest run) when given.
pub(crate) fn history_out(
    h: &History,
    memory: &TierReport,
    plan: PlanId,
    phase: Option<&str>,
    caps: Vec<String>,
    max_tokens: usize,
    counter: &dyn TokenCounter,
) -> Result<HistoryOut, String> {
    let detail = match phase.map(str::trim) {
        None => None,
        Some(p) => Some(phase_detail(h, plan, p)?),
    };
    let phases = phase_summaries(h);
    let decisions: Vec<DecisionOut> = h.decisions.iter().map(DecisionOut::from).collect();
    let mut out = HistoryOut {
        plan: PlanOut::from(&h.plan),
        phases: phases.clone(),
        phases_omitted: 0,
        decisions: decisions.clone(),
        decisions_omitted: 0,
        children: h.children.iter().map(ToString::to_string).collect(),
        detail,
        caps,
        memory: MemoryOut::from(memory),
    };
    let fits = |out: &HistoryOut| reply::tokens(out, counter) <= max_tokens;
    if !fits(&out) {
        keep_newest(h, &phases, &decisions, &mut out, &fits);
    }
    if !fits(&out) {
        cut_detail(&mut out, &fits);
    }
    Ok(out)
}

/// The run `p` names (a run number, or a phase name: its latest run) with its fragments.
fn phase_detail(h: &History, plan: PlanId, p: &str) -> Result<PhaseDetail, String> {
    let run = match p.parse::<i64>() {
        Ok(seq) => h.phases.iter().find(|r| r.seq == seq),
        Err(_) => h
            .phases
            .iter()
            .filter(|r| r.name == p)
            .max_by_key(|r| r.seq),
    };
    let Some(run) = run else {
        let mut known: Vec<String> = h
            .phases
            .iter()
            .map(|r| format!("{} ({})", r.name, r.seq))
            .collect();
        known.truncate(20);
        return Err(format!(
            "phase: plan {plan} has no phase run `{p}` (runs: {}): pass a phase name or run number from the summary",
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        ));
    };
    Ok(PhaseDetail {
        seq: run.seq,
        phase: run.name.clone(),
        manifest: run
            .manifest
            .iter()
            .map(|f| RefOut {
                place: reply::Place::new(&f.path, f.start_line, f.end_line),
                node: f.node.to_string(),
                name: f.name.clone(),
                depth: f.depth.value(),
                tokens: f.tokens,
            })
            .collect(),
        manifest_omitted: 0,
    })
}

/// Every phase run of `h`, without its fragments.
fn phase_summaries(h: &History) -> Vec<PhaseSummary> {
    h.phases
        .iter()
        .map(|r| PhaseSummary {
            seq: r.seq,
            phase: r.name.clone(),
            focus: reply::preview(&r.focus, 300),
            budget: r.budget,
            tokens: r.tokens,
            fragments: r.manifest.len(),
            refreshed: r.refreshed,
            created: r.created,
        })
        .collect()
}

/// Keeps as many of the newest phase runs and decisions in `out` as fit: the oldest go first,
/// whichever they are.
fn keep_newest(
    h: &History,
    phases: &[PhaseSummary],
    decisions: &[DecisionOut],
    out: &mut HistoryOut,
    fits: &dyn Fn(&HistoryOut) -> bool,
) {
    // Times are in seconds: within one, a decision follows the run of its phase.
    let run_of = |d: &acms::Decision| {
        h.phases
            .iter()
            .filter(|r| r.name == d.phase && r.created <= d.created)
            .map(|r| r.seq)
            .max()
            .unwrap_or(0)
    };
    let mut order: Vec<(i64, i64, bool, usize)> = h
        .phases
        .iter()
        .enumerate()
        .map(|(i, r)| (r.created, r.seq, false, i))
        .chain(
            h.decisions
                .iter()
                .enumerate()
                .map(|(i, d)| (d.created, run_of(d), true, i)),
        )
        .collect();
    order.sort_unstable();
    let n = order.len();
    let keep = |k: usize, out: &mut HistoryOut| {
        let newest = &order[n - k..];
        out.phases = newest
            .iter()
            .filter(|(_, _, decision, _)| !decision)
            .map(|&(_, _, _, i)| phases[i].clone())
            .collect();
        out.decisions = newest
            .iter()
            .filter(|(_, _, decision, _)| *decision)
            .map(|&(_, _, _, i)| decisions[i].clone())
            .collect();
        out.phases_omitted = phases.len() - out.phases.len();
        out.decisions_omitted = decisions.len() - out.decisions.len();
    };
    let kept = reply::keep_within(n, |k| {
        keep(k, out);
        fits(out)
    });
    keep(kept, out);
}

/// Keeps as much of the detail's manifest, from its start, as fits.
fn cut_detail(out: &mut HistoryOut, fits: &dyn Fn(&HistoryOut) -> bool) {
    let Some(mut d) = out.detail.take() else {
        return;
    };
    let all = std::mem::take(&mut d.manifest);
    let n = all.len();
    let mut trial = out.clone();
    let kept = reply::keep_within(n, |k| {
        d.manifest = all[..k].to_vec();
        d.manifest_omitted = n - k;
        trial.detail = Some(d.clone());
        fits(&trial)
    });
    d.manifest = all[..kept].to_vec();
    d.manifest_omitted = n - kept;
    out.detail = Some(d);
}
