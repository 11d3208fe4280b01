//! Stage 9, PreambleGenerator: the provenance note at the top of the context — what was
//! considered, what is included at which depth, what was dropped and why, which strategies
//! ran — within `context.preamble.max-tokens` (200).

use acms_core::StrategyId;
use serde::{Deserialize, Serialize};

use super::StageContext;

/// The facts a preamble reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Included fragments per depth, indexed by `Depth::index` (0, 2, 4, 9).
    pub by_depth: [usize; 4],
    pub files: usize,
    pub considered: usize,
    pub dropped_budget: usize,
    pub dropped_relevance: usize,
    pub dropped_duplicate: usize,
    /// (strategy, hits kept, or why it gave none).
    pub strategies: Vec<(StrategyId, String)>,
    /// Tokens of the inherited parent skeleton, if any.
    pub inherited_tokens: Option<usize>,
    /// Why assembly was skipped, if it was.
    pub skipped: Option<String>,
}

/// Stage 9.
pub trait PreambleGenerator: Send + Sync {
    /// The preamble for `p`, at most `max_tokens` tokens (exactly counted).
    fn preamble(&self, ctx: &StageContext<'_>, p: &Provenance, max_tokens: usize) -> String;
}

/// A few plain lines, least important last so trimming drops them first.
pub struct ProvenancePreamble;

impl PreambleGenerator for ProvenancePreamble {
    fn preamble(&self, ctx: &StageContext<'_>, p: &Provenance, max_tokens: usize) -> String {
        let included: usize = p.by_depth.iter().sum();
        let mut lines = Vec::new();
        if let Some(why) = &p.skipped {
            lines.push(format!("[acms] context assembly skipped: {why}"));
        } else if included == 0 {
            lines.push(format!(
                "[acms] no indexed code matched this task ({} candidates considered).",
                p.considered
            ));
        } else {
            lines.push(format!(
                "[acms] {included} fragments from {} files (depth 9: {}, 4: {}, 2: {}, 0: {}) of {} considered.",
                p.files, p.by_depth[3], p.by_depth[2], p.by_depth[1], p.by_depth[0], p.considered
            ));
        }
        if let Some(t) = p.inherited_tokens {
            lines.push(format!("[acms] inherited parent skeleton: {t} tokens."));
        }
        if p.dropped_budget + p.dropped_relevance + p.dropped_duplicate > 0 {
            lines.push(format!(
                "[acms] dropped: {} over budget, {} below relevance {}, {} duplicates.",
                p.dropped_budget,
                p.dropped_relevance,
                ctx.config.query.min_relevance,
                p.dropped_duplicate
            ));
        }
        if !p.strategies.is_empty() {
            let s: Vec<String> = p
                .strategies
                .iter()
                .map(|(n, r)| format!("{n} {r}"))
                .collect();
            lines.push(format!("[acms] strategies: {}.", s.join(", ")));
        }
        // Drop the least important lines, then shorten the first, until it fits.
        while !lines.is_empty() {
            let text = lines.join("\n");
            if ctx.counter.count(&text) <= max_tokens {
                return text;
            }
            if lines.len() > 1 {
                lines.pop();
            } else {
                let first = &mut lines[0];
                let keep = first.chars().count() / 2;
                *first = first.chars().take(keep).collect();
                if keep == 0 {
                    lines.clear();
                }
            }
        }
        String::new()
    }
}
