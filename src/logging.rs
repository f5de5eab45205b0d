//! Log set-up: `tracing` with human-readable or JSON output and
//! `RUST_LOG`-style filtering.

use tracing_subscriber::EnvFilter;

/// Output format of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One readable line per event (the default).
    #[default]
    Human,
    /// One JSON object per event, for log collectors.
    Json,
}

/// Installs the global subscriber, writing to stderr so that stdout stays
/// free for machine-readable command output (JSON lines, UCI).
///
/// `filter` uses `RUST_LOG` syntax (`info`, `chessbot::arm=debug`); the
/// `RUST_LOG` environment variable, when set, wins over it.
pub fn init(format: LogFormat, filter: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests, embedded use) is harmless: keep the first.
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
