//! Never stale: files edited, added or deleted between two assemblies are re-indexed
//! (symbols, keyword index, vectors) before the second one, and the diagnostics say so.

use acms::{BudgetSpec, PhaseRequest, Query};

use crate::Shop;

fn phase_budget(tokens: usize) -> PhaseRequest {
    PhaseRequest {
        budget: BudgetSpec::tokens(tokens),
        ..PhaseRequest::default()
    }
}

#[test]
fn the_second_phase_shows_the_body_edited_after_the_first() {
    let mut s = Shop::new();
    assert!(s.path(".acms/index.sqlite").is_file(), "indexed on open");
    let (plan, _) =
        s.ws.start_plan("apply a discount to the amount with apply_discount")
            .unwrap();
    let first = s.ws.phase(plan.id, "explore", phase_budget(2000)).unwrap();
    assert_eq!(first.refresh.refreshed, 0);
    assert!(
        first
            .context
            .text
            .contains("return amount * (100 - percent) / 100")
    );
    assert!(
        first
            .context
            .diagnostics
            .notes
            .iter()
            .any(|n| n.starts_with("refreshed 0 files before assembly")),
        "{:?}",
        first.context.diagnostics.notes
    );

    s.edit("shop/pricing.py", |t| {
        t.replace(
            "return amount * (100 - percent) / 100",
            "capped = min(percent, 90)  # never give more than 90 %\n    return amount * (100 - capped) / 100",
        )
    });
    let second =
        s.ws.phase(plan.id, "implement", phase_budget(2000))
            .unwrap();
    assert_eq!(second.refresh.refreshed, 1);
    assert_eq!(second.refresh.paths, ["shop/pricing.py"]);
    assert!(second.refresh.keyword_docs > 0, "keyword index refreshed");
    assert!(
        second.refresh.embedded > 0,
        "vectors of the changed symbols refreshed"
    );
    assert!(
        second.context.text.contains("capped = min(percent, 90)"),
        "{}",
        second.context.text
    );
    assert!(
        !second
            .context
            .text
            .contains("return amount * (100 - percent) / 100")
    );
    assert!(
        second
            .context
            .diagnostics
            .notes
            .iter()
            .any(|n| n.starts_with("refreshed 1 files before assembly")),
    );
    assert_eq!(second.phase.refreshed, 1, "recorded with the phase");
    // Nothing changed since: the next refresh is a no-op.
    assert_eq!(s.ws.refresh().unwrap().refreshed, 0);
}

#[test]
fn plain_queries_see_new_deleted_and_touched_files() {
    let mut s = Shop::new();
    std::fs::write(
        s.path("shop/refund.py"),
        "def refund_charge(charge_id):\n    \"\"\"Give the money of a charge back.\"\"\"\n    return charge_id\n",
    )
    .unwrap();
    let ctx =
        s.ws.context(
            Query::new("refund a charge with refund_charge"),
            acms::BudgetSpec::tokens(1500),
        )
        .unwrap();
    assert_eq!(ctx.refresh.paths, ["shop/refund.py"]);
    assert!(
        ctx.context
            .manifest
            .iter()
            .any(|m| m.name == "shop.refund.refund_charge")
    );

    std::fs::remove_file(s.path("shop/refund.py")).unwrap();
    let ctx =
        s.ws.context(
            Query::new("refund a charge with refund_charge"),
            acms::BudgetSpec::tokens(1500),
        )
        .unwrap();
    assert_eq!(ctx.refresh.refreshed, 1);
    assert!(
        !ctx.context
            .manifest
            .iter()
            .any(|m| m.path == "shop/refund.py")
    );

    // Same content, new mtime: hashed, not re-indexed.
    let p = s.path("shop/cart.py");
    let text = std::fs::read(&p).unwrap();
    std::fs::write(&p, &text).unwrap();
    let f = std::fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    let r = s.ws.refresh().unwrap();
    assert_eq!((r.refreshed, r.hashed), (0, 1));
    assert_eq!(
        s.ws.refresh().unwrap().hashed,
        0,
        "the new stat is remembered"
    );

    // Files the index does not hold cost nothing until they become indexable.
    std::fs::write(s.path("notes.bin"), [0u8, 1, 2, 3]).unwrap();
    assert_eq!(s.ws.refresh().unwrap().refreshed, 0);
    assert_eq!(s.ws.refresh().unwrap().hashed, 0);
}

#[test]
fn an_index_whose_repository_is_gone_is_served_as_it_is() {
    let s = Shop::new();
    let index = tempfile::tempdir().unwrap();
    acms_testkit::copy_dir(&s.path(".acms"), index.path());
    let root = s.dir.path().to_path_buf();
    drop(s);
    assert!(!root.exists());
    let mut ws =
        acms::Workspace::open_index(index.path(), acms::WorkspaceOptions::default()).unwrap();
    let ctx = ws
        .context(Query::new("sales tax"), acms::BudgetSpec::tokens(1000))
        .unwrap();
    assert!(ctx.refresh.skipped.is_some());
    assert!(ctx.context.text.contains("sales_tax"));
}
