//! What an assembly reports besides its text: what the preamble reports that is known before
//! packing ([`provenance`]), the placement verification kept ([`placement`]), why each
//! fragment left out was dropped ([`budget_drops`]), the manifest, the packer's report and
//! the notes.

use std::collections::{HashMap, HashSet};

use acms_core::{Depth, NodeId};
use acms_pack::{PackItem, Packing, Verified, VerifyOutcome};
use acms_retrieve::{Execution, RunStatus};

use crate::stages::StageContext;
use crate::stages::preamble::Provenance;
use crate::types::{DropReason, Dropped, Fragment, ManifestEntry, PackReport, Placed};

/// What the preamble reports, known before packing (what is included is filled in per
/// layout).
pub(crate) fn provenance(
    execution: &Execution,
    fragments: usize,
    dropped: &[Dropped],
    inherited_tokens: usize,
    skipped: Option<String>,
) -> Provenance {
    Provenance {
        considered: fragments + dropped.len(),
        dropped_duplicate: dropped.len(),
        dropped_relevance: execution
            .runs
            .iter()
            .map(|r| match r.status {
                RunStatus::Ok { hits, kept } => hits - kept,
                _ => 0,
            })
            .sum(),
        strategies: execution
            .runs
            .iter()
            .map(|r| {
                let what = match &r.status {
                    RunStatus::Ok { kept, .. } => format!("{kept} hits"),
                    RunStatus::Failed { .. } => "failed".into(),
                    RunStatus::Panicked => "panicked".into(),
                    RunStatus::TimedOut => "timed out".into(),
                    RunStatus::CircuitOpen => "circuit open".into(),
                };
                (r.strategy.clone(), what)
            })
            .collect(),
        inherited_tokens: (inherited_tokens > 0).then_some(inherited_tokens),
        skipped,
        ..Provenance::default()
    }
}

/// The depth verification kept each included node at.
pub(crate) fn kept(items: &[PackItem]) -> HashMap<NodeId, Depth> {
    items.iter().map(|it| (NodeId(it.id), it.depth)).collect()
}

/// `placed` (in context order) as verification left it: at the depths it `kept`, without
/// what it dropped.
pub(crate) fn placement(placed: Vec<Placed>, kept: &HashMap<NodeId, Depth>) -> Vec<Placed> {
    placed
        .into_iter()
        .filter_map(|mut pl| {
            pl.depth = *kept.get(&pl.fragment.node)?;
            Some(pl)
        })
        .collect()
}

/// The fragments not `kept`, in fragment order: enclosed when an enclosing fragment still
/// shows them (`shown`, positions in `fragments`), else one more that did not fit.
pub(crate) fn budget_drops(
    fragments: &[Fragment],
    kept: &HashMap<NodeId, Depth>,
    shown: &[usize],
) -> Vec<Dropped> {
    let shown: HashSet<usize> = shown.iter().copied().collect();
    fragments
        .iter()
        .enumerate()
        .filter(|(_, f)| !kept.contains_key(&f.node))
        .map(|(i, f)| Dropped {
            node: f.node,
            reason: if shown.contains(&i) {
                DropReason::Enclosed
            } else {
                DropReason::Budget
            },
            score: f.score,
        })
        .collect()
}

/// The manifest line of a placed fragment (`None` for a node the corpus no longer holds).
pub(crate) fn manifest_entry(ctx: &StageContext<'_>, pl: &Placed) -> Option<ManifestEntry> {
    let n = ctx.corpus.node(pl.fragment.node)?;
    let mut strategies: Vec<String> = pl
        .fragment
        .hits
        .iter()
        .map(|h| h.strategy.to_string())
        .collect();
    strategies.sort();
    strategies.dedup();
    Some(ManifestEntry {
        node: n.id,
        path: n.path.clone(),
        start_line: n.start_line,
        end_line: n.end_line,
        name: n.qualified_name.clone(),
        kind: n.kind.name().to_string(),
        depth: pl.depth,
        tokens: pl.fragment.cost[pl.depth.index()],
        score: pl.fragment.score,
        strategies,
        reasons: pl.fragment.hits.iter().map(|h| h.reason.clone()).collect(),
    })
}

/// What `packer` achieved in the first packing, and what verification and the refill
/// changed of it.
pub(crate) fn pack_report(
    packer: &str,
    packing: &Packing,
    verified: &Verified,
    refilled: usize,
) -> PackReport {
    PackReport {
        packer: packer.to_string(),
        value: packing.value,
        upper_bound: packing.upper_bound,
        certified_gap: packing.certified_gap,
        verify_downgrades: verified.downgraded,
        verify_drops: verified.dropped,
        refilled,
    }
}

/// The text to send and its exact count: nothing when even an empty context is over the
/// budget.
pub(crate) fn sent(verified: Verified) -> (String, usize) {
    match verified.outcome {
        VerifyOutcome::EmptyOverBudget => (String::new(), 0),
        _ => (verified.text, verified.tokens),
    }
}

/// The engine's `notes`, then why the assembly was `skipped` or why even an empty context
/// did not fit the `total` budget.
pub(crate) fn notes(
    notes: &[String],
    skipped: Option<&str>,
    total: usize,
    outcome: VerifyOutcome,
) -> Vec<String> {
    let mut notes = notes.to_vec();
    if let Some(why) = skipped {
        notes.push(format!("assembly skipped: {why}"));
    }
    if outcome == VerifyOutcome::EmptyOverBudget {
        notes.push(format!(
            "budget {total} is smaller than an empty context: nothing sent"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(node: u64, score: f64) -> Fragment {
        Fragment {
            node: NodeId(node),
            hits: Vec::new(),
            max_depth: Depth::Full,
            cost: [1, 2, 3, 4],
            relevance: score,
            score,
        }
    }

    #[test]
    fn placement_keeps_context_order_at_the_verified_depths() {
        let placed: Vec<Placed> = [3, 1, 2]
            .map(|n| Placed {
                fragment: fragment(n, 0.5),
                depth: Depth::Full,
            })
            .into();
        let kept = HashMap::from([(NodeId(1), Depth::Signature), (NodeId(3), Depth::Full)]);
        let got: Vec<(u64, Depth)> = placement(placed, &kept)
            .iter()
            .map(|pl| (pl.fragment.node.0, pl.depth))
            .collect();
        assert_eq!(got, [(3, Depth::Full), (1, Depth::Signature)]);
    }

    #[test]
    fn a_fragment_left_out_is_enclosed_only_while_its_parent_shows_it() {
        let fragments = [fragment(1, 0.9), fragment(2, 0.5), fragment(3, 0.4)];
        let kept = HashMap::from([(NodeId(1), Depth::Full)]);
        let drops = budget_drops(&fragments, &kept, &[2]);
        let got: Vec<(u64, DropReason, f64)> = drops
            .iter()
            .map(|d| (d.node.0, d.reason, d.score))
            .collect();
        assert_eq!(
            got,
            [(2, DropReason::Budget, 0.5), (3, DropReason::Enclosed, 0.4)]
        );
    }
}
