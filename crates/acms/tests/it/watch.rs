//! A watched workspace (the MCP server's) skips the walk after no change, and otherwise sees
//! exactly what an unwatched one sees: the same files refreshed after every kind of change,
//! including a new directory, a rename, a touch and a new ignore rule.

use std::path::Path;
use std::sync::Arc;

use acms::{BudgetSpec, FakeClock, Query, Workspace, WorkspaceOptions};

use crate::T0;

fn open(repo: &Path, index: &Path, watch: bool) -> Workspace {
    Workspace::open_with(
        repo,
        WorkspaceOptions {
            index_dir: Some(index.to_path_buf()),
            clock: Arc::new(FakeClock::at(T0)),
            watch,
            ..WorkspaceOptions::default()
        },
    )
    .unwrap()
}

/// Refreshes until the watch has settled (at most three calls: the first walk watches
/// what it entered, the second confirms nothing landed before the watches did).
fn settle(ws: &mut Workspace) -> usize {
    for calls in 1..=3 {
        if ws.refresh().unwrap().watched {
            return calls;
        }
    }
    panic!("the watch did not settle");
}

#[test]
fn a_warm_call_walks_nothing_and_says_so() {
    let repo = acms_testkit::shop();
    let index = tempfile::tempdir().unwrap();
    let mut ws = open(repo.path(), index.path(), true);
    assert_eq!(settle(&mut ws), 3);
    let ctx = ws
        .context(Query::new("sales tax"), BudgetSpec::tokens(1000))
        .unwrap();
    assert!(ctx.refresh.watched);
    assert_eq!((ctx.refresh.checked, ctx.refresh.refreshed), (0, 0));
    assert!(
        ctx.context
            .diagnostics
            .notes
            .iter()
            .any(|n| n == "refreshed 0 files before assembly (the file watch saw no change)"),
        "{:?}",
        ctx.context.diagnostics.notes
    );
    // Reading the files to show them (above) is not a change.
    assert!(ws.refresh().unwrap().watched);

    // An edit right before the call is seen by it: events are read by the call, not a thread.
    let p = repo.path().join("shop/pricing.py");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text + "\ndef gift_wrap(order):\n    return order\n").unwrap();
    let r = ws.refresh().unwrap();
    assert_eq!(r.paths, ["shop/pricing.py"]);
    // An edit of a known file: that file alone is looked at, nothing is walked.
    assert!(r.named && r.checked == 1, "{r:?}");
    // The index run's own writes are not news.
    assert!(ws.refresh().unwrap().watched);
}

#[test]
fn watched_and_unwatched_workspaces_refresh_the_same_files() {
    let repo = acms_testkit::shop();
    let (i1, i2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut watched = open(repo.path(), i1.path(), true);
    let mut walking = open(repo.path(), i2.path(), false);
    settle(&mut watched);
    let root = repo.path().to_path_buf();
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let append = |rel: &str, text: &str| {
        use std::io::Write;
        let mut f = std::fs::File::options()
            .append(true)
            .open(root.join(rel))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    };
    // What happened, whether the watch alone names what changed (`None`: either), the change.
    type Step<'a> = (&'a str, Option<bool>, Box<dyn Fn() + 'a>);
    let steps: Vec<Step> = vec![
        (
            "edit",
            Some(true),
            Box::new(|| write("shop/cart.py", "def emptied():\n    return []\n")),
        ),
        (
            "new file in a new directory tree",
            Some(false),
            Box::new(|| {
                write(
                    "shop/billing/refunds/refund.py",
                    "def refund(c):\n    return c\n",
                )
            }),
        ),
        (
            "edit inside the new directory",
            None,
            Box::new(|| {
                write(
                    "shop/billing/refunds/refund.py",
                    "def refund(charge):\n    return charge\n",
                )
            }),
        ),
        (
            "rename",
            Some(true),
            Box::new(|| {
                std::fs::rename(
                    root.join("shop/billing/refunds/refund.py"),
                    root.join("shop/billing/refunds/give_back.py"),
                )
                .unwrap()
            }),
        ),
        (
            "touch, same content",
            Some(true),
            Box::new(|| {
                let f = std::fs::File::options()
                    .write(true)
                    .open(root.join("shop/pricing.py"))
                    .unwrap();
                f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(7))
                    .unwrap();
            }),
        ),
        (
            "append in place",
            Some(true),
            Box::new(|| append("shop/cart.py", "\ndef refilled():\n    return [1]\n")),
        ),
        (
            "permissions changed",
            Some(true),
            Box::new(|| {
                use std::os::unix::fs::PermissionsExt;
                let p = root.join("shop/cart.py");
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap()
            }),
        ),
        (
            "a save through a temporary file renamed over the file",
            Some(true),
            Box::new(|| {
                write("shop/.cart.py.tmp", "def emptied():\n    return ()\n");
                std::fs::rename(root.join("shop/.cart.py.tmp"), root.join("shop/cart.py")).unwrap()
            }),
        ),
        (
            "an editor's hidden swap file, kept",
            Some(true),
            Box::new(|| write("shop/.pricing.py.swp", "swap")),
        ),
        (
            "a file that came and went",
            Some(true),
            Box::new(|| {
                write("shop/scratch.py", "def scratch():\n    return 1\n");
                std::fs::remove_file(root.join("shop/scratch.py")).unwrap()
            }),
        ),
        (
            "a new file",
            Some(true),
            Box::new(|| write("shop/stock.py", "def in_stock(item):\n    return True\n")),
        ),
        (
            "a file deleted",
            Some(true),
            Box::new(|| std::fs::remove_file(root.join("shop/stock.py")).unwrap()),
        ),
        (
            "a file of a kind acms does not read, edited",
            None,
            Box::new(|| write("shop/orders.log", "one order\n")),
        ),
        (
            "a link to a file",
            Some(false),
            Box::new(|| {
                std::os::unix::fs::symlink("pricing.py", root.join("shop/alias.py")).unwrap()
            }),
        ),
        (
            // Two paths name the edited file: the walk finds both.
            "the link's target edited",
            Some(false),
            Box::new(|| append("shop/pricing.py", "\ndef rebate(order):\n    return 0\n")),
        ),
        (
            "a file replaced by a link",
            Some(false),
            Box::new(|| {
                std::os::unix::fs::symlink("cart.py", root.join("shop/.swap")).unwrap();
                std::fs::rename(root.join("shop/.swap"), root.join("shop/alias.py")).unwrap()
            }),
        ),
        (
            "an ignore rule",
            Some(false),
            Box::new(|| write(".gitignore", "billing/\n*_scratch.py\n")),
        ),
        (
            "a file an ignore rule leaves out, created in a watched directory",
            Some(true),
            Box::new(|| write("shop/tmp_scratch.py", "def scratched():\n    return 1\n")),
        ),
        (
            "a file the deny list holds back, created",
            Some(true),
            Box::new(|| write("shop/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n")),
        ),
        (
            "a directory removed",
            Some(false),
            Box::new(|| {
                std::fs::remove_file(root.join(".gitignore")).unwrap();
                std::fs::remove_dir_all(root.join("shop/billing")).unwrap()
            }),
        ),
        (
            "a directory moved in",
            Some(false),
            Box::new(|| {
                let outside = tempfile::tempdir().unwrap();
                let pkg = outside.path().join("loyalty");
                std::fs::create_dir(&pkg).unwrap();
                std::fs::write(pkg.join("points.py"), "def points(order):\n    return 1\n")
                    .unwrap();
                // Across file systems a rename fails; then the copy lands like an unpacked tree.
                if std::fs::rename(&pkg, root.join("loyalty")).is_err() {
                    write("loyalty/points.py", "def points(order):\n    return 1\n");
                }
            }),
        ),
        ("nothing", None, Box::new(|| {})),
    ];
    for (what, named, step) in steps {
        step();
        let a = watched.refresh().unwrap();
        let b = walking.refresh().unwrap();
        if let Some(named) = named {
            assert_eq!(a.named, named, "after {what}: {a:?}");
        }
        assert_eq!(a.paths, b.paths, "after {what}");
        if what == "the link's target edited" {
            assert_eq!(a.paths, ["shop/alias.py", "shop/pricing.py"]);
        }
        assert_eq!(a.refreshed, b.refreshed, "after {what}");
        let q = |ws: &mut Workspace| {
            ws.context(Query::new("refund points cart"), BudgetSpec::tokens(1200))
                .unwrap()
                .context
                .text
        };
        assert_eq!(q(&mut watched), q(&mut walking), "after {what}");
    }
    assert!(settle(&mut watched) <= 2, "settles again after the changes");
}
