//! Untrusted input at the edges of an index (issue 37): an index folder shipped inside a
//! repository, one the user wrote but a `git pull` could overwrite, secrets a repository
//! holds, a rebuild after damage, and files the refresh before an assembly must see.
//!
//! "Another user" is another `XDG_CONFIG_HOME`: another key, as on another machine.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::{acms, run};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the binary as a user whose configuration (hence index key) lives in `config` and whose
/// cache is `cache`.
fn run_as(config: &Path, cache: &Path, args: &[&str]) -> Output {
    acms()
        .env("XDG_CONFIG_HOME", config)
        .env("XDG_CACHE_HOME", cache)
        .args(args)
        .output()
        .expect("run acms")
}

/// `acms index REPO --no-vectors`, which must succeed; the repository's index folder.
fn index_plain(repo: &Path) -> PathBuf {
    let out = run(&["index", repo.to_str().unwrap(), "--no-vectors"]);
    assert!(out.status.success(), "{}", stderr(&out));
    repo.join(".acms")
}

/// `acms query --index INDEX --budget BUDGET TASK`, which must succeed.
fn query(index: &Path, budget: usize, task: &str) -> Output {
    let budget = budget.to_string();
    let out = run(&[
        "query",
        "--index",
        index.to_str().unwrap(),
        "--budget",
        &budget,
        task,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

/// Every file under `dir` with its bytes, for "nothing in it changed".
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Appends `paths` to the keyword index's `.managed.json`, the list tantivy's cleanup deletes
/// files by.
fn plant_managed(index: &Path, paths: &[String]) {
    let managed = index.join("keyword/.managed.json");
    let mut list: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&managed).unwrap()).unwrap();
    list.extend(paths.iter().cloned());
    std::fs::write(&managed, serde_json::to_string(&list).unwrap()).unwrap();
}

/// Item 1: a repository shipped a `.acms/` whose `keyword/.managed.json` listed files outside
/// it; indexing the clone (also with `--rebuild`), querying it and an MCP `search` deleted
/// them. Now the shipped folder is another user's: nothing in it is read, written or deleted,
/// and the clone's index is built in the user's cache instead.
#[test]
fn a_shipped_index_folder_deletes_nothing_and_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    write(&victim, "precious.txt", "precious");
    write(&victim, "p2.txt", "also precious");
    let (attacker, user, cache) = (
        dir.path().join("attacker-config"),
        dir.path().join("user-config"),
        dir.path().join("user-cache"),
    );

    // The attacker indexes the repository, plants the list and "commits" `.acms/`.
    let repo = dir.path().join("clone");
    write(&repo, "app.py", "def handler(event):\n    return event\n");
    let out = run_as(
        &attacker,
        &cache,
        &["index", repo.to_str().unwrap(), "--embedder", "hash"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let shipped = repo.join(".acms");
    let climb = format!("{}victim/p2.txt", "../".repeat(12));
    plant_managed(
        &shipped,
        &[victim.join("precious.txt").display().to_string(), climb],
    );
    let before = snapshot(&shipped);

    let index_args = ["index", repo.to_str().unwrap(), "--embedder", "hash"];
    for extra in [&[][..], &["--rebuild"][..]] {
        let args: Vec<&str> = index_args.iter().chain(extra).copied().collect();
        let out = run_as(&user, &cache, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.lines()
                .next()
                .unwrap_or("")
                .contains("not an index acms wrote for you"),
            "the first line says the shipped index is not used: {err}"
        );
        assert!(
            stdout(&out).contains(cache.to_str().unwrap()),
            "{}",
            stdout(&out)
        );
    }
    // Asked for the shipped folder by name: refused in one line.
    let out = run_as(
        &user,
        &cache,
        &[
            "query",
            "--index",
            shipped.to_str().unwrap(),
            "--budget",
            "500",
            "handler",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not an index acms wrote for you"),
        "{}",
        stderr(&out)
    );
    // An MCP host opening the clone gets the user's own index, never the shipped one.
    let answers = mcp_session(
        &user,
        &cache,
        &repo,
        &[
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"handler event"}}}"#,
        ],
    );
    assert!(answers.contains("app.handler"), "{answers}");
    assert_eq!(
        std::fs::read_to_string(victim.join("precious.txt")).unwrap(),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(victim.join("p2.txt")).unwrap(),
        "also precious"
    );
    assert_eq!(snapshot(&shipped), before, "the shipped folder was touched");
}

/// Runs `acms mcp --repo REPO` as the given user, sends `initialize` then `calls` (one JSON-RPC
/// request per line), closes stdin and returns everything the server wrote to stdout.
fn mcp_session(config: &Path, cache: &Path, repo: &Path, calls: &[&str]) -> String {
    use std::io::Write;
    let mut child = acms()
        .env("XDG_CONFIG_HOME", config)
        .env("XDG_CACHE_HOME", cache)
        .args(["mcp", "--repo", repo.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = vec![
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    ];
    lines.extend_from_slice(calls);
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Item 1, the other way in: the user's own index, sealed, with a list planted in it (a `git
/// pull` overwrites ignored files). The keyword index is refused before tantivy reads the list,
/// rebuilt, and the listed files stay.
#[test]
fn a_list_planted_in_the_users_own_index_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let repo = crate::fixture();
    let root = repo.path();
    let index = index_plain(root);
    let planted = [
        victim.display().to_string(),
        format!("{}victim.txt", "../".repeat(15)),
    ];
    let search = [
        "search",
        "--index",
        index.to_str().unwrap(),
        "--strategy",
        "simple-keyword",
        "gift wrap",
    ];
    // Through the refresh before a search, then through a plain index run.
    for (i, args) in [
        &search[..],
        &["index", root.to_str().unwrap(), "--no-vectors"],
    ]
    .into_iter()
    .enumerate()
    {
        plant_managed(&index, &planted);
        let file = root.join(format!("shop/new{i}.py"));
        std::fs::write(file, "def gift_wrap():\n    return 1\n").unwrap();
        let out = run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
    assert!(stdout(&run(&search)).contains("gift_wrap"));
}

/// Item 2: a shipped `index.sqlite` whose `meta.repo_root` named another directory made
/// `query` read, print and index that directory. The repository root now comes from the
/// folder's seal: a root written into the store is never read.
#[test]
fn a_repository_root_written_into_the_store_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    write(
        &outside,
        "secret_plans.py",
        "def outside_function():\n    return 'OUTSIDE_MARKER'\n",
    );
    let repo = dir.path().join("repo");
    write(&repo, "app.py", "def inside_function():\n    return 1\n");
    let index = index_plain(&repo);
    let conn = rusqlite::Connection::open(index.join("index.sqlite")).unwrap();
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('repo_root', ?1)",
        [outside.to_str().unwrap()],
    )
    .unwrap();
    drop(conn);
    let out = query(&index, 1000, "outside function");
    assert!(!stdout(&out).contains("OUTSIDE_MARKER"), "{}", stdout(&out));
    let store = acms_index::Store::open(&index).unwrap();
    assert_eq!(
        store.meta().unwrap().repo_root,
        repo.canonicalize().unwrap()
    );
    assert!(
        store.files().unwrap().iter().all(|f| f.path == "app.py"),
        "an outside file was indexed"
    );
}

/// A repository of secret fixtures: an AWS key pair, a private key, an env file with a
/// password, and source code with a token and a database URL inside.
fn secrets_repo(root: &Path) -> Vec<String> {
    // Values assembled at run time, so this test file holds no secret-shaped literal.
    let aws_id = ["AKIA", "Q3EXAMPLE7XYZ2AB"].concat();
    let aws_secret = ["wJalrXUtnFEMI", "/K7MDENG/bPxRfiCYzEXAMPLE"].concat();
    let key = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0";
    let password = "Sup3r-s3cret-DB-pw";
    let token = ["ghp_", "R4nd0mT0k3nV4lu3F0rT3st1ngAcms000001"].concat();
    let db_pw = "h1dden-Pg-pass";
    write(
        root,
        "config/credentials.json",
        &format!(
            "{{\"aws_access_key_id\": \"{aws_id}\", \"aws_secret_access_key\": \"{aws_secret}\"}}\n"
        ),
    );
    write(
        root,
        "config/server.pem",
        &format!(
            "-----BEGIN RSA {p}-----\n{key}\n{key}\n-----END RSA {p}-----\n",
            p = "PRIVATE KEY"
        ),
    );
    write(
        root,
        "config/prod.env",
        &format!("DATABASE_PASSWORD={password}\nDATABASE_HOST=db.internal\n"),
    );
    write(
        root,
        "app/settings.py",
        &format!(
            "\"\"\"Database connection settings and credentials.\"\"\"\n\n\
             GITHUB_TOKEN = \"{token}\"\n\
             DATABASE_URL = \"postgresql://app:{db_pw}@db.internal:5432/prod\"\n\n\n\
             def database_connection(password=None):\n    \
             \"\"\"Open the database connection with the credentials.\"\"\"\n    \
             return connect(DATABASE_URL, password)\n"
        ),
    );
    write(
        root,
        "app/aws.py",
        &format!(
            "def aws_client():\n    \"\"\"AWS secret key and access key.\"\"\"\n    \
             return boto(key_id=\"{aws_id}\")\n"
        ),
    );
    vec![
        aws_id,
        aws_secret,
        key.to_string(),
        password.to_string(),
        token,
        db_pw.to_string(),
    ]
}

/// Item 3: secrets a repository holds went to the model provider. Files named like credentials
/// are held back (one warning each, never the value) and secret values in code are redacted:
/// no value reaches an index, a context, a search result or an MCP result.
#[test]
fn secrets_never_leave_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let values = secrets_repo(repo);
    let out = run(&["index", repo.to_str().unwrap(), "--embedder", "hash"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for held in [
        "config/credentials.json",
        "config/server.pem",
        "config/prod.env",
    ] {
        assert_eq!(
            err.lines()
                .filter(|l| l.contains(held) && l.contains("held back"))
                .count(),
            1,
            "{held}: {err}"
        );
    }
    assert!(
        err.contains("app/settings.py") && err.contains("redacted"),
        "{err}"
    );
    for v in &values {
        assert!(!err.contains(v.as_str()), "a warning holds a secret: {err}");
    }
    let index = repo.join(".acms");
    let task = "database connection credentials aws secret key password github token";
    let mut outputs = Vec::new();
    for args in [
        vec![
            "query",
            "--index",
            index.to_str().unwrap(),
            "--budget",
            "8000",
            task,
        ],
        vec![
            "query",
            "--index",
            index.to_str().unwrap(),
            "--budget",
            "8000",
            "--format",
            "json",
            task,
        ],
        vec!["search", "--index", index.to_str().unwrap(), task],
        vec![
            "query",
            "--index",
            index.to_str().unwrap(),
            "--budget",
            "2000",
            "--file",
            "config/server.pem",
            "--file",
            "config/credentials.json",
            task,
        ],
    ] {
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        outputs.push(stdout(&out));
    }
    assert!(
        outputs[0].contains("def database_connection"),
        "{}",
        outputs[0]
    );
    assert!(outputs[0].contains("[redacted"), "{}", outputs[0]);
    // Through MCP, as an agent host would ask.
    let mut ws = acms::Workspace::open_with(
        repo,
        acms::WorkspaceOptions {
            vectors: false,
            ..acms::WorkspaceOptions::default()
        },
    )
    .unwrap();
    let ctx = ws
        .context(acms::Query::new(task), acms::BudgetSpec::tokens(8000))
        .unwrap();
    outputs.push(serde_json::to_string(&ctx).unwrap());
    // Nothing in the store either: it is what every later answer is made from.
    outputs.push(
        String::from_utf8_lossy(&std::fs::read(index.join("index.sqlite")).unwrap()).into_owned(),
    );
    for (i, text) in outputs.iter().enumerate() {
        for v in &values {
            assert!(!text.contains(v.as_str()), "output {i} holds {v:?}");
        }
    }
}

/// Item 6: after a garbled store was refused, `--rebuild` wrote "0 documents" to the keyword
/// index and embedded nothing (their generations matched the new store's by chance), so a new
/// file was never found. The same after deleting `index.sqlite*` by hand.
#[test]
fn a_rebuild_rebuilds_everything_derived_from_the_store() {
    let repo = crate::fixture();
    let root = repo.path();
    let index_args = ["index", root.to_str().unwrap(), "--embedder", "hash"];
    assert!(run(&index_args).status.success());
    let index = root.join(".acms");
    let search = |term: &str| {
        stdout(&run(&[
            "search",
            "--index",
            index.to_str().unwrap(),
            "--strategy",
            "simple-keyword",
            term,
        ]))
    };
    crate::garble_table_page(&index.join("index.sqlite"), "nodes");
    std::fs::write(root.join("shop/beta.py"), "def beta_new():\n    return 2\n").unwrap();
    assert_eq!(run(&index_args).status.code(), Some(1));
    let rebuild: Vec<&str> = index_args.iter().copied().chain(["--rebuild"]).collect();
    let out = run(&rebuild);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("keyword index: 0 documents"), "{text}");
    assert!(!text.contains(" 0 embedded"), "{text}");
    assert!(search("beta_new").contains("beta_new"), "after --rebuild");

    for suffix in ["", "-wal", "-shm", ".stamp"] {
        let _ = std::fs::remove_file(index.join(format!("index.sqlite{suffix}")));
    }
    std::fs::write(
        root.join("shop/gamma.py"),
        "def gamma_new():\n    return 3\n",
    )
    .unwrap();
    let out = run(&index_args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("keyword index: 0 documents"),
        "{}",
        stdout(&out)
    );
    assert!(
        search("gamma_new").contains("gamma_new"),
        "after deleting the store"
    );
}

/// Item 7: a file created after the last index run (in a new directory too) was not picked up
/// by the refresh before an assembly in a new process ("refreshed 0 files").
#[test]
fn new_files_are_picked_up_before_an_assembly() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write(repo, "a.py", "def alpha():\n    return 1\n");
    let index = index_plain(repo);
    for (file, name) in [
        ("z.py", "zeta_newfunc"),
        ("pkg/deeper/y.py", "ypsilon_newfunc"),
    ] {
        write(repo, file, &format!("def {name}():\n    return 2\n"));
        let out = query(&index, 1000, name);
        assert!(stdout(&out).contains(name), "{}", stdout(&out));
        assert!(
            stderr(&out).contains("refreshed 1 files"),
            "{}",
            stderr(&out)
        );
    }
}

/// Item 11: a file name with control characters looked new on every check (the refresh walked
/// with lossy names of its own), so every query re-indexed it.
#[test]
fn odd_file_names_are_not_refreshed_on_every_query() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write(repo, "a.py", "def alpha():\n    return 1\n");
    std::fs::write(
        repo.join("we\x01ird\tname.py"),
        "def weird_name():\n    return 1\n",
    )
    .unwrap();
    std::fs::write(
        repo.join(std::ffi::OsStr::from_bytes_lossless(b"bad\xffutf8.py")),
        "def bad_bytes():\n    return 1\n",
    )
    .unwrap();
    let index = index_plain(repo);
    for _ in 0..2 {
        let out = query(&index, 500, "weird name");
        assert!(
            stderr(&out).contains("refreshed 0 files"),
            "{}",
            stderr(&out)
        );
    }
}

/// Bytes as an `OsStr` (file names need not be UTF-8).
trait FromBytes {
    fn from_bytes_lossless(b: &[u8]) -> &std::ffi::OsStr;
}

impl FromBytes for std::ffi::OsStr {
    fn from_bytes_lossless(b: &[u8]) -> &std::ffi::OsStr {
        std::os::unix::ffi::OsStrExt::from_bytes(b)
    }
}

/// A new index folder carries a `.gitignore` that keeps it out of commits.
#[test]
fn a_new_index_folder_is_never_committed() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write(repo, "a.py", "def alpha():\n    return 1\n");
    let index = index_plain(repo);
    let ignore = std::fs::read_to_string(index.join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
}
