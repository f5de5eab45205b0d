//! Faults to inject into a simulated robot game (`--faults LIST`).

use std::fmt;

use super::PlayError;

/// Servo that dies by default: the shoulder lift (ID 2), whose loss stops
/// the arm with a piece possibly in the air.
pub const DEFAULT_DEAD_SERVO: u8 = 2;
/// Servo whose replies are corrupted by default: the base pan (ID 1).
pub const DEFAULT_CORRUPT_SERVO: u8 = 1;
/// Corrupted replies in a row: two, which the driver's two retries absorb
/// (a third would exhaust them and stop the arm).
pub const DEFAULT_CORRUPT_REPLIES: u32 = 2;

/// A kill strikes this far into the robot's move by default: the jaws are
/// down at, or carrying, the first piece (a quiet move takes ~8-9 s).
pub const DEFAULT_KILL_AFTER_MS: u32 = 4_500;

/// A lost camera stays dark this long by default: three seconds, longer
/// than a whole quiet move by the person (about 2-3 s with the hand in
/// view), so the move is made while nobody watches.
pub const DEFAULT_CAMERA_LOST_MS: u32 = 3_000;

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A servo stops answering in the middle of the robot's move
    /// (a person plugs it back in before resuming).
    ServoDead { id: u8 },
    /// A servo's next replies carry a wrong checksum.
    Corrupt { id: u8, replies: u32 },
    /// The robot process is killed (kill -9) this long into the robot's
    /// move and started again.
    Kill { after_ms: u32 },
    /// The person first makes an illegal move, then takes it back.
    Illegal,
    /// The camera delivers no frames from the start of the person's move
    /// for this long (a cable pulled and plugged back in).
    CameraLost { ms: u32 },
    /// The engine fails to give the robot's move once (a crashed external
    /// engine); the game pauses and the person resumes it.
    EngineCrash,
}

/// A fault and the ply (1-based, as counted in the game) from which it
/// strikes: arm faults at the first robot move at or after it, an illegal
/// move at the first person's move at or after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub ply: usize,
}

impl Fault {
    /// Whether it strikes on the robot's turn (else the person's).
    pub fn is_arm(&self) -> bool {
        !matches!(self.kind, FaultKind::Illegal | FaultKind::CameraLost { .. })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            FaultKind::ServoDead { id } => write!(f, "servo-dead@{}:{id}", self.ply),
            FaultKind::Corrupt { id, replies } => {
                write!(f, "corrupt@{}:{id}:{replies}", self.ply)
            }
            FaultKind::Kill { after_ms } => write!(f, "kill@{}:{after_ms}", self.ply),
            FaultKind::Illegal => write!(f, "illegal@{}", self.ply),
            FaultKind::CameraLost { ms } => write!(f, "camera-lost@{}:{ms}", self.ply),
            FaultKind::EngineCrash => write!(f, "engine-crash@{}", self.ply),
        }
    }
}

/// Parses `servo-dead@4,corrupt@2:1:2,kill@6,illegal@3,camera-lost@5,engine-crash@7`:
/// kind@PLY, then for servo-dead the servo, for corrupt the servo and the
/// number of bad replies, for kill the milliseconds into the robot's move,
/// for camera-lost how long the camera stays dark.
pub fn parse_faults(text: &str) -> Result<Vec<Fault>, PlayError> {
    let bad = |item: &str, why: &str| {
        PlayError::BadFaults(format!(
            "{item:?}: {why} (expected servo-dead@PLY[:SERVO], corrupt@PLY[:SERVO[:REPLIES]], kill@PLY[:MS], illegal@PLY, camera-lost@PLY[:MS] or engine-crash@PLY)"
        ))
    };
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (kind, rest) = item.split_once('@').ok_or_else(|| bad(item, "no @PLY"))?;
        let mut parts = rest.split(':');
        let ply: usize = parts
            .next()
            .and_then(|p| p.parse().ok())
            .filter(|p| *p >= 1)
            .ok_or_else(|| bad(item, "the ply must be a number from 1"))?;
        let mut num = |default: u32, max: u32| -> Result<u32, PlayError> {
            match parts.next() {
                None => Ok(default),
                Some(p) => p
                    .parse::<u32>()
                    .ok()
                    .filter(|v| (1..=max).contains(v))
                    .ok_or_else(|| bad(item, &format!("{p:?} must be 1..={max}"))),
            }
        };
        let kind = match kind {
            "servo-dead" => FaultKind::ServoDead {
                id: num(u32::from(DEFAULT_DEAD_SERVO), 6)? as u8,
            },
            "corrupt" => FaultKind::Corrupt {
                id: num(u32::from(DEFAULT_CORRUPT_SERVO), 6)? as u8,
                replies: num(DEFAULT_CORRUPT_REPLIES, 100)?,
            },
            "kill" => FaultKind::Kill {
                after_ms: num(DEFAULT_KILL_AFTER_MS, 60_000)?,
            },
            "illegal" => FaultKind::Illegal,
            "camera-lost" => FaultKind::CameraLost {
                ms: num(DEFAULT_CAMERA_LOST_MS, 60_000)?,
            },
            "engine-crash" => FaultKind::EngineCrash,
            _ => return Err(bad(item, "unknown kind")),
        };
        if parts.next().is_some() {
            return Err(bad(item, "too many fields"));
        }
        out.push(Fault { kind, ply });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_lists_parse_with_defaults_and_reject_nonsense() {
        let f =
            parse_faults("servo-dead@4, corrupt@2:1:3,kill@6,illegal@3,servo-dead@8:5").unwrap();
        assert_eq!(
            f,
            vec![
                Fault {
                    kind: FaultKind::ServoDead { id: 2 },
                    ply: 4
                },
                Fault {
                    kind: FaultKind::Corrupt { id: 1, replies: 3 },
                    ply: 2
                },
                Fault {
                    kind: FaultKind::Kill { after_ms: 4_500 },
                    ply: 6
                },
                Fault {
                    kind: FaultKind::Illegal,
                    ply: 3
                },
                Fault {
                    kind: FaultKind::ServoDead { id: 5 },
                    ply: 8
                },
            ]
        );
        assert_eq!(f[1].to_string(), "corrupt@2:1:3");
        let f = parse_faults("camera-lost@5,camera-lost@7:500,engine-crash@2").unwrap();
        assert_eq!(f[0].kind, FaultKind::CameraLost { ms: 3_000 });
        assert_eq!(f[1].kind, FaultKind::CameraLost { ms: 500 });
        assert_eq!(f[2].to_string(), "engine-crash@2");
        assert!(!f[0].is_arm() && f[2].is_arm());
        assert!(parse_faults("").unwrap().is_empty());
        for bad in [
            "kill",
            "kill@0",
            "melt@3",
            "servo-dead@2:9",
            "kill@x",
            "corrupt@1:1:1:1",
            "camera-lost@3:0",
            "engine-crash@2:1",
        ] {
            assert!(parse_faults(bad).is_err(), "{bad}");
        }
    }
}
