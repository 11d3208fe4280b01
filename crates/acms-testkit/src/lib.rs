//! Test support: copies of the `tests/data/shop` fixture repository in temporary
//! directories, and a local HTTP server standing in for a download mirror. Only integration
//! tests depend on this crate.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// The fixture repository in the source tree (never written to).
pub fn shop_source() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/shop")
}

/// A fresh copy of the fixture repository.
pub fn shop() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    copy_dir(&shop_source(), dir.path());
    dir
}

/// Copies the tree `src` into the existing directory `dst`.
pub fn copy_dir(src: &Path, dst: &Path) {
    for entry in std::fs::read_dir(src).expect("readable fixture") {
        let entry = entry.expect("fixture entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            std::fs::create_dir_all(&to).expect("create fixture dir");
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).expect("copy fixture file");
        }
    }
}

/// How the server misbehaves.
#[derive(Clone, Copy)]
pub enum Serve {
    Faithfully,
    /// Flips one byte of this wheel.
    Tampered(&'static str),
    /// Announces this wheel's full length, sends half, hangs up.
    CutShort(&'static str),
}

/// A local HTTP server standing in for a download mirror: serves the files of `dir` by the last
/// segment of the requested path (as a wheel URL ends), misbehaving as `serve` says; returns
/// its base URL. It lives as long as the test process.
pub fn mirror(dir: PathBuf, serve: Serve) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut request = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                reader.read_line(&mut request).unwrap();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let path = request.split_whitespace().nth(1).unwrap_or("/");
                let name = path.rsplit('/').next().unwrap_or("");
                let Ok(mut bytes) = std::fs::read(dir.join(name)) else {
                    let _ =
                        stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
                    return;
                };
                let len = bytes.len();
                match serve {
                    Serve::Tampered(f) if f == name => bytes[len / 3] ^= 1,
                    Serve::CutShort(f) if f == name => bytes.truncate(len / 2),
                    _ => {}
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n"
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&bytes);
            });
        }
    });
    base
}
