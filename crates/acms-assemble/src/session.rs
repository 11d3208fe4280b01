//! [`PlanSession`]: context across the phases of a plan. A phase re-assembles when its task
//! changes or when the available budget moved by more than `context.budget.refresh-threshold`
//! (30 %); otherwise the previous assembly is reused. Child plans start from the skeleton of
//! their parent's latest assembly.

use crate::{AssembledContext, AssemblyRequest, Budget, Engine, Result, Skeleton};

/// The assemblies of one plan.
pub struct PlanSession<'e> {
    engine: &'e Engine,
    parent: Option<Skeleton>,
    last: Option<(AssemblyRequest, usize, AssembledContext)>,
    /// Assemblies actually run (reuses excluded).
    pub assemblies: usize,
}

impl<'e> PlanSession<'e> {
    /// A top-level plan.
    pub fn new(engine: &'e Engine) -> PlanSession<'e> {
        PlanSession {
            engine,
            parent: None,
            last: None,
            assemblies: 0,
        }
    }

    /// A child plan inheriting this plan's latest skeleton.
    pub fn child(&self) -> PlanSession<'e> {
        PlanSession {
            engine: self.engine,
            parent: self.last.as_ref().map(|(_, _, c)| c.skeleton.clone()),
            last: None,
            assemblies: 0,
        }
    }

    /// The context for a phase: re-assembled when the query changed or the budget moved by
    /// more than the refresh threshold, else the previous one.
    pub fn phase(
        &mut self,
        query: acms_retrieve::Query,
        budget: Budget,
    ) -> Result<&AssembledContext> {
        let tokens = self.engine.budget_tokens(budget);
        let threshold = self.engine_threshold();
        let reuse = self.last.as_ref().is_some_and(|(req, old, ctx)| {
            req.query == query
                && ctx.tokens <= tokens
                && (tokens as f64 - *old as f64).abs() <= threshold * (*old).max(1) as f64
        });
        if !reuse {
            let request = AssemblyRequest {
                query,
                budget,
                parent: self.parent.clone(),
            };
            let ctx = self.engine.assemble(&request)?;
            self.assemblies += 1;
            self.last = Some((request, tokens, ctx));
        }
        Ok(&self.last.as_ref().expect("set above").2)
    }

    fn engine_threshold(&self) -> f64 {
        self.engine.refresh_threshold()
    }
}
