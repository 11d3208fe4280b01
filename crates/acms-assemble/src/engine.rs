//! [`Engine`]: one opened index plus a configured pipeline. [`Engine::assemble`] reads as the
//! pipeline: the budget divided ([`crate::budget`]), the ten stages in order, one call each on
//! an [`Assembly`] — with the preamble's reserve taken before packing and the refill pass of
//! stages 7–9 after the first layout — then the context put together from what verification
//! kept ([`crate::outcome`]).
//!
//! **Architecture Invariant:** every stage runs on every assembly (possibly on empty input),
//! and the returned `text`, counted exactly with the configured tokenizer, is never over the
//! budget: after rendering, fragments are downgraded or dropped until it fits, and if even an
//! empty context does not fit the text is empty.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use acms_core::{ContextConfig, ExactCounter, TokenCounter};
use acms_index::Store;
use acms_llm::LlmClient;
use acms_pack::Candidate;
use acms_retrieve::{Retriever, StrategyRegistry};

use crate::assembly::Assembly;
use crate::budget::Allowance;
use crate::error::Result;
use crate::layout::Page;
use crate::outcome::{
    budget_drops, kept, manifest_entry, notes, pack_report, placement, provenance, sent,
};
use crate::pipeline::{Pipeline, PipelineRegistry};
use crate::stages::StageContext;
use crate::types::{AssembledContext, AssemblyRequest, Diagnostics};

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
        let ctx = self.stage_context();
        let budget = Allowance::new(
            request.budget,
            request.parent.as_ref(),
            &self.config.budget,
            &self.counter,
        );
        let mut run = Assembly::new(&ctx, &self.pipeline, budget.skipped.is_some());
        let query = &request.query;

        let selected = run.select(&self.retriever, query);
        let shares = run.allocate(&selected, budget.fragments);
        let mut execution =
            run.execute(&self.retriever, query, &selected, &shares, budget.fragments);
        let (fragments, mut dropped) = run.dedup(std::mem::take(&mut execution.hits));
        let fragments = run.resolve(fragments);
        let fragments = run.score(fragments);
        // The preamble reports what the packing includes, so stage 9 writes it; its room is
        // kept free before packing.
        let provenance = provenance(
            &execution,
            fragments.len(),
            &dropped,
            budget.inherited_tokens,
            budget.skipped.clone(),
        );
        let reserve = run.preamble_reserve(&provenance, fragments.len());
        let packed = run.pack(&fragments, budget.fragments, reserve);
        let page = Page {
            ctx: &ctx,
            fragments: &fragments,
            candidates: &packed.candidates,
            provenance: &provenance,
            inherited: &budget.inherited,
            total: budget.verified(),
        };
        let placed = run.order(&fragments, &packed.packing.items);
        let laid = run.lay_out(&page, placed, &packed.packing.items, packed.enclosed)?;
        let (laid, refilled) = run.refill(&page, laid)?;
        let kept = kept(&laid.verified.items);
        let placed = placement(laid.placed, &kept);
        let skeleton = run.compress(&placed, budget.skeleton);

        dropped.extend(budget_drops(&fragments, &kept, &laid.shown));
        dropped.sort_by_key(|d| (d.reason, d.node));
        let diagnostics = Diagnostics {
            stages: run.into_reports(),
            strategies: execution.runs,
            pack: pack_report(
                self.pipeline.budget_packer.component.name(),
                &packed.packing,
                &laid.verified,
                refilled,
            ),
            notes: notes(
                &self.notes,
                budget.skipped.as_deref(),
                budget.total,
                laid.verified.outcome,
            ),
            millis: started.elapsed().as_secs_f64() * 1000.0,
        };
        // A store read that failed mid-retrieval found nothing: the context would look
        // complete while missing what the failed read held.
        if let Some(e) = self.retriever.corpus().take_failure() {
            return Err(e.into());
        }
        let (text, tokens) = sent(laid.verified);
        let context = AssembledContext {
            text,
            tokens,
            budget: budget.total,
            tokenizer: self.counter.name().to_string(),
            manifest: placed
                .iter()
                .filter_map(|pl| manifest_entry(&ctx, pl))
                .collect(),
            dropped,
            skeleton,
            diagnostics,
        };
        let instance = PackInstance {
            candidates: packed.candidates,
            budget: packed.budget,
        };
        Ok((context, instance))
    }
}
