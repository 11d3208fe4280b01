//! The error enum of `acms-pack`. Packing itself never fails (every packer returns a valid,
//! possibly empty, packing); errors only come from asking the exact oracle for more than it
//! can afford, or from naming a packer that does not exist.

/// Errors of `acms-pack`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The exact dynamic program would need a choice table larger than the configured limit.
    #[error(
        "exact packing of {candidates} candidates into {capacity} tokens needs {cells} DP cells, \
         over the limit of {limit}: use the `hull` packer, or raise the limit with \
         `ExactPacker::with_max_cells`"
    )]
    TooLarge {
        candidates: usize,
        capacity: u32,
        cells: u64,
        limit: u64,
    },
    /// One candidate has more Pareto-optimal options than the exact packer's choice table holds.
    #[error(
        "candidate {id} has {options} Pareto-optimal options; the exact packer handles at most \
         255 per candidate: use the `hull` packer"
    )]
    TooManyOptions { id: u64, options: usize },
    /// A packer name that is not registered.
    #[error("unknown packer `{0}`: use `auto`, `greedy`, `hull` or `exact`")]
    UnknownPacker(String),
}

/// Result alias for `acms-pack`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
