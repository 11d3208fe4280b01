//! Never stale: files edited, added or deleted between two assemblies are re-indexed
//! (symbols, keyword index, vectors) before the second one, and the diagnostics say so.

use acms::{BudgetSpec, PhaseRequest, Query};

use crate::{Shop, open};

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

/// After edits that rename a function another file calls, remove one and add one that calls
/// into another file, the refreshed index (one-file incremental run, keyword and vectors of
/// the changed symbols only) answers exactly as an index built from scratch on the same tree:
/// same nodes, edges, keyword matches and semantic hits (with their scores).
#[test]
fn a_refreshed_index_answers_as_a_fresh_one() {
    let mut s = Shop::new();
    s.edit("shop/pricing.py", |t| {
        let t = t
            .replace("def compute_total(", "def order_total(")
            .replace("    return discounted + sales_tax(discounted)\n", "    return discounted\n");
        let cut = t.find("def sales_tax(").unwrap();
        let end = t.find("def order_total(").unwrap();
        format!(
            "{}{}\n\ndef refund_total(gateway, charge_id):\n    \"\"\"Refund a whole charge.\"\"\"\n    return refund(gateway, charge_id)\n",
            &t[..cut],
            &t[end..]
        )
    });
    let r = s.ws.refresh().unwrap();
    assert_eq!(r.paths, ["shop/pricing.py"]);

    let fresh_dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(s.dir.path()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".acms" {
            continue;
        }
        let to = fresh_dir.path().join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
            acms_testkit::copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).unwrap();
        }
    }
    let mut fresh = open(fresh_dir.path(), acms::ContextConfig::default(), &s.clock);

    let edges = |ws: &acms::Workspace| {
        let mut e: Vec<_> = ws
            .engine()
            .store()
            .edges()
            .unwrap()
            .iter()
            .map(|e| (e.src, e.dst, e.kind, e.confidence.to_bits()))
            .collect();
        e.sort();
        e
    };
    let nodes = |ws: &acms::Workspace| {
        let mut n = ws.engine().store().nodes().unwrap();
        n.sort_by_key(|n| n.id);
        n
    };
    assert_eq!(nodes(&s.ws), nodes(&fresh));
    assert_eq!(edges(&s.ws), edges(&fresh));
    // The engine's corpus, patched with the run's changes, is the one a fresh engine loads:
    // same nodes in the same order, same edges in the same order.
    let (c, cf) = (
        s.ws.engine().retriever().corpus(),
        fresh.engine().retriever().corpus(),
    );
    assert_eq!(c.nodes(), cf.nodes());
    assert_eq!(c.edge_count(), cf.edge_count());
    for n in c.nodes() {
        assert_eq!(
            c.neighbours(n.id),
            cf.neighbours(n.id),
            "{}",
            n.qualified_name
        );
    }
    // The rename is visible: cart's call to `compute_total` lost its target.
    assert!(nodes(&s.ws).iter().all(|n| n.name != "compute_total"));

    let queries = [
        "order total with discount",
        "compute the sales tax",
        "refund a whole charge",
        "cart total",
    ];
    // The keyword index holds the same documents: every query matches the same ones. (Scores
    // are not compared: BM25 counts a replaced document's terms until tantivy merges its
    // segments, so an updated index's scores drift from a fresh one's by design.)
    let keyword = |ws: &acms::Workspace| {
        acms_keyword::KeywordIndex::create_or_open(acms::retrieve::keyword_dir(ws.index_dir()))
            .unwrap()
    };
    let (k, kf) = (keyword(&s.ws), keyword(&fresh));
    assert_eq!(k.num_docs(), kf.num_docs());
    for q in queries {
        let ids = |k: &acms_keyword::KeywordIndex| {
            let mut ids: Vec<u64> = k.search(q, 10_000).unwrap().iter().map(|h| h.id).collect();
            ids.sort();
            ids
        };
        assert!(!ids(&k).is_empty(), "{q}: no keyword match");
        assert_eq!(ids(&k), ids(&kf), "keyword: {q}");
    }
    // The vectors are the same: semantic hits and their scores match.
    for q in queries {
        let hits = |ws: &mut acms::Workspace| {
            let mut h: Vec<_> = ws
                .search(&Query::new(q), &["semantic-embedding".to_string()], 1000)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| (h.node, h.name, (h.relevance * 1e4).round() as i64))
                .collect();
            h.sort();
            h
        };
        let got = hits(&mut s.ws);
        assert!(!got.is_empty(), "{q}: no semantic hits");
        assert_eq!(got, hits(&mut fresh), "semantic: {q}");
    }
}
