//! Each strategy finds specific expected nodes of the fixture; bad input never errors.

use acms_retrieve::{Query, Reason, RunStatus, names as strategy};

use crate::{Fixture, names, run};

#[test]
fn keyword_finds_by_name_doc_and_path() {
    let f = Fixture::new(true);
    let r = f.retriever();
    let e = run(&r, Query::new("sales tax"), strategy::KEYWORD);
    assert_eq!(
        names(&r, &e, strategy::KEYWORD)[0],
        "shop.pricing.sales_tax"
    );
    let e = run(&r, Query::new("renderTotal basket"), strategy::KEYWORD);
    // The hits below the relevance floor are left out, so there may be fewer than three.
    assert!(
        names(&r, &e, strategy::KEYWORD)
            .iter()
            .take(3)
            .any(|n| n.ends_with("renderTotal"))
    );
    assert!(matches!(&e.hits[0].reason, Reason::Terms { terms } if !terms.is_empty()));
}

#[test]
fn semantic_finds_by_meaning() {
    let f = Fixture::new(true);
    let r = f.retriever();
    let e = run(
        &r,
        Query::new("give money back to the customer"),
        strategy::SEMANTIC,
    );
    let found = names(&r, &e, strategy::SEMANTIC);
    assert!(
        found.iter().take(3).any(|n| n == "shop.payment.refund"),
        "{found:?}"
    );
    assert!(matches!(e.hits[0].reason, Reason::Similarity { .. }));
}

#[test]
fn navigator_walks_callers_and_callees_from_mentions() {
    let f = Fixture::new(true);
    let r = f.retriever();
    let mut q = Query::new("");
    q.mentioned_symbols.push("compute_total".into());
    let e = run(&r, q, strategy::NAVIGATOR);
    let found = names(&r, &e, strategy::NAVIGATOR);
    assert_eq!(found[0], "shop.pricing.compute_total", "{found:?}");
    // Callees and callers, in both directions.
    for want in [
        "shop.pricing.apply_discount",
        "shop.pricing.sales_tax",
        "shop.cart.Cart.total",
    ] {
        assert!(found.iter().any(|n| n == want), "{want} not in {found:?}");
    }
    let callee = e
        .hits
        .iter()
        .find(|h| r.corpus().node(h.node).unwrap().name == "apply_discount")
        .unwrap();
    assert!(matches!(&callee.reason, Reason::Path { hops, .. } if hops[0].0 == "calls"));
}

#[test]
fn navigator_expands_from_other_strategies_hits() {
    let f = Fixture::new(true);
    let r = f.retriever();
    let e = r.retrieve(
        &Query::new("charge the card"),
        &[],
        &std::collections::HashMap::new(),
        4000,
    );
    let nav = names(&r, &e, strategy::NAVIGATOR);
    assert!(!nav.is_empty());
    assert!(
        e.runs
            .iter()
            .all(|run| matches!(run.status, RunStatus::Ok { .. })),
        "{:?}",
        e.runs
    );
}

#[test]
fn bad_queries_return_results_or_nothing_but_never_fail() {
    let f = Fixture::new(true);
    let r = f.retriever();
    let long = "cart ".repeat(20_000);
    for text in ["", "   ", "?!... ;;; ()", "購物車 結帳", long.as_str()] {
        let e = r.retrieve(&Query::new(text), &[], &Default::default(), 4000);
        for run in &e.runs {
            assert!(
                matches!(run.status, RunStatus::Ok { .. }),
                "{text:.20}: {run:?}"
            );
        }
    }
}

#[test]
fn an_index_without_vectors_makes_semantic_unavailable_only() {
    let f = Fixture::new(false);
    let r = f.retriever();
    let e = r.retrieve(&Query::new("sales tax"), &[], &Default::default(), 4000);
    for run in &e.runs {
        match run.strategy.as_str() {
            strategy::SEMANTIC => {
                assert!(
                    matches!(&run.status, RunStatus::Failed { error } if error.contains("unavailable")),
                    "{run:?}"
                )
            }
            _ => assert!(matches!(run.status, RunStatus::Ok { .. }), "{run:?}"),
        }
    }
    assert!(
        r.notes().iter().any(|n| n.contains("no vectors")),
        "{:?}",
        r.notes()
    );
}

#[test]
fn a_corrupted_vector_file_is_named_and_the_rest_still_works() {
    let f = Fixture::new(true);
    let file = f
        .index_dir()
        .join("vectors")
        .join(acms_vector::VECTORS_FILE);
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&file, bytes).unwrap();
    let r = f.retriever();
    let e = r.retrieve(&Query::new("sales tax"), &[], &Default::default(), 4000);
    let semantic = e
        .runs
        .iter()
        .find(|r| r.strategy == strategy::SEMANTIC)
        .unwrap();
    assert!(
        matches!(&semantic.status, RunStatus::Failed { error } if error.contains(acms_vector::VECTORS_FILE)),
        "{semantic:?}"
    );
    assert!(!names(&r, &e, strategy::KEYWORD).is_empty());
    assert!(!names(&r, &e, strategy::NAVIGATOR).is_empty());
}

#[test]
fn derived_indexes_follow_incremental_reindex() {
    let f = Fixture::new(true);
    let path = f.dir.path().join("shop/pricing.py");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{text}\n\ndef shipping_fee(weight):\n    \"\"\"Postage for a parcel.\"\"\"\n    return weight * 3\n"),
    )
    .unwrap();
    std::fs::remove_file(f.dir.path().join("shop/payment.py")).unwrap();
    let opts = acms_index::IndexOptions::new(f.dir.path());
    let report = acms_index::index_repo(f.dir.path(), &opts).unwrap();
    let derived = acms_retrieve::update_derived(
        &opts.index_dir,
        &report.changes,
        &Default::default(),
        Some(&acms_vector::HashEmbedder::default()),
    )
    .unwrap();
    assert!(!derived.keyword_rebuilt && !derived.vectors_rebuilt);
    assert!(
        derived.embedded < 10,
        "only the changed file is embedded: {derived:?}"
    );
    let r = f.retriever();
    let e = run(&r, Query::new("postage parcel shipping"), strategy::KEYWORD);
    assert_eq!(
        names(&r, &e, strategy::KEYWORD)[0],
        "shop.pricing.shipping_fee"
    );
    let e = run(&r, Query::new("refund charge"), strategy::KEYWORD);
    assert!(
        !names(&r, &e, strategy::KEYWORD)
            .iter()
            .any(|n| n.starts_with("shop.payment"))
    );
}

/// A run that changes most symbols (here `--rebuild`) builds the keyword index afresh, a
/// batch of files at a time, instead of deleting and adding every document in one batch
/// (which held a monorepo's documents at once: 1.2 GB): the same documents, the same hits.
#[test]
fn a_run_that_changes_most_symbols_rebuilds_the_keyword_index() {
    let f = Fixture::new(false);
    let r = f.retriever();
    let before = names(
        &r,
        &run(&r, Query::new("refund charge"), strategy::KEYWORD),
        strategy::KEYWORD,
    );
    drop(r);
    let mut opts = acms_index::IndexOptions::new(f.dir.path());
    opts.rebuild = true;
    let report = acms_index::index_repo(f.dir.path(), &opts).unwrap();
    assert!(report.changes.upserted.len() > 3);
    let derived =
        acms_retrieve::update_derived(&opts.index_dir, &report.changes, &Default::default(), None)
            .unwrap();
    assert!(derived.keyword_rebuilt, "{derived:?}");
    assert_eq!(derived.keyword_docs, report.nodes);
    let r = f.retriever();
    let after = names(
        &r,
        &run(&r, Query::new("refund charge"), strategy::KEYWORD),
        strategy::KEYWORD,
    );
    assert!(!after.is_empty());
    assert_eq!(after, before);
}

#[test]
fn arce_searches_the_terms_a_scripted_model_proposes_until_it_is_done() {
    use std::sync::Arc;
    let f = Fixture::new(false);
    let llm = Arc::new(
        acms_llm::ScriptedClient::new()
            .reply("Let me look for: [\"sales_tax\", \"discount\"]")
            .reply("[\"refund\"]")
            .reply("[]"),
    );
    let mut config = acms_core::ContextConfig::default();
    config.strategies.enabled = vec![strategy::ARCE.into()];
    let r = acms_retrieve::Retriever::open(
        &f.index_dir(),
        &config,
        &acms_retrieve::StrategyRegistry::new(),
        Some(llm.clone()),
    )
    .unwrap();
    let e = run(&r, Query::new("how are prices computed?"), strategy::ARCE);
    let found = names(&r, &e, strategy::ARCE);
    for want in [
        "shop.pricing.sales_tax",
        "shop.pricing.apply_discount",
        "shop.payment.refund",
    ] {
        assert!(found.iter().any(|n| n == want), "{want} not in {found:?}");
    }
    // Three rounds: two proposals, then the model said it was done.
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[1].0[1].content.contains("Found so far"));
    let refund = e
        .hits
        .iter()
        .find(|h| r.corpus().node(h.node).unwrap().name == "refund")
        .unwrap();
    assert!(
        matches!(&refund.reason, Reason::Llm { round: 2, .. }),
        "{:?}",
        refund.reason
    );

    // A model failure is a failed run, not a failed retrieval; without a model ARCE says so.
    let failing = Arc::new(
        acms_llm::ScriptedClient::new().fail(acms_llm::Error::Status {
            status: 500,
            code: None,
        }),
    );
    let r = acms_retrieve::Retriever::open(
        &f.index_dir(),
        &config,
        &acms_retrieve::StrategyRegistry::new(),
        Some(failing),
    )
    .unwrap();
    let e = run(&r, Query::new("prices"), strategy::ARCE);
    assert!(matches!(e.runs[0].status, RunStatus::Failed { .. }));
    let r = acms_retrieve::Retriever::open(
        &f.index_dir(),
        &config,
        &acms_retrieve::StrategyRegistry::new(),
        None,
    )
    .unwrap();
    let e = run(&r, Query::new("prices"), strategy::ARCE);
    assert!(
        matches!(&e.runs[0].status, RunStatus::Failed { error } if error.contains("no language model"))
    );
}

#[test]
fn a_qualified_name_matches_whole_components_only() {
    let f = Fixture::new(false);
    let r = f.retriever();
    let found = |name: &str| -> Vec<String> {
        r.corpus()
            .find_symbol(name)
            .iter()
            .map(|n| n.qualified_name.clone())
            .collect()
    };
    assert_eq!(found("Cart.total"), ["shop.cart.Cart.total"]);
    assert_eq!(found("shop.pricing.sales_tax"), ["shop.pricing.sales_tax"]);
    // `printing.pretty` in a bug report is not `test_printing.pretty`.
    assert!(found("art.total").is_empty());
    assert!(found("ricing.sales_tax").is_empty());
}

#[test]
fn names_resolve_to_project_source_before_tests_and_the_tasks_own_code_to_nothing_else() {
    let f = Fixture::with_files(
        false,
        &[(
            "tests/test_pricing.py",
            "def reproduce():\n    pass\n\ndef apply_discount(amount, percent):\n    return amount\n\ndef sales_tax(amount):\n    return 0\n",
        )],
    );
    let r = f.retriever();
    let task = "Tax is wrong:\n```python\ndef reproduce():\n    return sales_tax(10)\n\ndef apply_discount(amount, percent):\n    return amount\n```";
    let named = qualified_names(&mentioned(&r, task));
    // The reporter's `reproduce` names nothing (only a test defines it); the pasted
    // `apply_discount` and the called `sales_tax` are the project's, not the test doubles'.
    assert_eq!(
        named,
        ["shop.pricing.apply_discount", "shop.pricing.sales_tax"]
    );
    // A name only a test defines is the test's.
    let named = qualified_names(&mentioned(&r, "`reproduce()` fails"));
    assert_eq!(named, ["tests.test_pricing.reproduce"]);
}

#[test]
fn the_title_of_a_report_outweighs_the_narrative_under_it() {
    let f = Fixture::with_files(
        false,
        &[
            (
                "src/zoo/feed.py",
                "def feed(pen):\n    quokka = pen.first()\n    return quokka.wombat\n",
            ),
            (
                "src/zoo/tour.py",
                "def tour(pen):\n    platypus = pen.echidna()\n    return platypus.echidna\n",
            ),
        ],
    );
    let r = f.retriever();
    let ranked = |task: &str| keyword_ranking(&r, task);
    // As one paragraph the narrative's words win; as its title, the subject's do.
    let narrative = "a quokka and a wombat, said the platypus to the echidna";
    assert_eq!(
        ranked(narrative)[0],
        "zoo.tour.tour",
        "{:?}",
        ranked(narrative)
    );
    let report = "quokka and wombat\nsaid the platypus to the echidna";
    assert_eq!(ranked(report)[0], "zoo.feed.feed", "{:?}", ranked(report));
}

#[test]
fn a_task_that_names_a_library_finds_the_files_that_import_it() {
    let f = Fixture::with_files(
        false,
        &[
            (
                "src/zoo/feed.py",
                "import quokkafeed.rations\n\n\ndef feed(pen):\n    return pen.first()\n",
            ),
            (
                "src/zoo/tour.py",
                "def tour(pen):\n    guide = pen.guide()\n    return guide.quokkafeed_rations\n",
            ),
            (
                "src/zoo/pens.py",
                "def update(pen, count):\n    pen.count = count\n    return pen\n",
            ),
        ],
    );
    let r = f.retriever();
    // Only an import names the library. A name that matches another word of the title, and
    // a body that mentions the library's words in passing, are no match for the module that
    // declares it as a dependency.
    let task = "Update to quokkafeed-rations 2.0";
    let relevance = |r: &acms_retrieve::Retriever, name: &str| {
        let e = run(r, Query::new(task), strategy::KEYWORD);
        e.hits
            .iter()
            .find(|h| {
                r.corpus()
                    .node(h.node)
                    .is_some_and(|n| n.qualified_name == name)
            })
            .map_or(0.0, |h| h.relevance)
    };
    let (module, tour) = (relevance(&r, "zoo.feed"), relevance(&r, "zoo.tour.tour"));
    assert!(module > 0.5, "the name `update` is the best hit: {module}");
    assert!(module > tour, "{module} {tour}");
    drop(r);

    // An incremental run follows the import from one file to another.
    let src = f.dir.path().join("src/zoo");
    std::fs::write(
        src.join("feed.py"),
        "def feed(pen):\n    return pen.first()\n",
    )
    .unwrap();
    std::fs::write(
        src.join("pens.py"),
        "import quokkafeed.rations\n\n\ndef update(pen, count):\n    pen.count = count\n",
    )
    .unwrap();
    let opts = acms_index::IndexOptions::new(f.dir.path());
    let report = acms_index::index_repo(f.dir.path(), &opts).unwrap();
    let derived =
        acms_retrieve::update_derived(&opts.index_dir, &report.changes, &Default::default(), None)
            .unwrap();
    assert!(!derived.keyword_rebuilt, "{derived:?}");
    let r = f.retriever();
    assert!(
        relevance(&r, "zoo.pens") > 0.5,
        "{}",
        relevance(&r, "zoo.pens")
    );
    assert_eq!(relevance(&r, "zoo.feed"), 0.0);
}

#[test]
fn a_test_named_after_the_task_does_not_push_the_source_under_the_minimum_relevance() {
    let f = Fixture::with_files(
        false,
        &[
            (
                "tests/test_feeding.py",
                "def test_quokka_wombat_feeding():\n    quokka_wombat_feeding(quokka=1, wombat=2)\n",
            ),
            (
                "src/zoo/pens.py",
                "def restock(pen, keeper, season):\n    ledger_0 = pen.count_animals(keeper, season, 0)\n    ledger_1 = pen.count_animals(keeper, season, 1)\n    ledger_2 = pen.count_animals(keeper, season, 2)\n    ledger_3 = pen.count_animals(keeper, season, 3)\n    ledger_4 = pen.count_animals(keeper, season, 4)\n    ledger_5 = pen.count_animals(keeper, season, 5)\n    ledger_6 = pen.count_animals(keeper, season, 6)\n    ledger_7 = pen.count_animals(keeper, season, 7)\n    ledger_8 = pen.count_animals(keeper, season, 8)\n    ledger_9 = pen.count_animals(keeper, season, 9)\n    ledger_10 = pen.count_animals(keeper, season, 10)\n    ledger_11 = pen.count_animals(keeper, season, 11)\n    ledger_12 = pen.count_animals(keeper, season, 12)\n    ledger_13 = pen.count_animals(keeper, season, 13)\n    ledger_14 = pen.count_animals(keeper, season, 14)\n    ledger_15 = pen.count_animals(keeper, season, 15)\n    ledger_16 = pen.count_animals(keeper, season, 16)\n    ledger_17 = pen.count_animals(keeper, season, 17)\n    ledger_18 = pen.count_animals(keeper, season, 18)\n    ledger_19 = pen.count_animals(keeper, season, 19)\n    ledger_20 = pen.count_animals(keeper, season, 20)\n    ledger_21 = pen.count_animals(keeper, season, 21)\n    ledger_22 = pen.count_animals(keeper, season, 22)\n    ledger_23 = pen.count_animals(keeper, season, 23)\n    ledger_24 = pen.count_animals(keeper, season, 24)\n    ledger_25 = pen.count_animals(keeper, season, 25)\n    ledger_26 = pen.count_animals(keeper, season, 26)\n    ledger_27 = pen.count_animals(keeper, season, 27)\n    ledger_28 = pen.count_animals(keeper, season, 28)\n    ledger_29 = pen.count_animals(keeper, season, 29)\n    ledger_30 = pen.count_animals(keeper, season, 30)\n    ledger_31 = pen.count_animals(keeper, season, 31)\n    ledger_32 = pen.count_animals(keeper, season, 32)\n    ledger_33 = pen.count_animals(keeper, season, 33)\n    ledger_34 = pen.count_animals(keeper, season, 34)\n    ledger_35 = pen.count_animals(keeper, season, 35)\n    ledger_36 = pen.count_animals(keeper, season, 36)\n    ledger_37 = pen.count_animals(keeper, season, 37)\n    ledger_38 = pen.count_animals(keeper, season, 38)\n    ledger_39 = pen.count_animals(keeper, season, 39)\n    pen.quokka_rations = keeper.ration(season)\n",
            ),
        ],
    );
    let r = f.retriever();
    let ranked = keyword_ranking(&r, "quokka wombat feeding");
    // The test matches every word in its name; the pen's long body names one of them once.
    assert!(
        ranked
            .iter()
            .any(|n| n.ends_with("test_quokka_wombat_feeding")),
        "{ranked:?}"
    );
    assert!(ranked.iter().any(|n| n == "zoo.pens.restock"), "{ranked:?}");
}

#[test]
fn an_operator_in_the_tasks_code_names_the_code_that_implements_it() {
    let f = Fixture::with_files(
        false,
        &[(
            "src/printing/pretty.py",
            "class PrettyPrinter:\n    def _print_Pow(self, power):\n        return self.root(power)\n\n    def _print_Mod(self, expr):\n        return self.join(expr)\n",
        )],
    );
    let r = f.retriever();
    let ranked = |task: &str| keyword_ranking(&r, task);
    // The report never says "power"; its code raises to one.
    let task = "pretty printing is wrong\n```\n>>> pprint(pi**(1/E))\n```";
    let found = ranked(task);
    assert_eq!(
        found.first().map(String::as_str),
        Some("printing.pretty.PrettyPrinter._print_Pow"),
        "{found:?}"
    );
    // Without the operator nothing points at it.
    let found = ranked("pretty printing is wrong\n```\n>>> pprint(pi)\n```");
    assert_ne!(
        found.first().map(String::as_str),
        Some("printing.pretty.PrettyPrinter._print_Pow"),
        "{found:?}"
    );
}

#[test]
fn a_setting_the_task_names_is_found_and_named() {
    let mut settings: String = (0..40)
        .map(|i| format!("OPTION_{i}_ENABLED = False\n"))
        .collect();
    settings.push_str(
        "FILE_UPLOAD_PERMISSIONS = None\nLOGGING_CONFIG = \"logging.config.dictConfig\"\n",
    );
    let lookups = "numpy = import_module(\"numpy\")\nSHOP = \"shop\"\nextensions = [\"autodoc\"]\n";
    let f = Fixture::with_files(
        false,
        &[
            ("conf/global_settings.py", &settings),
            ("shop/lookups.py", lookups),
        ],
    );
    let r = f.retriever();
    let task = "Set default FILE_UPLOAD_PERMISSIONS to 0o644";
    assert_eq!(
        qualified_names(&mentioned(&r, task)),
        ["conf.global_settings.FILE_UPLOAD_PERMISSIONS"]
    );
    // A lower-case word or a module is not a constant's name, nor another spelling of it.
    let task = "```python\nimport numpy as np\nfrom shop import extensions\n```";
    assert_eq!(qualified_names(&mentioned(&r, task)), Vec::<String>::new());
    let found = keyword_ranking(&r, "file upload permissions default");
    assert_eq!(
        found.first().map(String::as_str),
        Some("conf.global_settings.FILE_UPLOAD_PERMISSIONS"),
        "{found:?}"
    );
}

#[test]
fn an_identifier_names_code_not_a_document_heading() {
    let f = Fixture::with_files(
        false,
        &[(
            "docs/guide.md",
            "# Sales tax\n\nHow the shop computes sales tax.\n\n# Checkout\n\nPaying.\n",
        )],
    );
    let r = f.retriever();
    let named = mentioned(&r, "`checkout(cart)` and `sales_tax(10)` are wrong");
    assert!(
        named.iter().all(|(path, _)| !path.starts_with("docs/")),
        "a heading resolved: {named:?}"
    );
    assert!(
        qualified_names(&named).contains(&"shop.pricing.sales_tax".to_string()),
        "{named:?}"
    );
}

#[test]
fn a_member_of_an_imported_library_names_the_library_not_the_project() {
    let f = Fixture::with_files(false, &[]);
    let r = f.retriever();
    // The shop defines `sales_tax`; `fiscal` is someone else's package, `shop` is the project.
    let foreign = "```python\nimport fiscal as fs\nfs.sales_tax(10)\n```";
    assert_eq!(mentioned(&r, foreign), []);
    let own = "```python\nimport shop as s\ns.sales_tax(10)\n```";
    assert_eq!(
        qualified_names(&mentioned(&r, own)),
        ["shop.pricing.sales_tax"]
    );
    // Named bare as well, it is the project's again.
    let both = "```python\nimport fiscal\nfiscal.sales_tax(10)\n```\nand `sales_tax()` is wrong";
    assert_eq!(
        qualified_names(&mentioned(&r, both)),
        ["shop.pricing.sales_tax"]
    );
}

#[test]
fn a_traceback_frame_names_the_function_nearest_its_line_in_the_installed_file() {
    let f = Fixture::with_files(
        false,
        &[(
            "src/shop/options.py",
            "class Gens:\n    def preprocess(cls, gens):\n        return gens\n\n\nclass Domain:\n    # the domain option\n    def preprocess(cls, domain):\n        if domain:\n            return domain\n        raise ValueError(domain)\n",
        )],
    );
    let r = f.retriever();
    // IPython's frame, from an installed copy two lines younger than the index.
    let task = "```\nValueError    Traceback (most recent call last)\n/venv/site-packages/shop/options.py in preprocess(cls, domain)\n     12             return domain\n---> 13         raise ValueError(domain)\n```";
    let reading = acms_retrieve::task::read(task);
    let weight = |qualified: &str| {
        r.corpus()
            .resolve_mentions(&reading)
            .iter()
            .filter(|m| r.corpus().node(m.node).unwrap().qualified_name == qualified)
            .map(|m| m.weight)
            .next()
    };
    assert_eq!(
        weight("shop.options.Domain.preprocess"),
        Some(acms_retrieve::task::IN_CODE)
    );
    let other = weight("shop.options.Gens.preprocess").unwrap_or(0.0);
    assert!(
        other < 1.0,
        "the other preprocess is only a namesake: {other}"
    );
}

/// The (path, qualified name) of every node `task` mentions, sorted.
/// The keyword strategy's hits for `task`, best first, by qualified name.
fn keyword_ranking(r: &acms_retrieve::Retriever, task: &str) -> Vec<String> {
    let e = run(r, Query::new(task), strategy::KEYWORD);
    names(r, &e, strategy::KEYWORD)
}

fn mentioned(r: &acms_retrieve::Retriever, task: &str) -> Vec<(String, String)> {
    let reading = acms_retrieve::task::read(task);
    let mut named: Vec<(String, String)> = r
        .corpus()
        .resolve_mentions(&reading)
        .iter()
        .filter_map(|m| r.corpus().node(m.node))
        .map(|n| (n.path.clone(), n.qualified_name.clone()))
        .collect();
    named.sort();
    named
}

fn qualified_names(named: &[(String, String)]) -> Vec<String> {
    let mut names: Vec<String> = named.iter().map(|(_, q)| q.clone()).collect();
    names.sort();
    names
}
