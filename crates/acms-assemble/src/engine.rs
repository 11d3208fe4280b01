//! [`Engine`]: one opened index plus a configured pipeline; [`Engine::assemble`] runs the
//! ten stages in order and verifies the budget on the final text.
//!
//! Each stage is one call on its component (a trait in [`crate::stages`]) with typed input
//! and output; this module only threads the values from one stage to the next, records each
//! stage's timing in the diagnostics, and owns the two steps that span stages: reserving the
//! preamble's tokens before packing, and laying out, counting and trimming the final text.
//!
//! **Architecture Invariant:** every stage runs on every assembly (possibly on empty input),
//! and the returned `text`, counted exactly with the configured tokenizer, is never over the
//! budget: after rendering, fragments are downgraded or dropped until it fits, and if even an
//! empty context does not fit the text is empty.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use acms_core::{ContextConfig, Depth, ExactCounter, NodeId, TokenCounter};
use acms_index::Store;
use acms_llm::LlmClient;
use acms_pack::{Candidate, PackItem, Packing, Verified, VerifyOutcome, verify_and_trim};
use acms_retrieve::{Execution, Retriever, RunStatus, StrategyRegistry};

use crate::stages::StageContext;
use crate::stages::preamble::Provenance;
use crate::stages::selector::StrategyInfo;
use crate::{
    AssembledContext, AssemblyRequest, Budget, Diagnostics, DropReason, Dropped, Error, Fragment,
    ManifestEntry, PackReport, Pipeline, PipelineRegistry, Placed, Result, Skeleton, StageReport,
    render,
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

/// The knapsack instance an assembly solved (for benchmarks comparing packers on real data).
#[derive(Debug, Clone, Default)]
pub struct PackInstance {
    pub candidates: Vec<Candidate>,
    pub budget: u32,
}

/// Records one stage's report in the diagnostics.
struct StageLog<'d> {
    stages: &'d mut Vec<StageReport>,
}

impl StageLog<'_> {
    fn run<T>(
        &mut self,
        stage: &'static str,
        implementation: &str,
        input: usize,
        f: impl FnOnce() -> T,
        output: impl Fn(&T) -> usize,
    ) -> T {
        let t = Instant::now();
        let value = f();
        // A stage run again in the same assembly (the refill) adds to its report.
        if let Some(r) = self.stages.iter_mut().find(|r| r.stage == stage) {
            r.millis += t.elapsed().as_secs_f64() * 1000.0;
            r.input = input;
            r.output = output(&value);
            return value;
        }
        self.stages.push(StageReport {
            stage: stage.to_string(),
            implementation: implementation.to_string(),
            millis: t.elapsed().as_secs_f64() * 1000.0,
            input,
            output: output(&value),
        });
        value
    }

    /// Sets `stage`'s output count, for a stage that works in place.
    fn set_output(&mut self, stage: &str, output: usize) {
        if let Some(r) = self.stages.iter_mut().find(|r| r.stage == stage) {
            r.output = output;
        }
    }
}

/// The packer works in `u32` tokens; a larger budget can hold everything it could ever pack,
/// so it saturates rather than wrapping.
fn pack_tokens(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
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
        Engine::open_with_corpus(index_dir, config, strategies, components, llm, None)
    }

    /// [`Engine::open_with`] on a corpus the caller already holds (`None`: open the index's
    /// corpus on demand), e.g. one loaded whole ([`acms_retrieve::Corpus::load`]).
    pub fn open_with_corpus(
        index_dir: &Path,
        config: &ContextConfig,
        strategies: &StrategyRegistry,
        components: &PipelineRegistry,
        llm: Option<Arc<dyn LlmClient>>,
        corpus: Option<acms_retrieve::Corpus>,
    ) -> Result<Engine> {
        let store = Store::open(index_dir)?;
        let meta = store.meta()?;
        let retriever = match corpus {
            Some(c) => Retriever::open_with_corpus(index_dir, config, strategies, llm, c)?,
            None => Retriever::open(index_dir, config, strategies, llm)?,
        };
        let mut notes = retriever.notes().to_vec();
        if !meta.repo_root.as_os_str().is_empty() && !meta.repo_root.is_dir() {
            notes.push(format!(
                "the indexed repository {} is not on this machine: texts come from the index",
                meta.repo_root.display()
            ));
        }
        if !meta.left_out.is_empty() {
            notes.push(meta.left_out.clone());
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

    fn stage_context(&self) -> StageContext<'_> {
        StageContext {
            corpus: self.retriever.corpus(),
            store: &self.store,
            counter: &self.counter,
            config: &self.config,
            strategy_quality: &self.quality,
        }
    }

    /// Runs the ten stages for `request`.
    pub fn assemble(&self, request: &AssemblyRequest) -> Result<AssembledContext> {
        Ok(self.assemble_with_instance(request)?.0)
    }

    /// [`Engine::assemble`], also returning the knapsack instance the packer solved.
    pub fn assemble_with_instance(
        &self,
        request: &AssemblyRequest,
    ) -> Result<(AssembledContext, PackInstance)> {
        let started = Instant::now();
        let p = &self.pipeline;
        let ctx = self.stage_context();
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
        let fragment_budget = pack_tokens(total.saturating_sub(inherited_tokens));
        let mut log = StageLog {
            stages: &mut diagnostics.stages,
        };

        // 1. StrategySelector
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
        let selected = log.run(
            "strategy-selector",
            &p.strategy_selector.name,
            infos.len(),
            || match skipped {
                Some(_) => Vec::new(),
                None => p.strategy_selector.component.select(&request.query, &infos),
            },
            Vec::len,
        );

        // 2. BudgetAllocator
        let shares = log.run(
            "budget-allocator",
            &p.budget_allocator.name,
            selected.len(),
            || {
                p.budget_allocator
                    .component
                    .allocate(fragment_budget, &selected)
            },
            HashMap::len,
        );

        // 3. StrategyExecutor
        let mut execution: Execution = log.run(
            "strategy-executor",
            &p.strategy_executor.name,
            selected.len(),
            || {
                p.strategy_executor.component.execute(
                    &self.retriever,
                    &request.query,
                    &selected,
                    &shares,
                    fragment_budget,
                )
            },
            |e| e.hits.len(),
        );

        // 4. FragmentDeduplicator
        let (mut fragments, mut dropped) = log.run(
            "fragment-deduplicator",
            &p.fragment_deduplicator.name,
            execution.hits.len(),
            || {
                p.fragment_deduplicator
                    .component
                    .dedup(&ctx, std::mem::take(&mut execution.hits))
            },
            |(f, _)| f.len(),
        );

        // 5. DetailDepthResolver
        log.run(
            "detail-depth-resolver",
            &p.detail_depth_resolver.name,
            fragments.len(),
            || {
                p.detail_depth_resolver
                    .component
                    .resolve(&ctx, &mut fragments)
            },
            |_| 0,
        );
        if let Some(last) = log.stages.last_mut() {
            last.output = fragments.len();
        }

        // 6. FragmentScorer
        log.run(
            "fragment-scorer",
            &p.fragment_scorer.name,
            fragments.len(),
            || p.fragment_scorer.component.score(&ctx, &mut fragments),
            |_| 0,
        );
        if let Some(last) = log.stages.last_mut() {
            last.output = fragments.len();
        }

        let provenance = provenance(
            &execution,
            fragments.len(),
            &dropped,
            inherited_tokens,
            skipped.clone(),
        );
        let max_preamble = self.config.preamble.max_tokens;

        // 7. BudgetPacker: reserve what the preamble will cost (drafted with every fragment
        // included, its longest form) plus the blank lines joining the parts.
        let (candidates, pack_budget) = log.run(
            "budget-packer",
            &p.budget_packer.name,
            fragments.len(),
            || {
                let candidates =
                    p.budget_packer
                        .component
                        .candidates(&ctx, &fragments, fragment_budget);
                let draft = {
                    let mut d = provenance.clone();
                    d.by_depth = [fragments.len(); 4];
                    d.files = fragments.len();
                    d.dropped_budget = fragments.len();
                    p.preamble_generator
                        .component
                        .preamble(&ctx, &d, max_preamble)
                };
                let reserve = pack_tokens(self.counter.count(&draft) + 4);
                (candidates, fragment_budget.saturating_sub(reserve))
            },
            |_| 0,
        );
        let sources = Sources::default();
        let attempt = Attempt {
            engine: self,
            ctx: &ctx,
            fragments: &fragments,
            candidates: &candidates,
            provenance: &provenance,
            inherited: &inherited,
            max_preamble,
            total: pack_tokens(total),
            sources: &sources,
        };
        let (packing, enclosed) = attempt.pack(&candidates, pack_budget, &mut log);
        let laid = attempt.lay_out(packing.items.clone(), enclosed, &mut log);
        let (laid, refilled) = attempt.refill(laid, &mut log);
        log.set_output("budget-packer", laid.placed.len());
        log.set_output("fragment-orderer", laid.placed.len());
        log.set_output("preamble-generator", laid.verified.items.len());
        let Laid {
            enclosed,
            placed,
            mut verified,
        } = laid;
        let (text, tokens) = match verified.outcome {
            VerifyOutcome::EmptyOverBudget => (String::new(), 0),
            _ => (std::mem::take(&mut verified.text), verified.tokens),
        };
        if let Some(e) = sources.failure.into_inner() {
            return Err(e);
        }

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
        let target = (total as f64 * self.config.budget.skeleton_ratio) as usize;
        let skeleton = log.run(
            "skeleton-compressor",
            &p.skeleton_compressor.name,
            final_placed.len(),
            || match skipped {
                Some(_) => Skeleton::default(),
                None => p
                    .skeleton_compressor
                    .component
                    .compress(&ctx, &final_placed, target),
            },
            |s| s.nodes.len(),
        );

        // An enclosed fragment is shown only while its parent kept depth 9 through
        // verification; otherwise it is one more that did not fit.
        let shown: std::collections::HashSet<usize> = crate::stages::packer::still_shown(
            &ctx,
            &fragments,
            &enclosed,
            &crate::stages::packer::full_nodes(&verified.items),
        )
        .into_iter()
        .collect();
        for (i, f) in fragments.iter().enumerate() {
            if !kept.contains_key(&f.node) {
                dropped.push(Dropped {
                    node: f.node,
                    reason: if shown.contains(&i) {
                        DropReason::Enclosed
                    } else {
                        DropReason::Budget
                    },
                    score: f.score,
                });
            }
        }
        dropped.sort_by_key(|d| (d.reason, d.node));
        let manifest = final_placed
            .iter()
            .filter_map(|pl| manifest_entry(&ctx, pl))
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
            packer: p.budget_packer.component.name().to_string(),
            value: packing.value,
            upper_bound: packing.upper_bound,
            certified_gap: packing.certified_gap,
            verify_downgrades: verified.downgraded,
            verify_drops: verified.dropped,
            refilled,
        };
        diagnostics.millis = started.elapsed().as_secs_f64() * 1000.0;
        // A store read that failed mid-retrieval found nothing: the context would look
        // complete while missing what the failed read held.
        if let Some(e) = self.retriever.corpus().take_failure() {
            return Err(e.into());
        }
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
        Ok((
            context,
            PackInstance {
                candidates,
                budget: pack_budget,
            },
        ))
    }
}

/// What the preamble reports, known before packing (depths are filled in per layout).
fn provenance(
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

fn manifest_entry(ctx: &StageContext<'_>, pl: &Placed) -> Option<ManifestEntry> {
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

/// What the layouts of one assembly read from the store, read once: file lines and
/// renderings, and the first store error met (the renderer itself cannot fail).
#[derive(Default)]
struct Sources {
    files: RefCell<HashMap<String, Arc<render::FileLines>>>,
    texts: RefCell<HashMap<(NodeId, Depth), String>>,
    failure: RefCell<Option<Error>>,
}

/// What stages 7–9 need to pack, order and lay out: once, and again for the refill.
struct Attempt<'a> {
    engine: &'a Engine,
    ctx: &'a StageContext<'a>,
    fragments: &'a [Fragment],
    candidates: &'a [Candidate],
    provenance: &'a Provenance,
    inherited: &'a str,
    max_preamble: usize,
    /// The whole budget the final text is verified against.
    total: u32,
    sources: &'a Sources,
}

/// One packing ordered, laid out and verified ([`Attempt::lay_out`]).
struct Laid {
    /// Fragments left out of the packing because an enclosing fragment shows them.
    enclosed: Vec<usize>,
    /// The packed fragments in context order (depths as packed, before verification).
    placed: Vec<Placed>,
    verified: Verified,
}

impl Laid {
    /// The knapsack value of what survived verification.
    fn value(&self) -> f64 {
        self.verified.items.iter().map(|it| it.value).sum()
    }
}

/// The least room under the budget worth packing again for (stages 7–9 cost a few
/// milliseconds; a signature with its header is about 20 tokens).
const REFILL_MIN_TOKENS: u32 = 48;

impl<'a> Attempt<'a> {
    /// Stage 7: packs `candidates` (one per fragment) into `budget`.
    fn pack(
        &self,
        candidates: &[Candidate],
        budget: u32,
        log: &mut StageLog<'_>,
    ) -> (Packing, Vec<usize>) {
        let packer = &self.engine.pipeline.budget_packer;
        log.run(
            "budget-packer",
            &packer.name,
            self.fragments.len(),
            || {
                crate::stages::packer::pack_unenclosed(
                    self.ctx,
                    packer.component.as_ref(),
                    self.fragments,
                    candidates,
                    budget,
                )
            },
            |(packing, _)| packing.items.len(),
        )
    }

    /// Stage 7 again, then 8 and 9: the packer pays each fragment's header, but fragments of
    /// one file share a block and its header, so the text `laid` out is usually a few hundred
    /// tokens under the budget. Packs what it left out into that room, keeping everything it
    /// holds, and returns the new layout if it is worth more, with how many fragments it
    /// added; else `laid` and 0.
    fn refill(&self, laid: Laid, log: &mut StageLog<'_>) -> (Laid, usize) {
        let room = self.total.saturating_sub(pack_tokens(laid.verified.tokens));
        if laid.verified.outcome != VerifyOutcome::Fits || room < REFILL_MIN_TOKENS {
            return (laid, 0);
        }
        let rest = crate::stages::packer::leftovers(
            self.ctx,
            self.fragments,
            self.candidates,
            &laid.verified.items,
        );
        let (more, more_enclosed) = self.pack(&rest, room, log);
        if more.items.is_empty() {
            return (laid, 0);
        }
        let added: HashSet<usize> = more.items.iter().map(|it| it.candidate).collect();
        let mut items = laid.verified.items.clone();
        items.extend(more.items);
        items.sort_by_key(|it| it.candidate);
        let mut enclosed = laid.enclosed.clone();
        enclosed.extend(more_enclosed);
        let again = self.lay_out(items, enclosed, log);
        if again.value() <= laid.value() {
            return (laid, 0);
        }
        let refilled = again
            .verified
            .items
            .iter()
            .filter(|it| added.contains(&it.candidate))
            .count();
        (again, refilled)
    }

    /// Stages 8 and 9: orders `items` (in candidate order) and lays them out, verified
    /// against the whole budget.
    fn lay_out(&self, items: Vec<PackItem>, enclosed: Vec<usize>, log: &mut StageLog<'_>) -> Laid {
        let p = &self.engine.pipeline;
        // 8. FragmentOrderer
        let mut placed: Vec<Placed> = items
            .iter()
            .map(|it| Placed {
                fragment: self.fragments[it.candidate].clone(),
                depth: it.depth,
            })
            .collect();
        log.run(
            "fragment-orderer",
            &p.fragment_orderer.name,
            items.len(),
            || p.fragment_orderer.component.order(self.ctx, &mut placed),
            |_| 0,
        );
        log.set_output("fragment-orderer", placed.len());

        // 9. PreambleGenerator — run inside the layout that verification counts, because the
        // preamble reports what ends up included.
        let layout = Layout {
            engine: self.engine,
            ctx: self.ctx,
            placed: &placed,
            fragments: self.fragments,
            enclosed: &enclosed,
            provenance: self.provenance,
            inherited: self.inherited,
            max_preamble: self.max_preamble,
            sources: self.sources,
        };
        let verified = log.run(
            "preamble-generator",
            &p.preamble_generator.name,
            items.len(),
            || {
                verify_and_trim(
                    self.candidates,
                    &items,
                    self.total,
                    &|items| layout.render(items),
                    &|s| self.engine.counter.count(s),
                )
            },
            |v| v.items.len(),
        );
        Laid {
            enclosed,
            placed,
            verified,
        }
    }
}

/// Stage 9's layout of a set of packed items: preamble, inherited skeleton and the blocks
/// of [`render::blocks`], in the orderer's order.
struct Layout<'a> {
    engine: &'a Engine,
    ctx: &'a StageContext<'a>,
    placed: &'a [Placed],
    fragments: &'a [Fragment],
    /// Fragments left out of the packing because an enclosing fragment shows them.
    enclosed: &'a [usize],
    provenance: &'a Provenance,
    inherited: &'a str,
    max_preamble: usize,
    sources: &'a Sources,
}

impl Layout<'_> {
    fn fail(&self, e: impl Into<Error>) {
        self.sources.failure.borrow_mut().get_or_insert(e.into());
    }

    fn text(&self, node: NodeId, depth: Depth) -> String {
        if let Some(t) = self.sources.texts.borrow().get(&(node, depth)) {
            return t.clone();
        }
        let t = self.engine.store.text(node, depth).unwrap_or_else(|e| {
            self.fail(e);
            String::new()
        });
        self.sources
            .texts
            .borrow_mut()
            .insert((node, depth), t.clone());
        t
    }

    fn lines(&self, path: &str) -> Arc<render::FileLines> {
        if let Some(l) = self.sources.files.borrow().get(path) {
            return l.clone();
        }
        let content = match self.engine.store.file_content(path) {
            Ok(Some(c)) => c,
            Ok(None) => {
                self.fail(Error::MissingText {
                    path: path.to_string(),
                });
                String::new()
            }
            Err(e) => {
                self.fail(e);
                String::new()
            }
        };
        let lines = Arc::new(render::FileLines::new(content));
        self.sources
            .files
            .borrow_mut()
            .insert(path.to_string(), lines.clone());
        lines
    }

    fn preamble(&self, items: &[PackItem]) -> String {
        let mut prov = self.provenance.clone();
        let mut files = BTreeSet::new();
        for it in items {
            prov.by_depth[it.depth.index()] += 1;
            if let Some(n) = self.ctx.corpus.node(NodeId(it.id)) {
                files.insert(n.path.as_str());
            }
        }
        prov.files = files.len();
        let shown = crate::stages::packer::still_shown(
            self.ctx,
            self.fragments,
            self.enclosed,
            &crate::stages::packer::full_nodes(items),
        )
        .len();
        prov.dropped_budget = self.fragments.len() - items.len() - shown;
        self.engine.pipeline.preamble_generator.component.preamble(
            self.ctx,
            &prov,
            self.max_preamble,
        )
    }

    fn render(&self, items: &[PackItem]) -> String {
        let depth_of: HashMap<NodeId, Depth> =
            items.iter().map(|it| (NodeId(it.id), it.depth)).collect();
        let corpus = self.ctx.corpus;
        let pieces: Vec<render::Piece<'_>> = self
            .placed
            .iter()
            .filter_map(|pl| {
                let depth = *depth_of.get(&pl.fragment.node)?;
                let node = corpus.node(pl.fragment.node)?;
                // A container shown at skeleton or deeper already shows the member's line.
                let container = render::container(node, |id| corpus.node(id))
                    .filter(|c| depth_of.get(&c.id).is_none_or(|d| *d < Depth::Skeleton))
                    .map(|c| {
                        let indent: String = self
                            .lines(&c.path)
                            .get((c.start_line.max(1) - 1) as usize)
                            .map(|l| l.chars().take_while(|ch| ch.is_whitespace()).collect())
                            .unwrap_or_default();
                        render::container_line(c, &indent)
                    });
                let file = self.lines(&node.path);
                let lines = (depth == Depth::Full)
                    .then(|| file.clone())
                    .filter(|lines| line_aligned(node, lines));
                let text = match lines {
                    Some(_) => String::new(),
                    None => self.text(node.id, depth),
                };
                let indent = file
                    .get((node.start_line.max(1) - 1) as usize)
                    .map(|l| l.chars().take_while(|c| c.is_whitespace()).collect())
                    .unwrap_or_default();
                Some(render::Piece {
                    node,
                    name: render::display_name(node, corpus.module(&node.path)),
                    depth,
                    text,
                    lines,
                    indent,
                    container,
                })
            })
            .collect();
        let blocks: Vec<String> = render::blocks(&pieces)
            .iter()
            .map(render::Block::render)
            .collect();
        render::context(&self.preamble(items), self.inherited, &blocks)
    }
}

/// Whether `node`'s lines are (nearly) just the node: then depth 9 is cut from the file by
/// lines, indentation included, and may merge with its neighbours. A node that shares its
/// lines with much else (minified code: one line, many functions) keeps its byte span.
fn line_aligned(node: &acms_index::NodeRecord, lines: &render::FileLines) -> bool {
    let a = (node.start_line.max(1) - 1) as usize;
    let b = (node.end_line as usize).min(lines.len());
    if a > b {
        return false;
    }
    let line_bytes: usize = lines.range(a, b).map(|l| l.len() + 1).sum();
    line_bytes <= node.end_byte.saturating_sub(node.start_byte) + 160
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
