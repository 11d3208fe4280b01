//! `acms artifact get|verify`: strict digests, verified reads, exit codes.

use crate::run;

#[test]
fn get_and_verify_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let store = acms::compact::ArtifactStore::new(dir.path());
    let body = "naïve 🦀 body\n".repeat(100);
    let r = store.put(body.as_bytes()).unwrap();
    let d = dir.path().to_str().unwrap();
    let get = run(&["artifact", "get", &r.uri(), "--artifacts", d]);
    assert_eq!(get.status.code(), Some(0));
    assert_eq!(get.stdout, body.as_bytes());
    let verify = run(&["artifact", "verify", &r.digest, "--artifacts", d]);
    assert_eq!(verify.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&verify.stdout).contains(&format!("{} bytes", body.len())));
    for bad in [
        "artifact://sha256/../../etc/passwd".to_string(),
        r.digest.to_uppercase(),
        format!("{}0", r.digest),
        "../../etc/passwd".to_string(),
    ] {
        let out = run(&["artifact", "get", &bad, "--artifacts", d]);
        assert_eq!(out.status.code(), Some(4), "{bad}");
        assert!(out.stdout.is_empty());
    }
    let missing = run(&["artifact", "verify", &"0".repeat(64), "--artifacts", d]);
    assert_eq!(missing.status.code(), Some(1));
    // Tampered: corrupt, and `get` prints nothing.
    let file = dir
        .path()
        .join("sha256")
        .join(&r.digest[..2])
        .join(&r.digest);
    std::fs::write(&file, "tampered").unwrap();
    let corrupt = run(&["artifact", "get", &r.uri(), "--artifacts", d]);
    assert_eq!(corrupt.status.code(), Some(5));
    assert!(corrupt.stdout.is_empty());
}
