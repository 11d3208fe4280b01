//! `simple-keyword`: BM25 over the tantivy index of node names, paths, signatures, docs,
//! split identifiers and bodies (`acms-keyword`).

use std::sync::Arc;

use acms_core::{Depth, StrategyId};
use acms_index::NodeKind;
use acms_keyword::KeywordIndex;

use crate::{Hit, Reason, Result, Strategy, StrategyInput};

/// The keyword strategy over a shared [`KeywordIndex`].
pub struct KeywordStrategy {
    index: Arc<KeywordIndex>,
}

impl KeywordStrategy {
    pub fn new(index: Arc<KeywordIndex>) -> KeywordStrategy {
        KeywordStrategy { index }
    }
}

/// Extra weight of a term from an identifier the task shows in code (times its reading
/// weight): such a term names code, a prose word only describes it.
const IDENTIFIER_EMPHASIS: f32 = 1.0;

/// Extra weight of a term of the task's title (its first line, when more follows): a bug
/// report's or commit's subject states what is wrong in a few words, the text under it
/// narrates. Measured on the SWE-bench dev tasks (docs/EVAL.md, "A title weighs more"):
/// 0.25 / 0.5 / 1.0 gave changed lines 0.54 / 0.55 / 0.51 at 4k and gold symbols
/// 0.71 / 0.73 / 0.71 at 16k.
const TITLE_EMPHASIS: f32 = 0.5;

/// Extra weight of a word naming an operation the task's code applies (`pow` for `a**b`,
/// see `task::OPERATIONS`): implied by code rather than written, so between a prose word and
/// an identifier, and always in the query like both. Measured on the SWE-bench dev tasks
/// (docs/EVAL.md, "An operator in the task's code names the code that implements it"): as a
/// plain prose word, gold symbols at 16k were 0.823; at 0.5, 0.831 and one more file named.
const OPERATION_EMPHASIS: f32 = 0.5;

/// How many keyword hits are worth fetching for a token share. More than [`hit_limit`]:
/// BM25 over a long issue text ranks tests and examples that share its sample code high,
/// and the scorer (which demotes them) needs the source symbols below them in the pool.
fn keyword_limit(budget: u32) -> usize {
    (budget as usize / 16).clamp(50, 600)
}

/// How many hits a strategy returns for a token share: enough to fill it at shallow depths.
pub(crate) fn hit_limit(budget: u32) -> usize {
    (budget as usize / 40).clamp(20, 300)
}

/// The depth a strategy proposes for a node: whole files and containers start at their
/// skeleton, everything else at full source; the packer falls back from there.
pub(crate) fn proposed_depth(kind: NodeKind) -> Depth {
    match kind {
        NodeKind::Module => Depth::Skeleton,
        _ => Depth::Full,
    }
}

/// A hit on the node `id` at the depth proposed for its kind; `None` when the id is not in
/// the corpus (a derived index a little out of step with the store).
pub(crate) fn hit_on(
    corpus: &crate::Corpus,
    id: u64,
    relevance: f32,
    strategy: StrategyId,
    reason: Reason,
) -> Option<Hit> {
    let node = corpus.node(acms_core::NodeId(id))?;
    Some(Hit {
        node: node.id,
        depth: proposed_depth(node.kind),
        relevance: relevance.clamp(0.0, 1.0),
        strategy,
        reason,
    })
}

impl Strategy for KeywordStrategy {
    fn name(&self) -> &str {
        StrategyId::Keyword.as_str()
    }

    fn max_quality(&self) -> f32 {
        0.8
    }

    fn retrieve(&self, input: &StrategyInput) -> Result<Vec<Hit>> {
        let q = input.query();
        let mut text = q.text.clone();
        for s in &q.mentioned_symbols {
            text.push(' ');
            text.push_str(s);
        }
        let reading = input.reading();
        // Identifiers the task shows in code count more than its prose, and are always in
        // the query however common their words are.
        let mut emphasis: Vec<(String, f32)> = reading
            .identifiers
            .iter()
            .map(|(name, w)| (name.clone(), 1.0 + IDENTIFIER_EMPHASIS * w))
            .collect();
        // So do the operations its code applies, and its title, above the narrative.
        emphasis.extend(
            reading
                .operations
                .iter()
                .map(|w| (w.to_string(), 1.0 + OPERATION_EMPHASIS)),
        );
        emphasis.extend(
            reading
                .title
                .iter()
                .map(|t| (t.clone(), 1.0 + TITLE_EMPHASIS)),
        );
        let found = self
            .index
            .search_with(&text, &emphasis, keyword_limit(input.budget))?;
        // Relevance is measured from the best hit in ordinary source (hits come best first): a
        // test named after the task's words (`ErrorDeserializing`) would otherwise set a bar
        // that pushes the source it tests under the minimum relevance.
        let corpus = &input.corpus;
        let best = found
            .iter()
            .find(|h| {
                corpus
                    .node(acms_core::NodeId(h.id))
                    .is_some_and(|n| corpus.node_place(n) == crate::Place::Source)
            })
            .map_or(0.0, |h| h.score);
        Ok(found
            .into_iter()
            .map(|mut h| {
                if best > 0.0 {
                    h.relevance = h.score / best;
                }
                h
            })
            .filter_map(|h| {
                let reason = Reason::Terms {
                    terms: h.matched_terms,
                };
                hit_on(
                    &input.corpus,
                    h.id,
                    h.relevance,
                    StrategyId::Keyword,
                    reason,
                )
            })
            .collect())
    }
}
