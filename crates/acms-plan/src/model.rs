//! The records of plans and decision memory, as the store returns them. Ids print with a
//! prefix (`p7`, `d12`) so a plan id is never mistaken for a decision id; both parse with or
//! without it.

use std::fmt;
use std::str::FromStr;

use acms_core::{Depth, NodeId};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Error;

macro_rules! prefixed_id {
    ($name:ident, $prefix:literal, $what:literal) => {
        #[doc = concat!("The id of a ", $what, ", printed as `", $prefix, "<n>`.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub i64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<$name, Error> {
                let t = s.trim();
                let digits = t.strip_prefix($prefix).unwrap_or(t);
                digits
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .map($name)
                    .ok_or_else(|| {
                        Error::Invalid(format!(
                            concat!(
                                "`{}` is not a ",
                                $what,
                                " id: use the form ",
                                $prefix,
                                "<number> (e.g. ",
                                $prefix,
                                "3)"
                            ),
                            s
                        ))
                    })
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

prefixed_id!(PlanId, "p", "plan");
prefixed_id!(DecisionId, "d", "decision");

/// Where a decision lives in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// Recorded in the current phase of an open plan: its fragments are in the window.
    Hot,
    /// Recent: offered to retrieval by the `warm-memory` strategy.
    Warm,
    /// Archived for audit and correction.
    Cold,
}

impl Tier {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<Tier> {
        Some(match s {
            "hot" => Tier::Hot,
            "warm" => Tier::Warm,
            "cold" => Tier::Cold,
            _ => return None,
        })
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tier {
    type Err = Error;
    fn from_str(s: &str) -> Result<Tier, Error> {
        Tier::from_name(s.trim())
            .ok_or_else(|| Error::Invalid(format!("`{s}` is not a tier: use hot, warm or cold")))
    }
}

/// Node ids as users type them: 16 (or fewer) hex digits, as every JSON surface writes them.
pub mod hex_id {
    use acms_core::NodeId;

    /// Parses 16 (or fewer) hex digits.
    pub fn parse(s: &str) -> Option<NodeId> {
        s.parse().ok()
    }
}

/// One fragment of a window, by reference: where it is, at which depth, how many tokens.
/// No code text: the index holds that.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FragmentRef {
    pub node: NodeId,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// Qualified name of the symbol.
    pub name: String,
    pub depth: Depth,
    pub tokens: u32,
    /// Composite score it was packed with.
    pub score: f64,
}

/// A plan: a task worked through phases, possibly the child of another plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub id: PlanId,
    pub parent: Option<PlanId>,
    pub task: String,
    pub created: i64,
    pub closed: Option<i64>,
}

/// One assembled phase of a plan, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub plan: PlanId,
    /// 1 for the first phase run in the plan, then 2, 3, ...
    pub seq: i64,
    /// The phase's name (`explore`, ...): `phase` on every surface.
    #[serde(rename = "phase", alias = "name")]
    pub name: String,
    /// What this phase focuses on, beyond the plan's task (may be empty).
    pub focus: String,
    pub budget: usize,
    pub tokens: usize,
    /// Files re-indexed before this phase was assembled.
    pub refreshed: usize,
    pub manifest: Vec<FragmentRef>,
    pub created: i64,
    /// What it was assembled from besides the task, focus and budget (empty for phases
    /// recorded before inputs were).
    #[serde(default)]
    pub inputs: PhaseInputs,
}

/// A recorded decision: what the agent decided in which phase, on which fragments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub id: DecisionId,
    pub plan: PlanId,
    pub phase: String,
    /// The plan's task (and the phase's focus) when the decision was taken.
    pub task: String,
    pub notes: Option<String>,
    pub tier: Tier,
    pub created: i64,
    /// Last time the decision was recorded or its fragments were in a window again.
    pub last_used: i64,
    /// When it was marked corrected, and why.
    pub corrected: Option<i64>,
    pub correction: Option<String>,
    pub manifest: Vec<FragmentRef>,
}

/// Everything recorded about a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub plan: Plan,
    pub phases: Vec<PhaseRecord>,
    pub decisions: Vec<Decision>,
    pub children: Vec<PlanId>,
}

/// What one round of tier maintenance did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierReport {
    /// The time maintenance ran at (never earlier than a time already seen).
    pub now: i64,
    /// Decisions moved to a hotter tier (cold → warm, warm → hot, ...).
    pub promoted: usize,
    /// Decisions moved to a colder tier.
    pub demoted: usize,
    /// Decisions deleted from cold memory (too old, or over `context.cold.max-decisions`).
    pub expired: usize,
    /// Plans deleted (inactive past cold retention, with no decision left).
    pub plans_expired: usize,
    /// Decisions per tier after maintenance: hot, warm, cold.
    pub counts: [usize; 3],
    /// Seconds the clock was behind the latest time seen, when it moved backwards.
    pub clock_behind: Option<i64>,
}

/// What a phase was assembled from besides the plan's task and its own focus and budget.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseInputs {
    /// The phase (by `seq`) whose selection seeded the graph walk.
    pub seeded_by: Option<i64>,
    pub mentioned_files: Vec<String>,
    pub mentioned_symbols: Vec<String>,
    /// The parent plan's phase whose skeleton was inherited (child plans).
    pub parent_phase: Option<(PlanId, i64)>,
    /// The index assembled from: its store id and generation.
    pub index: String,
    /// What the strategies said about themselves when opened (embedder, incomplete vectors,
    /// a stale keyword index).
    pub strategy_notes: Vec<String>,
    /// Strategies that gave no answer in this run, with why (failed, timed out, breaker open).
    pub strategies_missing: Vec<String>,
    /// Corrections in memory (fragment × corrected decision): each demotes a fragment.
    pub corrections: u32,
    /// Warm decisions offered to the `warm-memory` strategy (empty when it is off).
    pub warm: Vec<DecisionId>,
}
