//! Which index folders acms trusts, and how it knows its own.
//!
//! An index folder is input like the repository beside it: a clone can ship a `.acms/`, a
//! tarball can carry one, `git pull` can overwrite the ignored files in it. So acms uses an
//! index folder only when it can prove that it wrote it, for this user, on this machine. The
//! proof is the **seal** (the file `seal` in it): a keyed BLAKE3 MAC, under a per-user secret
//! ([`KEY_FILE`] in the user's acms configuration directory: 32 random bytes created on first
//! use, readable by the user only), over the canonical path of the repository the index was
//! built from and the random id of its store (`store_id` in `index.sqlite`'s `meta`).
//!
//! A folder is acms's own ([`Standing::Ours`]) when its seal verifies and nothing in it is a
//! symbolic link (acms writes none); the store then checks that it carries the sealed id. So:
//!
//! - the repository root of an index comes from its seal, never from a value in the store;
//! - an index shipped, cloned or copied from another user or machine fails the MAC: acms never
//!   reads, writes or deletes anything in it;
//! - an `index.sqlite` swapped into a sealed folder carries another id and is refused too;
//! - a copy of the user's own index (a restored cache, a seed copied by the eval harness) is
//!   still the user's: the seal names the repository, not the folder.
//!
//! What the seal does not cover: files *inside* a sealed folder other than the store (the
//! keyword index, the vectors, the plans). Those are checked where they are read — no path
//! they hold is followed out of the folder (see `acms-keyword`'s managed-file check) and every
//! byte is parsed as untrusted — so a planted file can at worst make a derived index be
//! rebuilt.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The seal file inside an index folder.
const SEAL_FILE: &str = "seal";
/// File name of the database inside the index directory (the store's, named here with the
/// folder's other files).
pub const DB_FILE: &str = "index.sqlite";

/// The per-user key file, inside [`acms_core::user_config_dir`].
pub const KEY_FILE: &str = "index-key";

/// What acms writes into a new index folder's `.gitignore`: the folder is never committed by
/// accident (and so never shipped to someone else, who would not trust it anyway).
const GITIGNORE: &str =
    "# Written by acms: an index is per user and machine, never committed.\n*\n";

/// Entries of an index folder looked at for links, at most: an index holds a few dozen files.
const MAX_ENTRIES: usize = 100_000;

/// What an index folder is to acms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// No folder, an empty one, or one holding only what acms writes before its first seal
    /// (the `.gitignore`): acms may create its index there.
    Vacant,
    /// Sealed by this user's acms for the repository `repo`, with the store id `store_id`.
    Ours { repo: PathBuf, store_id: String },
    /// Anything else; the text says why, in a few words.
    Foreign(String),
}

/// The seal as stored: the MAC input's fields and the MAC, hex.
#[derive(Serialize, Deserialize)]
struct SealFile {
    version: u32,
    /// The repository's canonical path, as bytes in hex (paths need not be UTF-8).
    repo: String,
    store_id: String,
    mac: String,
}

const SEAL_VERSION: u32 = 1;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The MAC of (repository, store id) under `key`; the fields are length-prefixed, so no two
/// inputs share an encoding.
fn mac(key: &[u8; 32], repo: &[u8], store_id: &str) -> String {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(b"acms index seal v1\0");
    for field in [repo, store_id.as_bytes()] {
        h.update(&(field.len() as u64).to_le_bytes());
        h.update(field);
    }
    h.finalize().to_hex().to_string()
}

/// A fresh random id for a new store.
pub(crate) fn new_store_id() -> Result<String> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| Error::Key {
        path: PathBuf::new(),
        message: format!("no randomness from the operating system: {e}"),
    })?;
    Ok(hex(&id))
}

/// The user's key: read from [`KEY_FILE`], created (mode 0600) on first use. Two processes
/// (or threads) creating it at once agree on one key: each writes a temporary file of its own
/// and links it into place, and the loser reads the winner's.
pub fn user_key() -> Result<[u8; 32]> {
    let dir = acms_core::user_config_dir().ok_or_else(|| Error::Key {
        path: PathBuf::from("~/.config/acms"),
        message: "neither XDG_CONFIG_HOME nor HOME is set".into(),
    })?;
    key_in(&dir)
}

/// [`user_key`] in `dir`.
fn key_in(dir: &Path) -> Result<[u8; 32]> {
    let path = dir.join(KEY_FILE);
    let key_err = |message: String| Error::Key {
        path: path.clone(),
        message,
    };
    if let Some(key) = read_key(&path).map_err(&key_err)? {
        return Ok(key);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| key_err(format!("cannot create its directory: {e}")))?;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| key_err(format!("no randomness: {e}")))?;
    // Unique per call, not per process: threads of one process create keys at once too.
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| key_err(format!("no randomness: {e}")))?;
    let tmp = dir.join(format!(
        "{KEY_FILE}.{}.{}.tmp",
        std::process::id(),
        hex(&nonce)
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(format!("{}\n", hex(&key)).as_bytes())?;
            f.sync_all()
        });
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(&path)
            .map_err(&key_err)?
            .ok_or_else(|| key_err("it vanished while being created".into())),
        Err(e) => Err(key_err(format!("cannot create it: {e}"))),
    }
}

/// The key in `path`, `None` when there is no such file.
fn read_key(path: &Path) -> std::result::Result<Option<[u8; 32]>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    unhex(text.trim())
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .map(Some)
        .ok_or_else(|| {
            "it is not 64 hex digits: move it away (indexes sealed with it are then rebuilt)".into()
        })
}

/// The first symbolic link (or other non-file, non-directory entry) under `dir`, if any.
fn first_link(dir: &Path) -> Option<String> {
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Some(format!("more than {MAX_ENTRIES} entries"));
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let rel = entry
                .path()
                .strip_prefix(dir)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            if kind.is_symlink() {
                return Some(format!("{rel} is a symbolic link"));
            }
            if kind.is_dir() {
                stack.push(entry.path());
            } else if !kind.is_file() {
                return Some(format!("{rel} is not a regular file"));
            }
        }
    }
    None
}

/// True when `dir` holds nothing that could be data: nothing at all, the `.gitignore` acms
/// writes first, or an empty `index.sqlite` (a `touch`).
fn vacant(dir: &Path) -> std::io::Result<bool> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let file = entry.file_type()?.is_file();
        let harmless = file
            && ((name == ".gitignore"
                && std::fs::read_to_string(entry.path()).is_ok_and(|t| t == GITIGNORE))
                || (name == DB_FILE && entry.metadata()?.len() == 0));
        if !harmless {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What `index_dir` is to acms (see the module documentation).
pub fn standing(index_dir: &Path) -> Result<Standing> {
    let md = match std::fs::symlink_metadata(index_dir) {
        Ok(md) => md,
        // Not there (a parent that is a file included): creating it says what is wrong.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Standing::Vacant);
        }
        Err(e) => return Ok(Standing::Foreign(format!("cannot read it: {e}"))),
    };
    // A link to a folder the user chose (`--index` on another disk) is followed; what lies
    // inside must still be acms's own.
    let is_dir = if md.is_symlink() {
        index_dir.is_dir()
    } else {
        md.is_dir()
    };
    if !is_dir {
        return Ok(Standing::Foreign("it is not a directory".into()));
    }
    match vacant(index_dir) {
        Ok(true) => return Ok(Standing::Vacant),
        Ok(false) => {}
        Err(e) => return Ok(Standing::Foreign(format!("cannot list it: {e}"))),
    }
    let text = match std::fs::read(index_dir.join(SEAL_FILE)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Standing::Foreign(
                "it has no seal: shipped with the repository, copied from elsewhere, or written by an acms before seals"
                    .into(),
            ));
        }
        Err(e) => return Ok(Standing::Foreign(format!("cannot read its seal: {e}"))),
    };
    let Ok(seal) = serde_json::from_slice::<SealFile>(&text) else {
        return Ok(Standing::Foreign("its seal is not one acms writes".into()));
    };
    let key = user_key()?;
    let repo = unhex(&seal.repo).unwrap_or_default();
    let valid = seal.version == SEAL_VERSION
        && !repo.is_empty()
        && constant_time_eq(
            mac(&key, &repo, &seal.store_id).as_bytes(),
            seal.mac.as_bytes(),
        );
    if !valid {
        return Ok(Standing::Foreign(
            "its seal was not made with your key: another user's or machine's index".into(),
        ));
    }
    if let Some(why) = first_link(index_dir) {
        return Ok(Standing::Foreign(why));
    }
    Ok(Standing::Ours {
        repo: PathBuf::from(std::ffi::OsStr::from_bytes(&repo)),
        store_id: seal.store_id,
    })
}

/// Compares two MACs without an early exit.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Makes `index_dir` (created if needed) acms's own index folder for `repo` and the store id
/// `store_id`: writes the `.gitignore` when missing, then the seal, under a temporary name
/// renamed into place (a reader never sees half a seal).
pub(crate) fn seal(index_dir: &Path, repo: &Path, store_id: &str) -> Result<()> {
    let dir_err = |source: std::io::Error| Error::IndexDir {
        path: index_dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(index_dir).map_err(dir_err)?;
    let ignore = index_dir.join(".gitignore");
    if std::fs::symlink_metadata(&ignore).is_err() {
        std::fs::write(&ignore, GITIGNORE).map_err(dir_err)?;
    }
    let key = user_key()?;
    let repo = repo.as_os_str().as_bytes();
    let file = SealFile {
        version: SEAL_VERSION,
        repo: hex(repo),
        store_id: store_id.to_string(),
        mac: mac(&key, repo, store_id),
    };
    let text = serde_json::to_vec(&file).map_err(|e| dir_err(std::io::Error::other(e)))?;
    let tmp = index_dir.join(format!("{SEAL_FILE}.tmp"));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, index_dir.join(SEAL_FILE)))
        .map_err(dir_err)
}

/// The index folder for `repo` when none is named: `<repo>/.acms` unless that holds something
/// acms did not write for this user, then a folder of the user's cache keyed by the
/// repository's canonical path (the foreign one is left exactly as it is). The note says
/// which, when it is not the plain default.
pub fn default_index_dir(repo: &Path) -> Result<(PathBuf, Option<String>)> {
    let in_repo = repo.join(".acms");
    // A link named `.acms` is the repository's, not the user's: it could lead anywhere.
    let linked = std::fs::symlink_metadata(&in_repo).is_ok_and(|m| m.is_symlink());
    let why = match standing(&in_repo)? {
        Standing::Vacant | Standing::Ours { .. } if !linked => return Ok((in_repo, None)),
        Standing::Foreign(why) => why,
        _ => "it is a symbolic link".to_string(),
    };
    let canonical = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(40)
        .collect();
    let hash = blake3::hash(canonical.as_os_str().as_bytes()).to_hex();
    let cache = acms_core::user_cache_dir().ok_or_else(|| Error::Key {
        path: PathBuf::from("~/.cache/acms"),
        message: "neither XDG_CACHE_HOME nor HOME is set".into(),
    })?;
    let dir = cache
        .join("indexes")
        .join(format!("{name}-{}", &hash.as_str()[..16]));
    let note = format!(
        "{} is not an index acms wrote for you ({why}); it is left untouched and this repository's index is {}",
        in_repo.display(),
        dir.display()
    );
    Ok((dir, Some(note)))
}

#[cfg(test)]
mod tests {

    /// A new user's first index runs many threads at once (a test binary, a rayon pool): they
    /// all get one key, and none fails. A temporary name per process let one thread's file be
    /// taken for another's ("it vanished while being created", "No such file or directory").
    #[test]
    fn threads_creating_the_key_at_once_agree_on_one() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("new").join("acms");
        let keys: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16).map(|_| s.spawn(|| key_in(&config))).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let first = keys[0].as_ref().unwrap();
        for k in &keys {
            assert_eq!(k.as_ref().unwrap(), first);
        }
        let leftovers: Vec<_> = std::fs::read_dir(&config)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from(KEY_FILE)]);
    }
    use super::*;

    #[test]
    fn a_seal_names_its_repository_and_a_forged_one_fails() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("idx");
        assert_eq!(standing(&index).unwrap(), Standing::Vacant);
        seal(&index, Path::new("/some/repo"), "abc").unwrap();
        assert_eq!(
            standing(&index).unwrap(),
            Standing::Ours {
                repo: PathBuf::from("/some/repo"),
                store_id: "abc".into()
            }
        );
        // The same fields under another key, as another user's acms would write them.
        let forged = SealFile {
            version: SEAL_VERSION,
            repo: hex(b"/some/repo"),
            store_id: "abc".into(),
            mac: mac(&[7u8; 32], b"/some/repo", "abc"),
        };
        std::fs::write(index.join(SEAL_FILE), serde_json::to_vec(&forged).unwrap()).unwrap();
        assert!(matches!(standing(&index).unwrap(), Standing::Foreign(_)));
        // Another repository under the user's own MAC of the first is no seal either.
        let mut moved = forged;
        moved.mac = mac(&user_key().unwrap(), b"/some/repo", "abc");
        moved.repo = hex(b"/other/repo");
        std::fs::write(index.join(SEAL_FILE), serde_json::to_vec(&moved).unwrap()).unwrap();
        assert!(matches!(standing(&index).unwrap(), Standing::Foreign(_)));
    }

    #[test]
    fn a_link_inside_a_sealed_folder_makes_it_foreign() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("idx");
        seal(&index, Path::new("/r"), "id").unwrap();
        std::fs::create_dir(index.join("keyword")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", index.join("keyword").join("meta.json"))
            .unwrap();
        assert!(
            matches!(standing(&index).unwrap(), Standing::Foreign(w) if w.contains("symbolic link"))
        );
    }

    #[test]
    fn only_the_gitignore_acms_writes_leaves_a_folder_vacant() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), GITIGNORE).unwrap();
        assert_eq!(standing(dir.path()).unwrap(), Standing::Vacant);
        std::fs::write(dir.path().join(".gitignore"), "!*\n").unwrap();
        assert!(matches!(
            standing(dir.path()).unwrap(),
            Standing::Foreign(_)
        ));
    }
}
