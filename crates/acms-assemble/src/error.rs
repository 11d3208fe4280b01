/// Errors of `acms-assemble`. Budget problems are not errors: an assembly below the useful
/// budget is an empty context with a reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Index(#[from] acms_index::Error),
    #[error(transparent)]
    Retrieve(#[from] acms_retrieve::Error),
    #[error(transparent)]
    Pack(#[from] acms_pack::Error),
    /// The index has a node of a file whose text it does not hold: the index is damaged.
    #[error("the index holds no text for {path}: run `acms index --rebuild`")]
    MissingText { path: String },
    /// `context.pipeline.<component>` names an implementation that is not registered.
    #[error(
        "context.pipeline.{component}: no implementation registered as `{name}` (registered: {known})"
    )]
    UnknownComponent {
        component: &'static str,
        name: String,
        known: String,
    },
}

/// Result alias for `acms-assemble`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
