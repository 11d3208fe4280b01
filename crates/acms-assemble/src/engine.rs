//! [`Engine`]: one opened index plus a configured pipeline; [`Engine::assemble`] runs the
//! ten stages in order and verifies the budget on the final text.
//!
//! **Architecture Invariant:** every stage runs on every assembly (possibly on empty input),
//! and the returned `text`, counted exactly with the configured tokenizer, is never over the
//! budget: after rendering, fragments are downgraded or dropped until it fits, and if even an
//! empty context does not fit the text is empty.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use acms_core::{ContextConfig, Depth, ExactCounter, NodeId, TokenCounter};
use acms_index::Store;
use acms_llm::LlmClient;
use acms_pack::{PackItem, VerifyOutcome, verify_and_trim};
use acms_retrieve::{Retriever, RunStatus, StrategyRegistry};

use crate::stages::StageContext;
use crate::stages::preamble::Provenance;
use crate::stages::selector::StrategyInfo;
use crate::{
    AssembledContext, AssemblyRequest, Budget, Diagnostics, DropReason, Dropped, ManifestEntry,
    PackReport, Pipeline, PipelineRegistry, Placed, Result, Skeleton, StageReport, render,
};

/// An opened index with its retriever and pipeline.
pub struct Engine {
    config: ContextConfig,
    store: Store,
    retriever: Retriever,
    pipeline: Pipeline,
    counter: ExactCounter,
    quality: HashMap<String, f32>,
    notes: Vec<String>,
}

impl Engine {
    /// Opens `index_dir` with the default strategy and pipeline registries; ARCE gets an
    /// HTTP client when `context.llm.base-url` is set.
    pub fn open(index_dir: &Path, config: &ContextConfig) -> Result<Engine> {
        let llm: Option<Arc<dyn LlmClient>> = match &config.llm.base_url {
            Some(_) => acms_llm::HttpClient::from_config(&config.llm)
                .ok()
                .map(|c| Arc::new(c) as Arc<dyn LlmClient>),
            None => None,
        };
        Engine::open_with(
            index_dir,
            config,
            &StrategyRegistry::new(),
            &PipelineRegistry::default(),
            llm,
        )
    }

    /// Opens `index_dir` with custom strategies, pipeline components and language model.
    pub fn open_with(
        index_dir: &Path,
        config: &ContextConfig,
        strategies: &StrategyRegistry,
        components: &PipelineRegistry,
        llm: Option<Arc<dyn LlmClient>>,
    ) -> Result<Engine> {
        let store = Store::open(index_dir)?;
        let meta = store.meta()?;
        let retriever = Retriever::open(index_dir, config, strategies, llm)?;
        let mut notes = retriever.notes().to_vec();
        if !meta.repo_root.as_os_str().is_empty() && !meta.repo_root.is_dir() {
            notes.push(format!(
                "the indexed repository {} is not on this machine: texts come from the index",
                meta.repo_root.display()
            ));
        }
        if meta.tokenizer != config.tokenizer.name() {
            notes.push(format!(
                "index counts were made with {}, budgets are verified with {}",
                meta.tokenizer,
                config.tokenizer.name()
            ));
        }
        let quality = retriever
            .strategies()
            .iter()
            .map(|s| (s.name().to_string(), s.max_quality()))
            .collect();
        Ok(Engine {
            pipeline: components.pipeline(&config.pipeline)?,
            counter: config.tokenizer.counter(),
            config: config.clone(),
            store,
            retriever,
            quality,
            notes,
        })
    }

    /// The retriever (strategies, corpus, executor).
    pub fn retriever(&self) -> &Retriever {
        &self.retriever
    }

    /// The index store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// `context.budget.refresh-threshold`.
    pub fn refresh_threshold(&self) -> f64 {
        self.config.budget.refresh_threshold
    }

    /// The token budget for `budget` before any inherited skeleton.
    pub fn budget_tokens(&self, budget: Budget) -> usize {
        match budget {
            Budget::Tokens(n) => n,
            Budget::Window {
                model_context_window,
                tool_definitions,
            } => model_context_window
                .saturating_sub(self.config.budget.response_reserve)
                .saturating_sub(tool_definitions),
        }
    }

    /// Runs the ten stages for `request`.
    pub fn assemble(&self, request: &AssemblyRequest) -> Result<AssembledContext> {
        Ok(self.assemble_with_instance(request)?.0)
    }

    /// [`Engine::assemble`], also returning the knapsack instance the packer solved (its
    /// candidates and token budget) — for benchmarks that compare packers on real data.
    pub fn assemble_with_instance(
        &self,
        request: &AssemblyRequest,
    ) -> Result<(AssembledContext, Vec<acms_pack::Candidate>, u32)> {
        let started = Instant::now();
        let p = &self.pipeline;
        let ctx = StageContext {
            corpus: self.retriever.corpus(),
            store: &self.store,
            counter: &self.counter,
            config: &self.config,
            strategy_quality: &self.quality,
        };
        let total = self.budget_tokens(request.budget);
        let mut diagnostics = Diagnostics {
            notes: self.notes.clone(),
            ..Diagnostics::default()
        };
        let skipped = (total < self.config.budget.min_useful_budget).then(|| {
            format!(
                "budget {total} is below context.budget.min-useful-budget ({})",
                self.config.budget.min_useful_budget
            )
        });

        // Inherited skeleton: at most skeleton-ratio of the budget.
        let inherited = match (&request.parent, &skipped) {
            (Some(parent), None) => {
                let allowance = (total as f64 * self.config.budget.skeleton_ratio) as usize;
                fit_lines(&parent.text, allowance, &self.counter)
            }
            _ => String::new(),
        };
        let inherited_tokens = self.counter.count(&inherited);

        let mut stage = |name: &'static str, implementation: &str, t: Instant, input, output| {
            diagnostics.stages.push(StageReport {
                stage: name.to_string(),
                implementation: implementation.to_string(),
                millis: t.elapsed().as_secs_f64() * 1000.0,
                input,
                output,
            });
        };

        // 1. StrategySelector
        let t = Instant::now();
        let infos: Vec<StrategyInfo> = self
            .retriever
            .strategies()
            .iter()
            .map(|s| StrategyInfo {
                name: s.name().to_string(),
                max_quality: s.max_quality(),
                stage: s.stage(),
            })
            .collect();
        let mut selected = p.strategy_selector.1.select(&request.query, &infos);
        if skipped.is_some() {
            selected.clear();
        }
        stage(
            "strategy-selector",
            &p.strategy_selector.0,
            t,
            infos.len(),
            selected.len(),
        );

        // 2. BudgetAllocator
        let t = Instant::now();
        let fragment_budget = total.saturating_sub(inherited_tokens) as u32;
        let shares = p.budget_allocator.1.allocate(fragment_budget, &selected);
        stage(
            "budget-allocator",
            &p.budget_allocator.0,
            t,
            selected.len(),
            shares.len(),
        );

        // 3. StrategyExecutor
        let t = Instant::now();
        let execution = p.strategy_executor.1.execute(
            &self.retriever,
            &request.query,
            &selected,
            &shares,
            fragment_budget,
        );
        stage(
            "strategy-executor",
            &p.strategy_executor.0,
            t,
            selected.len(),
            execution.hits.len(),
        );

        // 4. FragmentDeduplicator
        let t = Instant::now();
        let n_hits = execution.hits.len();
        let (mut fragments, mut dropped) = p.fragment_deduplicator.1.dedup(&ctx, execution.hits);
        stage(
            "fragment-deduplicator",
            &p.fragment_deduplicator.0,
            t,
            n_hits,
            fragments.len(),
        );

        // 5. DetailDepthResolver
        let t = Instant::now();
        p.detail_depth_resolver.1.resolve(&ctx, &mut fragments);
        stage(
            "detail-depth-resolver",
            &p.detail_depth_resolver.0,
            t,
            fragments.len(),
            fragments.len(),
        );

        // 6. FragmentScorer
        let t = Instant::now();
        p.fragment_scorer.1.score(&ctx, &mut fragments);
        stage(
            "fragment-scorer",
            &p.fragment_scorer.0,
            t,
            fragments.len(),
            fragments.len(),
        );

        // Provenance known before packing; depths are filled in after.
        let provenance = Provenance {
            considered: fragments.len() + dropped.len(),
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
            skipped: skipped.clone(),
            ..Provenance::default()
        };
        let max_preamble = self.config.preamble.max_tokens;

        // 7. BudgetPacker
        let t = Instant::now();
        let candidates = p.budget_packer.1.candidates(&ctx, &fragments);
        // Reserve what the preamble will cost (drafted with every fragment included, its
        // longest form) plus the blank lines joining the parts.
        let draft = {
            let mut d = provenance.clone();
            d.by_depth = [fragments.len(); 4];
            d.files = fragments.len();
            d.dropped_budget = fragments.len();
            p.preamble_generator.1.preamble(&ctx, &d, max_preamble)
        };
        let reserve = self.counter.count(&draft) + 4;
        let pack_budget = fragment_budget.saturating_sub(reserve as u32);
        let packing = p.budget_packer.1.pack(&candidates, pack_budget);
        stage(
            "budget-packer",
            &p.budget_packer.0,
            t,
            candidates.len(),
            packing.items.len(),
        );

        // 8. FragmentOrderer
        let t = Instant::now();
        let mut placed: Vec<Placed> = packing
            .items
            .iter()
            .map(|it| Placed {
                fragment: fragments[it.candidate].clone(),
                depth: it.depth,
            })
            .collect();
        p.fragment_orderer.1.order(&ctx, &mut placed);
        stage(
            "fragment-orderer",
            &p.fragment_orderer.0,
            t,
            packing.items.len(),
            placed.len(),
        );
        // Context order of every candidate that was packed.
        let position: HashMap<NodeId, usize> = placed
            .iter()
            .enumerate()
            .map(|(i, pl)| (pl.fragment.node, i))
            .collect();

        // 9. PreambleGenerator — run inside the render used by verification, because the
        // preamble reports what ends up included.
        let t = Instant::now();
        let texts = std::cell::RefCell::new(HashMap::<(NodeId, Depth), String>::new());
        let text_of = |node: NodeId, depth: Depth| -> String {
            texts
                .borrow_mut()
                .entry((node, depth))
                .or_insert_with(|| self.store.text(node, depth).unwrap_or_default())
                .clone()
        };
        let preamble_for = |items: &[PackItem]| -> String {
            let mut prov = provenance.clone();
            let mut files = std::collections::HashSet::new();
            for it in items {
                prov.by_depth[it.depth.index()] += 1;
                if let Some(n) = ctx.corpus.node(NodeId(it.id)) {
                    files.insert(n.path.as_str());
                }
            }
            prov.files = files.len();
            prov.dropped_budget = fragments.len() - items.len();
            p.preamble_generator.1.preamble(&ctx, &prov, max_preamble)
        };
        let render_items = |items: &[PackItem]| -> String {
            let mut ordered: Vec<&PackItem> = items.iter().collect();
            ordered.sort_by_key(|it| position.get(&NodeId(it.id)).copied().unwrap_or(usize::MAX));
            let parts: Vec<String> = ordered
                .iter()
                .filter_map(|it| {
                    let node = ctx.corpus.node(NodeId(it.id))?;
                    Some(render::fragment(
                        node,
                        it.depth,
                        &text_of(node.id, it.depth),
                    ))
                })
                .collect();
            render::context(&preamble_for(items), &inherited, &parts)
        };
        let count = |s: &str| self.counter.count(s);
        let verified = verify_and_trim(
            &candidates,
            &packing.items,
            total as u32,
            &render_items,
            &count,
        );
        let (text, tokens) = match verified.outcome {
            VerifyOutcome::EmptyOverBudget => (String::new(), 0),
            _ => (render_items(&verified.items), verified.tokens),
        };
        stage(
            "preamble-generator",
            &p.preamble_generator.0,
            t,
            verified.items.len(),
            1,
        );

        // Final placement after verification.
        let kept: HashMap<NodeId, Depth> = verified
            .items
            .iter()
            .map(|it| (NodeId(it.id), it.depth))
            .collect();
        let final_placed: Vec<Placed> = placed
            .into_iter()
            .filter_map(|mut pl| {
                pl.depth = *kept.get(&pl.fragment.node)?;
                Some(pl)
            })
            .collect();

        // 10. SkeletonCompressor
        let t = Instant::now();
        let target = (total as f64 * self.config.budget.skeleton_ratio) as usize;
        let skeleton = if skipped.is_some() {
            Skeleton::default()
        } else {
            p.skeleton_compressor
                .1
                .compress(&ctx, &final_placed, target)
        };
        stage(
            "skeleton-compressor",
            &p.skeleton_compressor.0,
            t,
            final_placed.len(),
            skeleton.nodes.len(),
        );

        for f in &fragments {
            if !kept.contains_key(&f.node) {
                dropped.push(Dropped {
                    node: f.node,
                    reason: DropReason::Budget,
                });
            }
        }
        dropped.sort_by_key(|d| (d.reason, d.node));
        let manifest = final_placed
            .iter()
            .filter_map(|pl| {
                let n = ctx.corpus.node(pl.fragment.node)?;
                let mut strategies: Vec<String> = pl
                    .fragment
                    .hits
                    .iter()
                    .map(|h| h.strategy.clone())
                    .collect();
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
            })
            .collect();
        if let Some(why) = &skipped {
            diagnostics.notes.push(format!("assembly skipped: {why}"));
        }
        if verified.outcome == VerifyOutcome::EmptyOverBudget {
            diagnostics.notes.push(format!(
                "budget {total} is smaller than an empty context: nothing sent"
            ));
        }
        diagnostics.strategies = execution.runs;
        diagnostics.pack = PackReport {
            packer: p.budget_packer.1.name().to_string(),
            value: packing.value,
            upper_bound: packing.upper_bound,
            certified_gap: packing.certified_gap,
            verify_downgrades: verified.downgraded,
            verify_drops: verified.dropped,
        };
        diagnostics.millis = started.elapsed().as_secs_f64() * 1000.0;
        let context = AssembledContext {
            text,
            tokens,
            budget: total,
            tokenizer: self.counter.name().to_string(),
            manifest,
            dropped,
            skeleton,
            diagnostics,
        };
        Ok((context, candidates, pack_budget))
    }
}

/// The longest prefix of whole lines of `text` within `max` tokens.
fn fit_lines(text: &str, max: usize, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= max {
        return text.to_string();
    }
    let lines: Vec<&str> = text.lines().collect();
    let (mut lo, mut hi) = (0, lines.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if counter.count(&lines[..mid].join("\n")) <= max {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lines[..lo].join("\n")
}
