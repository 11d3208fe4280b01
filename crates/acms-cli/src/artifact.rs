//! `acms artifact get|verify DIGEST`: operator access to the content-addressed artifact
//! store that `acms compact --artifacts DIR` and `acms proxy --artifacts DIR` offload to.
//! DIGEST is exactly `artifact://sha256/<64 lower-case hex>` or the 64-hex digest itself;
//! anything else is refused before the store is touched. Every read verifies the digest.
//!
//! Exit codes: 0 ok; 1 not in the store or unreadable; 4 not a digest; 5 corrupt (the
//! stored bytes no longer hash to their name).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use acms::compact::artifact::{ARTIFACT_SCHEME, ArtifactRef, is_digest};
use acms::compact::{ArtifactStore, Error};

/// Exit code: the argument is not an artifact digest.
pub const EXIT_BAD_DIGEST: u8 = 4;
/// Exit code: the stored body does not match its digest.
pub const EXIT_CORRUPT: u8 = 5;

/// Read or check a stored artifact.
#[derive(clap::Args, Debug)]
#[command(after_help = "Exit codes: 0 ok; 1 missing; 4 not a digest; 5 corrupt.")]
pub struct ArtifactArgs {
    #[command(subcommand)]
    pub command: ArtifactCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum ArtifactCommand {
    /// Print a stored body (verified) to stdout.
    Get(Target),
    /// Check that a stored body matches its digest; prints its size.
    Verify(Target),
}

#[derive(clap::Args, Debug)]
pub struct Target {
    /// `artifact://sha256/<hex>` or the 64-hex digest.
    pub digest: String,
    /// The artifact directory (as given to --artifacts).
    #[arg(long, default_value = ".acms/artifacts")]
    pub artifacts: PathBuf,
}

/// The digest of a strict reference or a bare digest.
fn digest(arg: &str) -> Option<&str> {
    if is_digest(arg) {
        return Some(arg);
    }
    ArtifactRef::parse(arg).ok()
}

pub fn run(args: &ArtifactArgs) -> anyhow::Result<ExitCode> {
    let (target, print) = match &args.command {
        ArtifactCommand::Get(t) => (t, true),
        ArtifactCommand::Verify(t) => (t, false),
    };
    let Some(d) = digest(&target.digest) else {
        eprintln!(
            "error: not an artifact digest: expected {ARTIFACT_SCHEME}<64 lower-case hex> or the 64-hex digest"
        );
        return Ok(ExitCode::from(EXIT_BAD_DIGEST));
    };
    let store = ArtifactStore::new(&target.artifacts);
    match store.get_digest(d) {
        Ok(body) if print => {
            let mut out = std::io::stdout().lock();
            out.write_all(&body)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Ok(body) => {
            println!("ok {ARTIFACT_SCHEME}{d} {} bytes", body.len());
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ Error::ArtifactCorrupt { .. }) => {
            eprintln!("error: {e}; offload it again from its source, or delete the file");
            Ok(ExitCode::from(EXIT_CORRUPT))
        }
        Err(e @ Error::ArtifactMissing { .. }) => {
            eprintln!(
                "error: {e} under {}: check --artifacts",
                target.artifacts.display()
            );
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.into()),
    }
}
