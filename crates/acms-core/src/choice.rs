//! What a `context.pipeline.<component>` key names: `default`, another of the component's
//! built-in implementations, or one registered in Rust under a name of its own
//! (`acms_assemble::PipelineRegistry`). Each component's other built-ins are an enum whose
//! [`BuiltIn::name`] is the one place their names are spelled; configuration parsing, the
//! registry and its error messages all read it.

use crate::named::by_name;

/// A component's built-in implementations besides `default`.
pub trait BuiltIn: Copy + std::fmt::Debug + 'static {
    /// Every one.
    const ALL: &'static [Self];

    /// The name a configuration uses.
    fn name(self) -> &'static str;

    /// The built-in called `name`, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|b| b.name() == name)
    }
}

/// The implementation one `context.pipeline.<component>` key chooses. Any name is accepted:
/// one that is neither built in nor registered is an error when the engine opens.
///
/// Built from a name with `From`, which recognises the built-in names. Values compare and
/// order by name (see `named`).
#[derive(Debug, Clone, Default)]
pub enum Choice<B> {
    /// `default`: the component's default implementation.
    #[default]
    Default,
    /// Another built-in implementation.
    BuiltIn(B),
    /// An implementation registered in Rust under this name.
    Registered(String),
}

impl<B: BuiltIn> Choice<B> {
    /// The name of the default implementation, for every component.
    const DEFAULT_NAME: &'static str = "default";

    /// The name a configuration uses.
    pub fn as_str(&self) -> &str {
        match self {
            Choice::Default => Self::DEFAULT_NAME,
            Choice::BuiltIn(b) => b.name(),
            Choice::Registered(name) => name,
        }
    }

    /// The built-in choice called `name`, if any.
    fn parse_built_in(name: &str) -> Option<Choice<B>> {
        if name == Self::DEFAULT_NAME {
            return Some(Choice::Default);
        }
        B::from_name(name).map(Choice::BuiltIn)
    }
}

impl<B: BuiltIn> From<&str> for Choice<B> {
    fn from(name: &str) -> Choice<B> {
        Choice::parse_built_in(name).unwrap_or_else(|| Choice::Registered(name.to_string()))
    }
}

impl<B: BuiltIn> From<String> for Choice<B> {
    fn from(name: String) -> Choice<B> {
        Choice::parse_built_in(&name).unwrap_or(Choice::Registered(name))
    }
}

by_name!(Choice<B>, B: BuiltIn);

/// The built-ins of a component that has none besides `default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnlyDefault {}

impl BuiltIn for OnlyDefault {
    const ALL: &'static [Self] = &[];

    fn name(self) -> &'static str {
        match self {}
    }
}

/// `context.pipeline.fragment-scorer` besides `default` (the evidence scorer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScorerName {
    /// The spec's weighted sum of relevance, hierarchy, strategy quality and recency.
    WeightedSum,
}

impl BuiltIn for ScorerName {
    const ALL: &'static [Self] = &[ScorerName::WeightedSum];

    fn name(self) -> &'static str {
        match self {
            ScorerName::WeightedSum => "weighted-sum",
        }
    }
}

/// The budget packers of `acms-pack`; `context.pipeline.budget-packer = "default"` is
/// [`PackerName::DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackerName {
    /// Exact where that costs about a millisecond, `hull` beyond.
    Auto,
    /// The convex-hull greedy with its LP bound.
    Hull,
    /// The spec's greedy with depth fallback.
    Greedy,
    /// Dynamic programming over the budget.
    Exact,
}

impl PackerName {
    /// The packer `default` means.
    pub const DEFAULT: PackerName = PackerName::Auto;

    /// The name a configuration uses (`const`, for `acms_pack::PACKER_NAMES`).
    pub const fn name(self) -> &'static str {
        match self {
            PackerName::Auto => "auto",
            PackerName::Hull => "hull",
            PackerName::Greedy => "greedy",
            PackerName::Exact => "exact",
        }
    }
}

impl BuiltIn for PackerName {
    const ALL: &'static [Self] = &[
        PackerName::Auto,
        PackerName::Hull,
        PackerName::Greedy,
        PackerName::Exact,
    ];

    fn name(self) -> &'static str {
        PackerName::name(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_other_names_are_registered() {
        let packers = PackerName::ALL.iter().map(|&p| Choice::BuiltIn(p));
        for c in std::iter::once(Choice::Default).chain(packers) {
            assert_eq!(Choice::<PackerName>::from(c.as_str()), c);
            assert!(!matches!(
                Choice::<PackerName>::from(c.to_string()),
                Choice::Registered(_)
            ));
        }
        assert!(matches!(
            Choice::<ScorerName>::from("weighted-sum"),
            Choice::BuiltIn(ScorerName::WeightedSum)
        ));
        assert!(matches!(
            Choice::<OnlyDefault>::from("alphabetical"),
            Choice::Registered(n) if n == "alphabetical"
        ));
        // A registered value spelled like a built-in is that built-in.
        assert_eq!(
            Choice::<OnlyDefault>::Registered("default".into()),
            Choice::Default
        );
    }
}
