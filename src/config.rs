//! The typed configuration: one TOML file, parsed once into checked structs.
//!
//! `config/default.toml` is compiled in; a user file given with `--config`
//! is read on top of the defaults (keys it leaves out keep their default).
//! Unknown keys are rejected, and every value is checked before anything
//! touches hardware: an error names the file, the key and what is allowed.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::logging::LogFormat;
use crate::service::ServiceConfig;

/// The shipped defaults, also compiled into the binary.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// What was wrong with a configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config {origin}: {message}")]
    Syntax { origin: String, message: String },
    #[error("config {origin}: key `{key}` = {value}: {allowed}")]
    Invalid {
        origin: String,
        key: String,
        value: String,
        allowed: String,
    },
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub log: LogConfig,
    pub game: GameConfig,
    pub service: ServiceConfig,
    pub engine: crate::engine::EngineConfig,
    pub arm: crate::arm::config::ArmConfig,
    pub camera: crate::camera::CameraConfig,
    pub vision: crate::vision::VisionConfig,
}

/// `[log]`: how the program reports what it does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `human` or `json`.
    pub format: LogFormat,
    /// `RUST_LOG`-style filter; the environment variable wins when set.
    pub filter: String,
}

/// `[game]`: where games are kept.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GameConfig {
    /// Finished games are written here as PGN files.
    pub games_dir: PathBuf,
    /// The journal of the game in progress lives here.
    pub journal_dir: PathBuf,
    /// PGN `[Event]` tag of recorded games.
    pub event: String,
    /// PGN `[Site]` tag of recorded games.
    pub site: String,
    /// Clocks of a new game when the interface does not say
    /// (`MINUTES+SECONDS` such as `15+10`); empty for no clocks.
    pub time_control: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: LogFormat::Human,
            filter: "info".to_owned(),
        }
    }
}

impl Default for GameConfig {
    fn default() -> Self {
        GameConfig {
            games_dir: PathBuf::from("games"),
            journal_dir: PathBuf::from("journal"),
            event: "Casual game".to_owned(),
            site: "chessbot".to_owned(),
            time_control: String::new(),
        }
    }
}

impl Config {
    /// The configuration with nothing but the shipped defaults.
    pub fn shipped() -> Result<Config, ConfigError> {
        Config::parse_str(DEFAULT_TOML, "config/default.toml (built in)")
    }

    /// Reads and checks a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::parse_str(&text, &path.display().to_string())
    }

    /// Parses and checks configuration text; `origin` names it in errors.
    pub fn parse_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            origin: origin.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        config.validate(origin)?;
        Ok(config)
    }

    /// Checks values that the types alone do not constrain.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let invalid = |key: &str, value: String, allowed: &str| ConfigError::Invalid {
            origin: origin.to_owned(),
            key: key.to_owned(),
            value,
            allowed: allowed.to_owned(),
        };
        if tracing_subscriber::EnvFilter::try_new(&self.log.filter).is_err() {
            return Err(invalid(
                "log.filter",
                format!("{:?}", self.log.filter),
                "must be a RUST_LOG-style filter such as \"info\" or \"chessbot=debug\"",
            ));
        }
        if self.game.games_dir.as_os_str().is_empty() {
            return Err(invalid(
                "game.games_dir",
                "\"\"".into(),
                "must be a directory path",
            ));
        }
        if !self.game.time_control.trim().is_empty() {
            if let Err(e) = self
                .game
                .time_control
                .parse::<crate::game::clock::TimeControl>()
            {
                return Err(invalid(
                    "game.time_control",
                    format!("{:?}", self.game.time_control),
                    &format!("{e}, or empty for no clocks"),
                ));
            }
        }
        if let Err((key, value, allowed)) = self.service.check() {
            return Err(invalid(&key, value, &allowed));
        }
        if self.game.journal_dir.as_os_str().is_empty() {
            return Err(invalid(
                "game.journal_dir",
                "\"\"".into(),
                "must be a directory path",
            ));
        }
        if let Err((key, value, allowed)) = self.engine.check() {
            return Err(invalid(key, value, allowed));
        }
        self.arm.validate(origin)?;
        // Camera and vision check their own sections; the message names the key.
        for check in [self.camera.validate(), self.vision.validate()] {
            if let Err(message) = check {
                return Err(ConfigError::Syntax {
                    origin: origin.to_owned(),
                    message,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_defaults_match_the_code_defaults() {
        assert_eq!(Config::shipped().unwrap(), Config::default());
    }

    #[test]
    fn unknown_key_is_rejected_with_its_name() {
        let err = Config::parse_str("[game]\ngamez_dir = \"x\"\n", "test.toml").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("test.toml"), "{text}");
        assert!(text.contains("gamez_dir"), "{text}");
    }

    #[test]
    fn bad_time_control_names_the_key() {
        let err =
            Config::parse_str("[game]\ntime_control = \"5 minutes\"\n", "t.toml").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("game.time_control"), "{text}");
        assert!(text.contains("MINUTES+SECONDS"), "{text}");
        let ok = Config::parse_str("[game]\ntime_control = \"15+10\"\n", "t.toml").unwrap();
        assert_eq!(ok.game.time_control, "15+10");
    }

    #[test]
    fn wrong_type_is_rejected() {
        let err = Config::parse_str("[log]\nformat = \"xml\"\n", "t.toml").unwrap_err();
        assert!(err.to_string().contains("format"), "{err}");
    }

    #[test]
    fn bad_filter_names_the_key() {
        let err = Config::parse_str("[log]\nfilter = \"=!=\"\n", "t.toml").unwrap_err();
        assert!(err.to_string().contains("log.filter"), "{err}");
    }

    #[test]
    fn public_bind_needs_a_token() {
        let err = Config::parse_str("[service]\nbind = \"0.0.0.0:8080\"\n", "t.toml").unwrap_err();
        assert!(err.to_string().contains("service.bind"), "{err}");
        let ok = Config::parse_str(
            "[service]\nbind = \"0.0.0.0:8080\"\ntoken = \"0123456789abcdef\"\n",
            "t.toml",
        );
        assert!(ok.is_ok());
        let short = Config::parse_str("[service]\ntoken = \"abc\"\n", "t.toml").unwrap_err();
        assert!(short.to_string().contains("service.token"), "{short}");
    }

    #[test]
    fn partial_file_keeps_other_defaults() {
        let c = Config::parse_str("[game]\nevent = \"Club night\"\n", "t.toml").unwrap();
        assert_eq!(c.game.event, "Club night");
        assert_eq!(c.game.games_dir, PathBuf::from("games"));
    }
}
