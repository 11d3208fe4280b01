//! [`Assembly`]: one assembly in progress — what every stage reads and the log of their
//! reports — with one method per stage, in pipeline order, each a call on its component
//! (a trait in [`crate::stages`]) with typed input and output. After the first pass of stages
//! 7–9, [`Assembly::refill`] runs them again in the room the first layout left.

use std::collections::{HashMap, HashSet};

use acms_core::StrategyId;
use acms_pack::{Candidate, PackItem, Packing, Verified, VerifyOutcome, verify_and_trim};
use acms_retrieve::{Execution, Hit, Query, Retriever};

use crate::budget::{pack_tokens, preamble_reserve};
use crate::error::Result;
use crate::layout::{Layout, Page, Sources};
use crate::pipeline::Pipeline;
use crate::stage_log::{Stage, StageLog};
use crate::stages::StageContext;
use crate::stages::packer::{leftovers, pack_unenclosed};
use crate::stages::preamble::Provenance;
use crate::stages::selector::{Selection, StrategyInfo};
use crate::types::{Dropped, Fragment, Placed, Skeleton, StageReport};

/// The least room under the budget worth packing again for (stages 7–9 cost a few
/// milliseconds; a signature with its header is about 20 tokens).
const REFILL_MIN_TOKENS: u32 = 48;

/// One assembly's run through the ten stages.
pub(crate) struct Assembly<'a> {
    ctx: &'a StageContext<'a>,
    pipeline: &'a Pipeline,
    /// The budget is under the useful minimum: nothing is selected and nothing compressed,
    /// so every stage runs on nothing.
    skipped: bool,
    log: StageLog,
    sources: Sources<'a>,
}

/// Stage 7's result.
pub(crate) struct Packed {
    /// One knapsack candidate per fragment, priced for the fragments' budget.
    pub candidates: Vec<Candidate>,
    /// What the preamble's reserve leaves of the fragments' budget: the packer's budget.
    pub budget: u32,
    pub packing: Packing,
    /// Fragments left out of the packing because an enclosing fragment shows them.
    pub enclosed: Vec<usize>,
}

/// One packing ordered, laid out and verified (stages 8 and 9).
pub(crate) struct Laid {
    /// The packed fragments in context order, at their depths as packed.
    pub placed: Vec<Placed>,
    /// Fragments left out of the packing because an enclosing fragment shows them.
    enclosed: Vec<usize>,
    pub verified: Verified,
    /// Those of `enclosed` the verified text still shows: their enclosing fragment kept
    /// depth 9 through verification.
    pub shown: Vec<usize>,
}

impl Laid {
    /// The knapsack value of what survived verification.
    fn value(&self) -> f64 {
        self.verified.items.iter().map(|it| it.value).sum()
    }
}

impl<'a> Assembly<'a> {
    pub fn new(ctx: &'a StageContext<'a>, pipeline: &'a Pipeline, skipped: bool) -> Assembly<'a> {
        Assembly {
            ctx,
            pipeline,
            skipped,
            log: StageLog::new(pipeline),
            sources: Sources::new(ctx.store),
        }
    }

    /// The stages' reports, in pipeline order.
    pub fn into_reports(self) -> Vec<StageReport> {
        self.log.into_reports()
    }

    /// Stage 1: the strategies that run for `query`.
    pub fn select(&mut self, retriever: &Retriever, query: &Query) -> Vec<Selection> {
        let infos: Vec<StrategyInfo> = retriever
            .strategies()
            .iter()
            .map(|s| StrategyInfo {
                name: s.name().to_string(),
                max_quality: s.max_quality(),
                stage: s.stage(),
            })
            .collect();
        let selector = &self.pipeline.strategy_selector.component;
        let skipped = self.skipped;
        self.log.run(
            Stage::StrategySelector,
            infos.len(),
            || {
                if skipped {
                    Vec::new()
                } else {
                    selector.select(query, &infos)
                }
            },
            Vec::len,
        )
    }

    /// Stage 2: each selected strategy's share of `budget`.
    pub fn allocate(&mut self, selected: &[Selection], budget: u32) -> HashMap<StrategyId, u32> {
        let allocator = &self.pipeline.budget_allocator.component;
        self.log.run(
            Stage::BudgetAllocator,
            selected.len(),
            || allocator.allocate(budget, selected),
            HashMap::len,
        )
    }

    /// Stage 3: the selected strategies' hits.
    pub fn execute(
        &mut self,
        retriever: &Retriever,
        query: &Query,
        selected: &[Selection],
        shares: &HashMap<StrategyId, u32>,
        budget: u32,
    ) -> Execution {
        let executor = &self.pipeline.strategy_executor.component;
        self.log.run(
            Stage::StrategyExecutor,
            selected.len(),
            || executor.execute(retriever, query, selected, shares, budget),
            |e| e.hits.len(),
        )
    }

    /// Stage 4: one fragment per node, and the duplicates dropped.
    pub fn dedup(&mut self, hits: Vec<Hit>) -> (Vec<Fragment>, Vec<Dropped>) {
        let dedup = &self.pipeline.fragment_deduplicator.component;
        let ctx = self.ctx;
        self.log.run(
            Stage::FragmentDeduplicator,
            hits.len(),
            || dedup.dedup(ctx, hits),
            |(f, _)| f.len(),
        )
    }

    /// Stage 5: the deepest depth each fragment is offered at.
    pub fn resolve(&mut self, mut fragments: Vec<Fragment>) -> Vec<Fragment> {
        let resolver = &self.pipeline.detail_depth_resolver.component;
        let ctx = self.ctx;
        self.log.run(
            Stage::DetailDepthResolver,
            fragments.len(),
            || {
                resolver.resolve(ctx, &mut fragments);
                fragments
            },
            Vec::len,
        )
    }

    /// Stage 6: each fragment's relevance and score.
    pub fn score(&mut self, mut fragments: Vec<Fragment>) -> Vec<Fragment> {
        let scorer = &self.pipeline.fragment_scorer.component;
        let ctx = self.ctx;
        self.log.run(
            Stage::FragmentScorer,
            fragments.len(),
            || {
                scorer.score(ctx, &mut fragments);
                fragments
            },
            Vec::len,
        )
    }

    /// The room to keep for the preamble before packing: stage 9's component drafts it as if
    /// all `fragments` were included (its longest form), and the reserve is what the draft
    /// costs (its time counts as stage 9's).
    pub fn preamble_reserve(&mut self, provenance: &Provenance, fragments: usize) -> u32 {
        let mut longest = provenance.clone();
        longest.by_depth = [fragments; 4];
        longest.files = fragments;
        longest.dropped_budget = fragments;
        let generator = &self.pipeline.preamble_generator.component;
        let ctx = self.ctx;
        let draft = self.log.run(
            Stage::PreambleGenerator,
            fragments,
            || generator.preamble(ctx, &longest, ctx.config.preamble.max_tokens),
            |_| 0,
        );
        preamble_reserve(&draft, ctx.counter)
    }

    /// Stage 7: the knapsack candidates of `fragments` priced for `budget`, packed into what
    /// the preamble's `reserve` leaves of it.
    pub fn pack(&mut self, fragments: &[Fragment], budget: u32, reserve: u32) -> Packed {
        let packer = &self.pipeline.budget_packer.component;
        let ctx = self.ctx;
        let candidates = self.log.run(
            Stage::BudgetPacker,
            fragments.len(),
            || packer.candidates(ctx, fragments, budget),
            |_| 0,
        );
        let budget = budget.saturating_sub(reserve);
        let (packing, enclosed) = self.pack_candidates(fragments, &candidates, budget);
        Packed {
            candidates,
            budget,
            packing,
            enclosed,
        }
    }

    /// Stage 7's packing of `candidates` (one per fragment) into `budget`, without the
    /// fragments an enclosing fragment packed at depth 9 shows.
    fn pack_candidates(
        &mut self,
        fragments: &[Fragment],
        candidates: &[Candidate],
        budget: u32,
    ) -> (Packing, Vec<usize>) {
        let packer = self.pipeline.budget_packer.component.as_ref();
        let ctx = self.ctx;
        self.log.run(
            Stage::BudgetPacker,
            fragments.len(),
            || pack_unenclosed(ctx, packer, fragments, candidates, budget),
            |(packing, _)| packing.items.len(),
        )
    }

    /// Stage 8: the packed `items` (in candidate order) as fragments in context order.
    pub fn order(&mut self, fragments: &[Fragment], items: &[PackItem]) -> Vec<Placed> {
        let mut placed: Vec<Placed> = items
            .iter()
            .map(|it| Placed {
                fragment: fragments[it.candidate].clone(),
                depth: it.depth,
            })
            .collect();
        let orderer = &self.pipeline.fragment_orderer.component;
        let ctx = self.ctx;
        self.log.run(
            Stage::FragmentOrderer,
            items.len(),
            || {
                orderer.order(ctx, &mut placed);
                placed
            },
            Vec::len,
        )
    }

    /// Stage 9: `placed` laid out under its preamble and verified against the whole budget
    /// (the preamble reports what ends up included, so it is written for every rendering the
    /// verifier counts).
    pub fn lay_out(
        &mut self,
        page: &Page<'_>,
        placed: Vec<Placed>,
        items: &[PackItem],
        enclosed: Vec<usize>,
    ) -> Result<Laid> {
        let generator = self.pipeline.preamble_generator.component.as_ref();
        let mut layout = Layout::new(page, generator, &placed, &enclosed, &mut self.sources);
        let verified = self.log.run(
            Stage::PreambleGenerator,
            items.len(),
            || {
                verify_and_trim(
                    page.candidates,
                    items,
                    page.total,
                    |items| layout.render(items),
                    |s| page.ctx.counter.count(s),
                )
            },
            |v| v.as_ref().map_or(0, |v| v.items.len()),
        )?;
        let shown = layout.into_shown();
        Ok(Laid {
            placed,
            enclosed,
            verified,
            shown,
        })
    }

    /// Stages 7–9 again, in the room `laid` left: the packer pays each fragment's header, but
    /// fragments of one file share a block and its header, so the text is usually a few
    /// hundred tokens under the budget. Packs what `laid` left out into that room, keeping
    /// everything it holds, and keeps the new layout if it is worth more. Returns the layout
    /// kept and how many fragments the refill added to it; the reports of stages 7–9 count
    /// what the kept layout holds.
    pub fn refill(&mut self, page: &Page<'_>, laid: Laid) -> Result<(Laid, usize)> {
        let (laid, refilled) = self.refill_pass(page, laid)?;
        self.log.set_output(Stage::BudgetPacker, laid.placed.len());
        self.log
            .set_output(Stage::FragmentOrderer, laid.placed.len());
        self.log
            .set_output(Stage::PreambleGenerator, laid.verified.items.len());
        Ok((laid, refilled))
    }

    fn refill_pass(&mut self, page: &Page<'_>, laid: Laid) -> Result<(Laid, usize)> {
        let room = page.total.saturating_sub(pack_tokens(laid.verified.tokens));
        if laid.verified.outcome != VerifyOutcome::Fits || room < REFILL_MIN_TOKENS {
            return Ok((laid, 0));
        }
        let rest = leftovers(
            self.ctx,
            page.fragments,
            page.candidates,
            &laid.verified.items,
        );
        let (more, more_enclosed) = self.pack_candidates(page.fragments, &rest, room);
        if more.items.is_empty() {
            return Ok((laid, 0));
        }
        let added: HashSet<usize> = more.items.iter().map(|it| it.candidate).collect();
        let mut items = laid.verified.items.clone();
        items.extend(more.items);
        items.sort_by_key(|it| it.candidate);
        let mut enclosed = laid.enclosed.clone();
        enclosed.extend(more_enclosed);
        let placed = self.order(page.fragments, &items);
        let again = self.lay_out(page, placed, &items, enclosed)?;
        if again.value() <= laid.value() {
            return Ok((laid, 0));
        }
        let refilled = again
            .verified
            .items
            .iter()
            .filter(|it| added.contains(&it.candidate))
            .count();
        Ok((again, refilled))
    }

    /// Stage 10: `placed` (as verification kept it) compressed to a skeleton of at most
    /// `target` tokens, for child plans.
    pub fn compress(&mut self, placed: &[Placed], target: usize) -> Skeleton {
        let compressor = &self.pipeline.skeleton_compressor.component;
        let ctx = self.ctx;
        let skipped = self.skipped;
        self.log.run(
            Stage::SkeletonCompressor,
            placed.len(),
            || {
                if skipped {
                    Skeleton::default()
                } else {
                    compressor.compress(ctx, placed, target)
                }
            },
            |s| s.nodes.len(),
        )
    }
}
