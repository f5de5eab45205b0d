//! The robot service: play, assist and record modes behind a web page.
//!
//! - [`core`]: the decisions (modes, turns, questions, what to say), pure.
//! - [`runtime`]: the core behind a lock; engine, arm and voice on worker threads.
//! - [`arm_player`]: the arm (real or simulated bus) playing the robot's moves.
//! - [`camera_watch`]: camera frames into game moves, in step with the game, pure.
//! - [`camera_task`]: the camera loop thread around it (reopens a lost camera).
//! - [`engine_chooser`]: the engine (built-in or UCI) as the chooser of the robot's moves.
//! - [`http`]: the web page and JSON API (axum).
//! - [`voice`]: spoken announcements through espeak-ng.

pub mod arm_player;
pub mod camera_task;
pub mod camera_watch;
pub mod core;
pub mod engine_chooser;
pub mod http;
pub mod runtime;
pub mod voice;

use std::net::SocketAddr;

use serde::Deserialize;

/// `[service]`: the web server and announcements.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServiceConfig {
    /// Address and port of the web interface. Loopback by default; any
    /// other address needs `token`.
    pub bind: SocketAddr,
    /// Required (as `Authorization: Bearer TOKEN`) by every request that
    /// changes anything when set; mandatory when `bind` is not loopback.
    pub token: Option<String>,
    /// Whether reads (state, events, PGN) work without the token.
    pub public_reads: bool,
    /// Speak announcements (through `voice_program`, when installed).
    pub voice: bool,
    pub voice_program: String,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            token: None,
            public_reads: true,
            voice: true,
            voice_program: "espeak-ng".to_owned(),
        }
    }
}

/// Shortest token accepted: 16 characters of a random string are beyond guessing.
pub const MIN_TOKEN_LEN: usize = 16;

impl ServiceConfig {
    /// Checks the security rules; the message names the key.
    pub fn check(&self) -> Result<(), (String, String, String)> {
        if let Some(t) = &self.token {
            if t.len() < MIN_TOKEN_LEN {
                return Err((
                    "service.token".into(),
                    "(hidden)".into(),
                    format!("must be at least {MIN_TOKEN_LEN} characters"),
                ));
            }
        }
        if !self.bind.ip().is_loopback() && self.token.is_none() {
            return Err((
                "service.bind".into(),
                self.bind.to_string(),
                "binding to a non-loopback address requires service.token".into(),
            ));
        }
        Ok(())
    }
}
