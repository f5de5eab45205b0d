//! The servo bus adapter: the Feetech protocol over a serial port.
//!
//! [`FeetechBus`] owns a [`BusPort`] (a `serialport` port, real or a
//! pseudo-terminal) and turns the operations the arm needs into packets
//! from [`super::feetech`]: scan, torque, one sync write of goals for all
//! joints, one sync read of the state of all joints, wait until arrived.
//! Every reply has a deadline computed from its length; lost, garbled or
//! short replies are retried a bounded number of times, and the decoder
//! resynchronises on the next header. What still fails comes back as a
//! [`BusError`] that names the servo and says what happened.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::clock::Clock;
use super::feetech::{
    self, reg, DecodeError, EncodeError, Frame, FrameDecoder, Register, ServoFault,
};

/// A byte stream to the servos with a settable read timeout.
pub trait BusPort: Read + Write + Send {
    /// How long the next `read` may block.
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()>;
    /// Drops whatever was received but not read yet.
    fn discard_input(&mut self) -> io::Result<()>;
}

impl BusPort for serialport::TTYPort {
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        serialport::SerialPort::set_timeout(self, timeout).map_err(io::Error::from)
    }
    fn discard_input(&mut self) -> io::Result<()> {
        serialport::SerialPort::clear(self, serialport::ClearBuffer::Input).map_err(io::Error::from)
    }
}

impl BusPort for Box<dyn serialport::SerialPort> {
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.set_timeout(timeout).map_err(io::Error::from)
    }
    fn discard_input(&mut self) -> io::Result<()> {
        self.clear(serialport::ClearBuffer::Input)
            .map_err(io::Error::from)
    }
}

/// Opens a serial port for the bus: 8N1, no flow control.
pub fn open_serial(path: &str, baud: u32) -> Result<Box<dyn serialport::SerialPort>, BusError> {
    serialport::new(path, baud)
        .data_bits(serialport::DataBits::Eight)
        .parity(serialport::Parity::None)
        .stop_bits(serialport::StopBits::One)
        .flow_control(serialport::FlowControl::None)
        .timeout(Duration::from_millis(50))
        .open()
        .map_err(|e| BusError::Open {
            port: path.to_owned(),
            reason: e.to_string(),
        })
}

/// What went wrong on the bus, in words a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("cannot open servo port {port}: {reason}")]
    Open { port: String, reason: String },
    #[error("servo {id} did not answer {operation} after {attempts} attempts (is it powered and connected?)")]
    NoReply {
        id: u8,
        operation: &'static str,
        attempts: u32,
    },
    #[error(
        "replies from servo {id} to {operation} were corrupted {attempts} times in a row ({last})"
    )]
    Corrupted {
        id: u8,
        operation: &'static str,
        attempts: u32,
        last: DecodeError,
    },
    #[error("servo {id} reported: {}", faults.iter().map(|f| f.to_string()).collect::<Vec<_>>().join(", "))]
    Fault { id: u8, faults: Vec<ServoFault> },
    #[error("servo {id} sent a {got}-byte reply to {operation}, expected {expected} bytes")]
    ShortReply {
        id: u8,
        operation: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("the servo port is gone ({0}); check the USB cable")]
    PortLost(#[source] io::Error),
    #[error("bad request: {0}")]
    Encode(#[from] EncodeError),
    #[error("servo {id} stalled at step {position} (goal {goal}, load {load_permille}‰)")]
    Stalled {
        id: u8,
        position: i32,
        goal: i32,
        load_permille: i32,
    },
    #[error("stopped on request (emergency stop)")]
    Stopped,
    #[error("servo {id} did not reach step {goal} within {waited:?} (still at {position})")]
    NotArrived {
        id: u8,
        position: i32,
        goal: i32,
        waited: Duration,
    },
}

impl BusError {
    /// Whether the port itself is unusable (no safe stop can be sent).
    pub fn port_lost(&self) -> bool {
        matches!(self, BusError::PortLost(_) | BusError::Open { .. })
    }
}

/// Reply deadlines and retries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BusTiming {
    pub baud: u32,
    /// Margin on top of the transmission time of a reply. LeRobot allows
    /// (bytes + 3) byte-times + 50 ms (hardware.md); we use the same.
    pub reply_margin: Duration,
    /// Extra attempts after a lost or corrupted reply.
    pub retries: u32,
}

/// LeRobot's reply margin on top of the bytes' transmission time.
pub const LEROBOT_REPLY_MARGIN: Duration = Duration::from_millis(50);
/// STS3215 factory baud rate.
pub const DEFAULT_BAUD: u32 = 1_000_000;

impl Default for BusTiming {
    fn default() -> Self {
        BusTiming {
            baud: DEFAULT_BAUD,
            reply_margin: LEROBOT_REPLY_MARGIN,
            retries: 2,
        }
    }
}

impl BusTiming {
    /// Time to wait for a reply of `bytes` bytes: (bytes + 3) byte-times + margin; 10 bits per byte (8N1).
    pub fn reply_timeout(&self, bytes: usize) -> Duration {
        let byte_time_ns = 10_000_000_000u64 / u64::from(self.baud.max(1));
        Duration::from_nanos(byte_time_ns * (bytes as u64 + 3)) + self.reply_margin
    }
}

/// One joint's state from a single sync read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServoState {
    pub id: u8,
    /// Steps (0..4095 with homing offset applied by the servo).
    pub position: i32,
    /// Steps per second, signed.
    pub speed: i32,
    /// 0.1 % of stall torque, signed by direction.
    pub load_permille: i32,
    /// 0.1 V.
    pub voltage_decivolt: u8,
    pub temperature_c: u8,
}

/// Goal for one servo: position, speed limit, acceleration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServoGoal {
    pub id: u8,
    pub position: i32,
    /// Steps per second; 0 would mean "maximum", which the safety layer never sends.
    pub speed: u16,
    /// Units of 100 steps/s².
    pub acceleration: u8,
}

/// How [`FeetechBus::wait_until_arrived`] decides success, stall and timeout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrivalCheck {
    pub tolerance_steps: i32,
    pub poll_period: Duration,
    pub timeout: Duration,
    /// Load above this (0.1 %) while not arrived counts as blocked.
    pub stall_load_permille: i32,
    /// No movement by more than `tolerance_steps` for this long counts as stalled.
    pub no_progress: Duration,
}

/// Counters for diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BusStats {
    pub packets_sent: u64,
    pub retries: u64,
    pub bytes_discarded: u64,
}

/// The Feetech bus over one port.
pub struct FeetechBus<P: BusPort> {
    port: P,
    timing: BusTiming,
    decoder: FrameDecoder,
    stats: BusStats,
}

/// First address of the state block read in one go: position, speed, load, voltage, temperature.
const STATE_BLOCK_START: u8 = reg::PRESENT_POSITION.address;
const STATE_BLOCK_LEN: u8 = reg::PRESENT_TEMPERATURE.address + 1 - STATE_BLOCK_START;
/// The goal block written in one sync write: acceleration, goal position, goal time, goal speed.
const GOAL_BLOCK_START: u8 = reg::ACCELERATION.address;
const GOAL_BLOCK_LEN: u8 = reg::GOAL_SPEED.address + 2 - GOAL_BLOCK_START;

enum Attempt<T> {
    Done(T),
    Retry(BusError),
}

impl<P: BusPort> FeetechBus<P> {
    pub fn new(port: P, timing: BusTiming) -> FeetechBus<P> {
        FeetechBus {
            port,
            timing,
            decoder: FrameDecoder::new(),
            stats: BusStats::default(),
        }
    }

    pub fn stats(&self) -> BusStats {
        BusStats {
            bytes_discarded: self.decoder.discarded() as u64,
            ..self.stats
        }
    }

    /// Gives the port back.
    pub fn into_port(self) -> P {
        self.port
    }

    fn send(&mut self, packet: &[u8]) -> Result<(), BusError> {
        // A stale byte left from an earlier reply must not be taken for this one's start.
        self.decoder.clear();
        if let Err(e) = self.port.discard_input() {
            return Err(BusError::PortLost(e));
        }
        // The port's timeout also bounds writes: give the packet time to go out.
        self.port
            .set_read_timeout(self.timing.reply_timeout(packet.len()))
            .map_err(BusError::PortLost)?;
        self.port.write_all(packet).map_err(BusError::PortLost)?;
        self.port.flush().map_err(BusError::PortLost)?;
        self.stats.packets_sent += 1;
        Ok(())
    }

    /// Reads until a frame arrives or the deadline passes (`Ok(None)`).
    fn receive(
        &mut self,
        deadline: Instant,
    ) -> Result<Option<Result<Frame, DecodeError>>, BusError> {
        let mut buf = [0u8; 256];
        loop {
            if let Some(f) = self.decoder.next_frame() {
                return Ok(Some(f));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            self.port
                .set_read_timeout(deadline - now)
                .map_err(BusError::PortLost)?;
            match self.port.read(&mut buf) {
                Ok(0) => {
                    return Err(BusError::PortLost(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "end of stream",
                    )))
                }
                Ok(n) => self.decoder.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(BusError::PortLost(e)),
            }
        }
    }

    /// Sends `packet` and collects one reply from each of `ids`, in order,
    /// each with `params_len` parameter bytes. Retries the whole exchange.
    fn exchange(
        &mut self,
        operation: &'static str,
        packet: &[u8],
        ids: &[u8],
        params_len: usize,
    ) -> Result<Vec<Frame>, BusError> {
        let attempts = self.timing.retries + 1;
        let mut last = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                self.stats.retries += 1;
            }
            match self.attempt(operation, packet, ids, params_len)? {
                Attempt::Done(frames) => return Ok(frames),
                Attempt::Retry(e) => {
                    tracing::debug!(operation, attempt, error = %e, "bus retry");
                    last = Some(e);
                }
            }
        }
        Err(match last {
            Some(BusError::NoReply { id, operation, .. }) => BusError::NoReply {
                id,
                operation,
                attempts,
            },
            Some(BusError::Corrupted {
                id,
                operation,
                last,
                ..
            }) => BusError::Corrupted {
                id,
                operation,
                attempts,
                last,
            },
            Some(other) => other,
            None => BusError::NoReply {
                id: ids.first().copied().unwrap_or(feetech::BROADCAST_ID),
                operation,
                attempts,
            },
        })
    }

    fn attempt(
        &mut self,
        operation: &'static str,
        packet: &[u8],
        ids: &[u8],
        params_len: usize,
    ) -> Result<Attempt<Vec<Frame>>, BusError> {
        self.send(packet)?;
        let mut frames = Vec::with_capacity(ids.len());
        let mut corrupted: Option<DecodeError> = None;
        let reply_len = params_len + 6;
        let deadline = Instant::now()
            + self
                .timing
                .reply_timeout(packet.len() + reply_len * ids.len());
        while frames.len() < ids.len() {
            let want = ids[frames.len()];
            match self.receive(deadline)? {
                None => {
                    return Ok(Attempt::Retry(match corrupted {
                        Some(last) => BusError::Corrupted {
                            id: want,
                            operation,
                            attempts: 1,
                            last,
                        },
                        None => BusError::NoReply {
                            id: want,
                            operation,
                            attempts: 1,
                        },
                    }))
                }
                Some(Err(e)) => corrupted = Some(e),
                Some(Ok(frame)) => {
                    // An adapter that echoes our own packet: not a reply.
                    if frame.id == feetech::BROADCAST_ID || frame.id != want {
                        continue;
                    }
                    if !frame.error_bits().is_ok() {
                        return Err(BusError::Fault {
                            id: frame.id,
                            faults: frame.error_bits().faults(),
                        });
                    }
                    if frame.params.len() != params_len {
                        return Ok(Attempt::Retry(BusError::ShortReply {
                            id: want,
                            operation,
                            got: frame.params.len(),
                            expected: params_len,
                        }));
                    }
                    frames.push(frame);
                }
            }
        }
        Ok(Attempt::Done(frames))
    }

    /// Whether servo `id` answers a ping. A missing servo is `Ok(false)`;
    /// a servo that answers with error bits is `Err(Fault)`.
    pub fn ping(&mut self, id: u8) -> Result<bool, BusError> {
        let packet = feetech::ping(id)?;
        match self.exchange("ping", &packet, &[id], 0) {
            Ok(_) => Ok(true),
            Err(BusError::NoReply { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The IDs in `ids` that answer a ping.
    pub fn scan(&mut self, ids: impl IntoIterator<Item = u8>) -> Result<Vec<u8>, BusError> {
        let mut found = Vec::new();
        for id in ids {
            if self.ping(id)? {
                found.push(id);
            }
        }
        Ok(found)
    }

    /// Reads one register of one servo.
    pub fn read_register(&mut self, id: u8, register: Register) -> Result<i32, BusError> {
        let packet = feetech::read(id, register.address, register.size)?;
        let frames = self.exchange(register.name, &packet, &[id], usize::from(register.size))?;
        decode(frames.first(), register, id)
    }

    /// Writes one register of one servo and waits for its acknowledgement.
    pub fn write_register(
        &mut self,
        id: u8,
        register: Register,
        value: i32,
    ) -> Result<(), BusError> {
        let data = feetech::encode_value(register, value)?;
        let packet = feetech::write(id, register.address, &data)?;
        self.exchange(register.name, &packet, &[id], 0)?;
        Ok(())
    }

    /// Reads one register from several servos with one sync read.
    pub fn sync_read_register(
        &mut self,
        ids: &[u8],
        register: Register,
    ) -> Result<Vec<i32>, BusError> {
        let packet = feetech::sync_read(register.address, register.size, ids)?;
        let frames = self.exchange(register.name, &packet, ids, usize::from(register.size))?;
        frames
            .iter()
            .zip(ids)
            .map(|(f, id)| decode(Some(f), register, *id))
            .collect()
    }

    /// Writes one register of several servos with one sync write (no reply).
    pub fn sync_write_register(
        &mut self,
        register: Register,
        values: &[(u8, i32)],
    ) -> Result<(), BusError> {
        let entries = values
            .iter()
            .map(|(id, v)| Ok((*id, feetech::encode_value(register, *v)?)))
            .collect::<Result<Vec<_>, EncodeError>>()?;
        let packet = feetech::sync_write(register.address, register.size, &entries)?;
        self.send(&packet)
    }

    /// Torque on or off for each servo, each write acknowledged.
    pub fn set_torque(&mut self, ids: &[u8], on: bool) -> Result<(), BusError> {
        for &id in ids {
            self.write_register(id, reg::TORQUE_ENABLE, i32::from(on))?;
        }
        Ok(())
    }

    /// Goal position, speed and acceleration of every joint in one sync write.
    pub fn write_goals(&mut self, goals: &[ServoGoal]) -> Result<(), BusError> {
        let entries = goals
            .iter()
            .map(|g| {
                let mut data = vec![g.acceleration];
                data.extend(feetech::encode_value(reg::GOAL_POSITION, g.position)?);
                data.extend(feetech::encode_value(reg::GOAL_TIME, 0)?);
                data.extend(feetech::encode_value(reg::GOAL_SPEED, i32::from(g.speed))?);
                Ok((g.id, data))
            })
            .collect::<Result<Vec<_>, EncodeError>>()?;
        let packet = feetech::sync_write(GOAL_BLOCK_START, GOAL_BLOCK_LEN, &entries)?;
        self.send(&packet)
    }

    /// Position, speed, load, voltage and temperature of each servo, in one sync read.
    pub fn read_states(&mut self, ids: &[u8]) -> Result<Vec<ServoState>, BusError> {
        let packet = feetech::sync_read(STATE_BLOCK_START, STATE_BLOCK_LEN, ids)?;
        let frames = self.exchange("state", &packet, ids, usize::from(STATE_BLOCK_LEN))?;
        let field = |f: &Frame, r: Register| -> i32 {
            let at = usize::from(r.address - STATE_BLOCK_START);
            feetech::decode_value(r, &f.params[at..at + usize::from(r.size)]).unwrap_or(0)
        };
        Ok(frames
            .iter()
            .map(|f| ServoState {
                id: f.id,
                position: field(f, reg::PRESENT_POSITION),
                speed: field(f, reg::PRESENT_SPEED),
                load_permille: field(f, reg::PRESENT_LOAD),
                voltage_decivolt: field(f, reg::PRESENT_VOLTAGE) as u8,
                temperature_c: field(f, reg::PRESENT_TEMPERATURE) as u8,
            })
            .collect())
    }

    /// Polls until every servo is within tolerance of its goal.
    ///
    /// Fails with [`BusError::Stalled`] when a servo that has not arrived
    /// pushes harder than the stall load or stops making progress, and with
    /// [`BusError::NotArrived`] after the timeout.
    pub fn wait_until_arrived(
        &mut self,
        goals: &[ServoGoal],
        check: &ArrivalCheck,
        clock: &dyn Clock,
        stop: Option<&AtomicBool>,
    ) -> Result<Vec<ServoState>, BusError> {
        let ids: Vec<u8> = goals.iter().map(|g| g.id).collect();
        let start = clock.now();
        let mut progress_at: Vec<(i32, Duration)> = Vec::new();
        loop {
            if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
                return Err(BusError::Stopped);
            }
            let states = self.read_states(&ids)?;
            let now = clock.now();
            if progress_at.is_empty() {
                progress_at = states.iter().map(|s| (s.position, now)).collect();
            }
            let mut arrived = true;
            for ((s, g), prog) in states.iter().zip(goals).zip(progress_at.iter_mut()) {
                let off = (s.position - g.position).abs();
                if off <= check.tolerance_steps {
                    continue;
                }
                arrived = false;
                let stalled = s.load_permille.abs() > check.stall_load_permille
                    || now.saturating_sub(prog.1) > check.no_progress;
                if stalled {
                    return Err(BusError::Stalled {
                        id: s.id,
                        position: s.position,
                        goal: g.position,
                        load_permille: s.load_permille,
                    });
                }
                if (s.position - prog.0).abs() > check.tolerance_steps {
                    *prog = (s.position, now);
                }
            }
            if arrived {
                return Ok(states);
            }
            let waited = now.saturating_sub(start);
            if waited > check.timeout {
                let (s, g) = states
                    .iter()
                    .zip(goals)
                    .find(|(s, g)| (s.position - g.position).abs() > check.tolerance_steps)
                    .map(|(s, g)| (*s, *g))
                    .unwrap_or((states[0], goals[0]));
                return Err(BusError::NotArrived {
                    id: s.id,
                    position: s.position,
                    goal: g.position,
                    waited,
                });
            }
            clock.sleep(check.poll_period);
        }
    }

    /// Best effort: every servo holds where it is now (goal = present position).
    pub fn hold_here(&mut self, ids: &[u8]) -> Result<Vec<ServoState>, BusError> {
        let states = self.read_states(ids)?;
        let values: Vec<(u8, i32)> = states.iter().map(|s| (s.id, s.position)).collect();
        self.sync_write_register(reg::GOAL_POSITION, &values)?;
        Ok(states)
    }
}

fn decode(frame: Option<&Frame>, register: Register, id: u8) -> Result<i32, BusError> {
    frame
        .and_then(|f| feetech::decode_value(register, &f.params))
        .ok_or(BusError::ShortReply {
            id,
            operation: register.name,
            got: frame.map_or(0, |f| f.params.len()),
            expected: usize::from(register.size),
        })
}
