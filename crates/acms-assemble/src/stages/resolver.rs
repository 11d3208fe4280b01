//! Stage 5, DetailDepthResolver: settles each fragment's deepest offered depth. Strategies
//! may propose different depths for one node (the deepest wins), and a container whose
//! members are also candidates is capped at its skeleton, so a class and its method at
//! depth 9 are never both paid for. A function is not such a container: a closure or helper
//! nested in it is part of its body, and capping the enclosing function because the graph
//! walk reached its closure showed the best match as an outline (hono's `cors`, ranked
//! first, at depth 4 because of its nested `set`). Both may be packed; the renderer shows the
//! nested one inside its parent's region, once.

use std::collections::HashSet;

use acms_core::{Depth, NodeId};
use acms_index::NodeKind;

use super::StageContext;
use crate::Fragment;

/// Stage 5.
pub trait DetailDepthResolver: Send + Sync {
    fn resolve(&self, ctx: &StageContext<'_>, fragments: &mut Vec<Fragment>);
}

/// Deepest proposal wins; containers (not functions) of other candidates fall back to their
/// skeleton.
pub struct DefaultResolver;

impl DetailDepthResolver for DefaultResolver {
    fn resolve(&self, ctx: &StageContext<'_>, fragments: &mut Vec<Fragment>) {
        let candidates: HashSet<NodeId> = fragments.iter().map(|f| f.node).collect();
        let mut containers: HashSet<NodeId> = HashSet::new();
        for f in fragments.iter() {
            let mut cur = ctx.corpus.node(f.node).and_then(|n| n.parent);
            let mut guard = 0;
            while let Some(p) = cur {
                if candidates.contains(&p) {
                    containers.insert(p);
                }
                cur = ctx.corpus.node(p).and_then(|n| n.parent);
                guard += 1;
                if guard > 64 {
                    break;
                }
            }
        }
        for f in fragments.iter_mut() {
            let function = ctx
                .corpus
                .node(f.node)
                .is_some_and(|n| matches!(n.kind, NodeKind::Function | NodeKind::Method));
            if containers.contains(&f.node) && !function && f.max_depth > Depth::Skeleton {
                f.max_depth = Depth::Skeleton;
            }
        }
    }
}
