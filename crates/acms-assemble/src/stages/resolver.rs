//! Stage 5, DetailDepthResolver: settles each fragment's deepest offered depth. Strategies
//! may propose different depths for one node (the deepest wins), and a container whose
//! members are also candidates is capped at its skeleton, so a class and its method at
//! depth 9 are never both paid for.

use std::collections::HashSet;

use acms_core::{Depth, NodeId};

use super::StageContext;
use crate::Fragment;

/// Stage 5.
pub trait DetailDepthResolver: Send + Sync {
    fn resolve(&self, ctx: &StageContext<'_>, fragments: &mut Vec<Fragment>);
}

/// Deepest proposal wins; containers of other candidates fall back to their skeleton.
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
            if containers.contains(&f.node) && f.max_depth > Depth::Skeleton {
                f.max_depth = Depth::Skeleton;
            }
        }
    }
}
