//! The model on first use: [`ensure_model`] installs the configured catalog model when it is
//! missing (`acms-model`: pinned downloads), where the embedder looks for it
//! ([`acms_vector::locate_model`]: one rule for both).

use std::sync::atomic::AtomicBool;

use acms_core::{EmbedderKind, SemanticConfig};
pub use acms_model::*;

/// What [`ensure_model`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ensured {
    /// Nothing to fetch: the model directory is complete, the configuration chose the hashing
    /// embedder, or the model is not one of the catalog's (a directory the user filled).
    Present,
    /// Missing, and fetching is off (`auto-fetch = false` or `ACMS_MODEL_FETCH=0`).
    Disabled,
    /// Installed now.
    Fetched(FetchReport),
    /// The fetch failed: one line saying why and what to do.
    Failed(String),
}

/// The catalog model `config` names and the places its install goes, or `None` when it is not
/// a catalog model (or no directory can be named: the embedder then says why).
pub fn places_for(config: &SemanticConfig) -> Option<(&'static Model, Places)> {
    let model = acms_model::model(&config.model)?;
    let (dir, _) = acms_vector::locate_model(config).ok()?;
    Some((model, Places::in_cache(dir).ok()?))
}

/// Makes sure the model `config` names is installed, fetching it when it is missing and the
/// configuration allows it; `progress` sees the download, `stop` ends it at its next read.
/// Costs a few `stat`s when the model is there.
pub fn ensure_model(
    config: &SemanticConfig,
    progress: Option<&(dyn Fn(Event<'_>) + Sync)>,
    stop: Option<&AtomicBool>,
) -> Ensured {
    if config.embedder == EmbedderKind::Hash {
        return Ensured::Present;
    }
    let Some((model, places)) = places_for(config) else {
        return Ensured::Present;
    };
    if acms_vector::missing_model_files(&places.model_dir).is_empty() {
        return Ensured::Present;
    }
    if !acms_model::auto_fetch(config.auto_fetch) {
        return Ensured::Disabled;
    }
    let opts = FetchOptions {
        mirror: acms_model::mirror(config.model_mirror.as_deref()),
        progress,
        stop,
        ..FetchOptions::default()
    };
    match acms_model::fetch(model, &places, &opts) {
        Ok(report) => Ensured::Fetched(report),
        Err(e) => Ensured::Failed(format!(
            "cannot fetch model {}: {e} (`acms model fetch {}` says which files to put where \
             by hand; {}=0 turns fetching off)",
            model.name,
            model.name,
            acms_model::AUTO_FETCH_ENV
        )),
    }
}

/// Installs catalog model `name` where the default configuration looks for it (the user cache,
/// or `$ACMS_MODEL_DIR`), fetching only what is missing or wrong, and returns its directory.
/// For tools (benches, the evaluation) that need a model by name.
pub fn install(
    name: &str,
    progress: Option<&(dyn Fn(Event<'_>) + Sync)>,
) -> crate::Result<std::path::PathBuf> {
    let model = acms_model::model(name).ok_or_else(|| acms_model::Error::UnknownModel {
        name: name.to_string(),
    })?;
    let config = SemanticConfig {
        model: name.to_string(),
        ..SemanticConfig::default()
    };
    let (dir, _) = acms_vector::locate_model(&config)?;
    let places = Places::in_cache(dir)?;
    let opts = FetchOptions {
        mirror: acms_model::mirror(None),
        progress,
        ..FetchOptions::default()
    };
    acms_model::fetch(model, &places, &opts)?;
    Ok(places.model_dir)
}
