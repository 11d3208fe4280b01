//! [`StageLog`]: each stage's report for the diagnostics — the implementation that ran, its
//! time, and the items in and out.

use std::time::Instant;

use crate::pipeline::Pipeline;
use crate::types::StageReport;

/// The ten stages, in pipeline order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    StrategySelector,
    BudgetAllocator,
    StrategyExecutor,
    FragmentDeduplicator,
    DetailDepthResolver,
    FragmentScorer,
    BudgetPacker,
    FragmentOrderer,
    PreambleGenerator,
    SkeletonCompressor,
}

impl Stage {
    /// The name in the diagnostics, as in `context.pipeline.<stage>`.
    fn name(self) -> &'static str {
        match self {
            Stage::StrategySelector => "strategy-selector",
            Stage::BudgetAllocator => "budget-allocator",
            Stage::StrategyExecutor => "strategy-executor",
            Stage::FragmentDeduplicator => "fragment-deduplicator",
            Stage::DetailDepthResolver => "detail-depth-resolver",
            Stage::FragmentScorer => "fragment-scorer",
            Stage::BudgetPacker => "budget-packer",
            Stage::FragmentOrderer => "fragment-orderer",
            Stage::PreambleGenerator => "preamble-generator",
            Stage::SkeletonCompressor => "skeleton-compressor",
        }
    }
}

/// The reports of one assembly's stages, kept in pipeline order whatever order they run in.
pub(crate) struct StageLog {
    /// One slot per stage, indexed by [`Stage`]; empty until the stage first runs, so a stage
    /// that never ran is missing from the diagnostics.
    slots: [Option<StageReport>; 10],
    /// The implementation of each stage, indexed by [`Stage`].
    implementations: [String; 10],
}

impl StageLog {
    pub fn new(p: &Pipeline) -> StageLog {
        StageLog {
            slots: Default::default(),
            implementations: [
                &p.strategy_selector.name,
                &p.budget_allocator.name,
                &p.strategy_executor.name,
                &p.fragment_deduplicator.name,
                &p.detail_depth_resolver.name,
                &p.fragment_scorer.name,
                &p.budget_packer.name,
                &p.fragment_orderer.name,
                &p.preamble_generator.name,
                &p.skeleton_compressor.name,
            ]
            .map(String::clone),
        }
    }

    /// Runs `f` as `stage` on `input` items. A stage run again in the same assembly (the
    /// refill) adds its time, and its report counts its last run's items in and out.
    pub fn run<T>(
        &mut self,
        stage: Stage,
        input: usize,
        f: impl FnOnce() -> T,
        output: impl Fn(&T) -> usize,
    ) -> T {
        let t = Instant::now();
        let value = f();
        let millis = t.elapsed().as_secs_f64() * 1000.0;
        let implementation = &self.implementations[stage as usize];
        let report = self.slots[stage as usize].get_or_insert_with(|| StageReport {
            stage: stage.name().to_string(),
            implementation: implementation.clone(),
            millis: 0.0,
            input: 0,
            output: 0,
        });
        report.millis += millis;
        report.input = input;
        report.output = output(&value);
        value
    }

    /// Sets `stage`'s output count to what the assembly kept of its work.
    pub fn set_output(&mut self, stage: Stage, output: usize) {
        if let Some(report) = &mut self.slots[stage as usize] {
            report.output = output;
        }
    }

    /// The reports of the stages that ran, in pipeline order.
    pub fn into_reports(self) -> Vec<StageReport> {
        self.slots.into_iter().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::PipelineRegistry;

    #[test]
    fn reports_keep_pipeline_order_and_a_second_run_counts_its_last_items() {
        let config = acms_core::PipelineConfig::default();
        let pipeline = PipelineRegistry::default()
            .pipeline(&config)
            .expect("the default pipeline");
        let mut log = StageLog::new(&pipeline);
        log.run(Stage::PreambleGenerator, 1, || 2, |n| *n);
        log.run(Stage::BudgetPacker, 3, || 4, |n| *n);
        log.run(Stage::PreambleGenerator, 5, || 6, |n| *n);
        log.set_output(Stage::BudgetPacker, 7);
        log.set_output(Stage::SkeletonCompressor, 8);
        let reports = log.into_reports();
        let seen: Vec<(&str, usize, usize)> = reports
            .iter()
            .map(|r| (r.stage.as_str(), r.input, r.output))
            .collect();
        assert_eq!(
            seen,
            [("budget-packer", 3, 7), ("preamble-generator", 5, 6)]
        );
    }
}
