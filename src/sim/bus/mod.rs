//! A simulated bus of STS3215 servos speaking the exact Feetech wire protocol.
//!
//! [`SimBus`] is the pure part: a register table per servo, motion toward
//! the goal under the configured speed and acceleration (so the present
//! position lags the goal as on the real servo), load that rises when a
//! servo is blocked, and injected faults. It turns received bytes into the
//! bytes a real bus would answer, reading time from an injected [`Clock`].
//! [`SimPort::spawn`] serves it on a pseudo-terminal from a thread, so the
//! real driver runs unchanged against it.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::arm::clock::Clock;
use crate::arm::feetech::{self, reg, ErrorBits, Frame, FrameDecoder, Instruction, Register};

/// Largest speed of an STS3215 at 12 V: about 0.222 s per 60° (Feetech data
/// sheet), ≈ 3000 steps/s. Goal_Speed 0 means this.
pub const MAX_SPEED_STEPS_PER_S: f64 = 3000.0;
/// Acceleration when the register is 0 ("no ramp"); high enough to be a step.
pub const MAX_ACCEL_STEPS_PER_S2: f64 = 50_000.0;
/// Load a servo reports while holding or moving freely: the arm's own weight (0.1 %).
pub const FREE_LOAD_PERMILLE: i32 = 80;
/// Load a servo reports when pushing against an obstacle: full stall torque (0.1 %).
pub const BLOCKED_LOAD_PERMILLE: i32 = 1000;
/// Time for the load to build up from free to full stall torque while
/// pushing an obstacle (the servo's current loop winds up over a few
/// hundred milliseconds).
pub const LOAD_RISE_S: f64 = 0.2;
/// Integration step of the motion model.
const MOTION_STEP: Duration = Duration::from_millis(1);
/// Supply voltage reported (0.1 V).
const SUPPLY_DECIVOLT: u8 = 120;
const ROOM_TEMPERATURE_C: u8 = 30;

/// A fault to inject into the simulated bus.
#[derive(Debug, Clone, PartialEq)]
pub enum SimFault {
    /// The servo ignores its next `replies` requests.
    NoReply { id: u8, replies: u32 },
    /// The servo's next `replies` replies carry a wrong checksum.
    CorruptChecksum { id: u8, replies: u32 },
    /// The servo's next `replies` replies are cut short by one byte.
    ShortReply { id: u8, replies: u32 },
    /// The servo's next `replies` replies stop after 4 bytes (a short read).
    TruncatedReply { id: u8, replies: u32 },
    /// Every reply of the servo carries these error bits until cleared.
    ErrorBits { id: u8, bits: ErrorBits },
    /// The servo stops answering for good (unplugged, burnt out).
    Dead { id: u8 },
    /// An obstacle: the servo cannot move past this step; pushing raises the load.
    Block { id: u8, at_step: i32 },
    /// Noise on the line just before the next reply.
    Garbage { bytes: Vec<u8> },
    /// The port disappears (USB cable pulled): the serving side closes.
    PortVanishes,
}

/// One simulated STS3215.
#[derive(Debug, Clone)]
pub struct SimServo {
    regs: [u8; 256],
    /// Position in steps (continuous).
    position: f64,
    /// Velocity in steps/s.
    velocity: f64,
    /// Obstacle position and the side (sign) the servo is on.
    blocked_at: Option<(f64, f64)>,
    angle_error: bool,
    pushing: bool,
    /// How long the servo has been pushing the obstacle.
    push_time: f64,
    skip_replies: u32,
    corrupt_replies: u32,
    short_replies: u32,
    truncated_replies: u32,
    error_bits: ErrorBits,
    dead: bool,
}

impl SimServo {
    /// A servo with factory registers, at `position`, torque off.
    pub fn new(id: u8, position: i32) -> SimServo {
        let mut s = SimServo {
            regs: [0; 256],
            position: f64::from(position),
            velocity: 0.0,
            blocked_at: None,
            angle_error: false,
            pushing: false,
            push_time: 0.0,
            skip_replies: 0,
            corrupt_replies: 0,
            short_replies: 0,
            truncated_replies: 0,
            error_bits: ErrorBits(0),
            dead: false,
        };
        s.set(reg::MODEL_NUMBER, i32::from(feetech::STS3215_MODEL));
        s.set(reg::ID, i32::from(id));
        s.set(reg::MAX_POSITION_LIMIT, 4095);
        s.set(reg::TORQUE_LIMIT, 1000);
        s.set(reg::GOAL_POSITION, position);
        s.set(reg::PRESENT_VOLTAGE, i32::from(SUPPLY_DECIVOLT));
        s.set(reg::PRESENT_TEMPERATURE, i32::from(ROOM_TEMPERATURE_C));
        s.refresh_present();
        s
    }

    pub fn id(&self) -> u8 {
        self.regs[usize::from(reg::ID.address)]
    }

    /// A register value.
    pub fn get(&self, r: Register) -> i32 {
        let at = usize::from(r.address);
        feetech::decode_value(r, &self.regs[at..at + usize::from(r.size)]).unwrap_or(0)
    }

    fn set(&mut self, r: Register, value: i32) {
        if let Ok(bytes) = feetech::encode_value(r, value) {
            let at = usize::from(r.address);
            self.regs[at..at + bytes.len()].copy_from_slice(&bytes);
        }
    }

    /// Exact simulated position (steps).
    pub fn position(&self) -> f64 {
        self.position
    }

    /// Homing offset: the servo reports raw position minus this (STS3215).
    fn offset(&self) -> f64 {
        f64::from(self.get(reg::HOMING_OFFSET))
    }

    fn refresh_present(&mut self) {
        let pos = (self.position - self.offset()).round().clamp(0.0, 4095.0) as i32;
        self.set(reg::PRESENT_POSITION, pos);
        self.set(reg::PRESENT_SPEED, self.velocity.round() as i32);
        let load = if self.pushing {
            let f = (self.push_time / LOAD_RISE_S).min(1.0);
            FREE_LOAD_PERMILLE + (f64::from(BLOCKED_LOAD_PERMILLE - FREE_LOAD_PERMILLE) * f) as i32
        } else if self.get(reg::TORQUE_ENABLE) != 0 {
            FREE_LOAD_PERMILLE
        } else {
            0
        };
        let signed = if self.velocity < 0.0 { -load } else { load };
        self.set(reg::PRESENT_LOAD, signed);
        let moving = self.velocity.abs() > 0.5 || (self.goal() - self.position).abs() > 0.5;
        self.set(reg::MOVING, i32::from(moving && !self.pushing));
    }

    /// Goal in raw steps.
    fn goal(&self) -> f64 {
        f64::from(self.get(reg::GOAL_POSITION)) + self.offset()
    }

    /// Moves for `dt` toward the goal: speed capped by Goal_Speed, velocity
    /// changed at most Acceleration; stops at an obstacle.
    fn step(&mut self, dt: f64) {
        self.pushing = false;
        if self.get(reg::TORQUE_ENABLE) == 0 {
            self.velocity = 0.0;
            self.push_time = 0.0;
            return;
        }
        let speed = match self.get(reg::GOAL_SPEED).unsigned_abs() {
            0 => MAX_SPEED_STEPS_PER_S,
            v => f64::from(v).min(MAX_SPEED_STEPS_PER_S),
        };
        let accel = match self.get(reg::ACCELERATION) {
            0 => MAX_ACCEL_STEPS_PER_S2,
            a => f64::from(a) * feetech::ACCELERATION_UNIT_STEPS_PER_S2,
        };
        let remaining = self.goal() - self.position;
        // Fastest speed from which we can still brake before the goal.
        let braking = (2.0 * accel * remaining.abs()).sqrt();
        let wanted = remaining.signum() * speed.min(braking);
        let dv = (wanted - self.velocity).clamp(-accel * dt, accel * dt);
        self.velocity += dv;
        let mut next = self.position + self.velocity * dt;
        if (self.goal() - next).signum() != remaining.signum() || remaining.abs() < 0.5 {
            next = self.goal();
            if remaining.abs() < 0.5 {
                self.velocity = 0.0;
            }
        }
        if let Some((wall, side)) = self.blocked_at {
            // The obstacle stops motion toward it from the side the servo is on.
            let beyond = if side < 0.0 { next > wall } else { next < wall };
            if beyond {
                next = wall;
                self.velocity = 0.0;
            }
            let goal_beyond = if side < 0.0 {
                self.goal() > wall + 0.5
            } else {
                self.goal() < wall - 0.5
            };
            self.pushing = goal_beyond && (next - wall).abs() < 0.5;
        }
        self.push_time = if self.pushing {
            self.push_time + dt
        } else {
            0.0
        };
        self.position = next;
    }
}

/// The whole simulated bus: servos, time and pending faults.
pub struct SimBus {
    servos: Vec<SimServo>,
    clock: Arc<dyn Clock>,
    simulated_until: Duration,
    garbage: Vec<u8>,
    decoder: FrameDecoder,
    /// Every instruction frame received, for tests to inspect.
    received: Vec<Frame>,
    /// Faults that strike once this many frames have been received.
    delayed: Vec<(usize, SimFault)>,
    vanished: bool,
}

impl SimBus {
    /// Servos with IDs 1..=n, each at the middle of its range (step 2048).
    pub fn with_servos(n: u8, clock: Arc<dyn Clock>) -> SimBus {
        let servos = (1..=n).map(|id| SimServo::new(id, 2048)).collect();
        SimBus::new(servos, clock)
    }

    pub fn new(servos: Vec<SimServo>, clock: Arc<dyn Clock>) -> SimBus {
        let now = clock.now();
        SimBus {
            servos,
            clock,
            simulated_until: now,
            garbage: Vec::new(),
            decoder: FrameDecoder::new(),
            received: Vec::new(),
            delayed: Vec::new(),
            vanished: false,
        }
    }

    pub fn servo(&self, id: u8) -> Option<&SimServo> {
        self.servos.iter().find(|s| s.id() == id)
    }

    fn servo_mut(&mut self, id: u8) -> Option<&mut SimServo> {
        self.servos.iter_mut().find(|s| s.id() == id)
    }

    /// Instruction frames received so far.
    pub fn received(&self) -> &[Frame] {
        &self.received
    }

    /// Injects `fault` after `frames` more instruction frames have arrived
    /// (to strike in the middle of a move, deterministically).
    pub fn inject_after(&mut self, frames: usize, fault: SimFault) {
        let at = self.received.len() + frames;
        self.delayed.push((at, fault));
    }

    pub fn inject(&mut self, fault: SimFault) {
        match fault {
            SimFault::Garbage { bytes } => self.garbage.extend(bytes),
            SimFault::PortVanishes => self.vanished = true,
            SimFault::NoReply { id, replies } => {
                if let Some(s) = self.servo_mut(id) {
                    s.skip_replies += replies;
                }
            }
            SimFault::CorruptChecksum { id, replies } => {
                if let Some(s) = self.servo_mut(id) {
                    s.corrupt_replies += replies;
                }
            }
            SimFault::ShortReply { id, replies } => {
                if let Some(s) = self.servo_mut(id) {
                    s.short_replies += replies;
                }
            }
            SimFault::TruncatedReply { id, replies } => {
                if let Some(s) = self.servo_mut(id) {
                    s.truncated_replies += replies;
                }
            }
            SimFault::ErrorBits { id, bits } => {
                if let Some(s) = self.servo_mut(id) {
                    s.error_bits = bits;
                }
            }
            SimFault::Dead { id } => {
                if let Some(s) = self.servo_mut(id) {
                    s.dead = true;
                }
            }
            SimFault::Block { id, at_step } => {
                if let Some(s) = self.servo_mut(id) {
                    let wall = f64::from(at_step) + s.offset();
                    let side = if s.position < wall { -1.0 } else { 1.0 };
                    s.blocked_at = Some((wall, side));
                }
            }
        }
    }

    /// A person fixed servo `id` (plugged it back in, power-cycled it):
    /// every fault of the servo itself is cleared (an obstacle in its way,
    /// such as a piece in the jaws, stays: see [`SimBus::unblock`]).
    pub fn repair(&mut self, id: u8) {
        if let Some(s) = self.servo_mut(id) {
            s.dead = false;
            s.skip_replies = 0;
            s.corrupt_replies = 0;
            s.short_replies = 0;
            s.truncated_replies = 0;
            s.error_bits = ErrorBits(0);
        }
        self.delayed
            .retain(|(_, f)| !fault_targets(f, id) || matches!(f, SimFault::Block { .. }));
    }

    /// The obstacle in front of servo `id` is gone (a piece left the jaws).
    pub fn unblock(&mut self, id: u8) {
        if let Some(s) = self.servo_mut(id) {
            s.blocked_at = None;
            s.pushing = false;
            s.push_time = 0.0;
        }
    }

    /// A person moves servo `id` by hand to raw position `raw_step` (torque off).
    pub fn move_by_hand(&mut self, id: u8, raw_step: i32) {
        if let Some(s) = self.servo_mut(id) {
            s.position = f64::from(raw_step);
            s.velocity = 0.0;
            s.refresh_present();
        }
    }

    /// Runs the motion model up to the clock's present time.
    pub fn advance(&mut self) {
        let now = self.clock.now();
        while self.simulated_until + MOTION_STEP <= now {
            self.simulated_until += MOTION_STEP;
            for s in &mut self.servos {
                s.step(MOTION_STEP.as_secs_f64());
            }
        }
        for s in &mut self.servos {
            s.refresh_present();
        }
    }

    /// Takes received bytes, returns the bytes the servos send back.
    pub fn receive(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.decoder.push(bytes);
        let mut out = Vec::new();
        while let Some(frame) = self.decoder.next_frame() {
            // A servo silently drops a packet with a bad checksum.
            if let Ok(frame) = frame {
                let due: Vec<SimFault> = {
                    let n = self.received.len();
                    let (now, later): (Vec<_>, Vec<_>) =
                        self.delayed.drain(..).partition(|(at, _)| *at <= n);
                    self.delayed = later;
                    now.into_iter().map(|(_, f)| f).collect()
                };
                for f in due {
                    self.inject(f);
                }
                self.advance();
                out.extend(self.execute(&frame));
                self.received.push(frame);
            }
        }
        out
    }

    fn reply(&mut self, id: u8, params: &[u8]) -> Vec<u8> {
        let Some(s) = self.servo_mut(id) else {
            return Vec::new();
        };
        if s.dead {
            return Vec::new();
        }
        if s.skip_replies > 0 {
            s.skip_replies -= 1;
            return Vec::new();
        }
        let error = s.error_bits.0 | if s.angle_error { 2 } else { 0 };
        let mut bytes = feetech::encode(id, error, params).unwrap_or_default();
        if s.corrupt_replies > 0 {
            s.corrupt_replies -= 1;
            if let Some(last) = bytes.last_mut() {
                *last ^= 0x5A;
            }
        } else if s.truncated_replies > 0 {
            s.truncated_replies -= 1;
            bytes.truncate(4);
        } else if s.short_replies > 0 {
            s.short_replies -= 1;
            // One parameter byte lost, LEN and checksum consistent with it:
            // a well-formed frame of the wrong length.
            let cut = &params[..params.len().saturating_sub(1)];
            bytes = feetech::encode(id, error, cut).unwrap_or_default();
        }
        let mut out = std::mem::take(&mut self.garbage);
        out.extend(bytes);
        out
    }

    fn write_regs(&mut self, id: u8, address: u8, data: &[u8]) -> bool {
        let Some(s) = self.servo_mut(id) else {
            return false;
        };
        if s.dead {
            return false;
        }
        let start = usize::from(address);
        let end = (start + data.len()).min(256);
        let old_goal = s.get(reg::GOAL_POSITION);
        s.regs[start..end].copy_from_slice(&data[..end - start]);
        let goal = s.get(reg::GOAL_POSITION);
        let (lo, hi) = (
            s.get(reg::MIN_POSITION_LIMIT),
            s.get(reg::MAX_POSITION_LIMIT),
        );
        let goal_written = start <= usize::from(reg::GOAL_POSITION.address) + 1
            && end > usize::from(reg::GOAL_POSITION.address);
        if goal_written {
            // The real servo refuses a goal outside its limits and flags it.
            s.angle_error = !(lo..=hi).contains(&goal);
            if s.angle_error {
                s.set(reg::GOAL_POSITION, old_goal);
            }
        }
        true
    }

    fn execute(&mut self, frame: &Frame) -> Vec<u8> {
        let Some(instr) = Instruction::from_code(frame.code) else {
            return Vec::new();
        };
        let unicast = frame.id != feetech::BROADCAST_ID;
        let p = &frame.params;
        match instr {
            Instruction::Ping if unicast => self.reply(frame.id, &[]),
            Instruction::Read if unicast && p.len() == 2 => {
                let Some(s) = self.servo(frame.id) else {
                    return Vec::new();
                };
                let start = usize::from(p[0]);
                let end = (start + usize::from(p[1])).min(256);
                let data = s.regs[start..end].to_vec();
                self.reply(frame.id, &data)
            }
            Instruction::Write if !p.is_empty() => {
                let ids: Vec<u8> = if unicast {
                    vec![frame.id]
                } else {
                    self.servos.iter().map(|s| s.id()).collect()
                };
                let mut out = Vec::new();
                for id in ids {
                    if self.write_regs(id, p[0], &p[1..]) && unicast {
                        out = self.reply(id, &[]);
                    }
                }
                out
            }
            Instruction::SyncRead if !unicast && p.len() >= 2 => {
                let (start, count) = (usize::from(p[0]), usize::from(p[1]));
                let end = (start + count).min(256);
                let mut out = Vec::new();
                for &id in &p[2..] {
                    let Some(s) = self.servo(id) else { continue };
                    let data = s.regs[start..end].to_vec();
                    out.extend(self.reply(id, &data));
                }
                out
            }
            Instruction::SyncWrite if !unicast && p.len() >= 2 => {
                let (address, count) = (p[0], usize::from(p[1]));
                for chunk in p[2..].chunks(count + 1) {
                    if chunk.len() == count + 1 {
                        self.write_regs(chunk[0], address, &chunk[1..]);
                    }
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}

/// Whether `fault` strikes servo `id`.
fn fault_targets(fault: &SimFault, id: u8) -> bool {
    match fault {
        SimFault::NoReply { id: i, .. }
        | SimFault::CorruptChecksum { id: i, .. }
        | SimFault::ShortReply { id: i, .. }
        | SimFault::TruncatedReply { id: i, .. }
        | SimFault::ErrorBits { id: i, .. }
        | SimFault::Dead { id: i }
        | SimFault::Block { id: i, .. } => *i == id,
        SimFault::Garbage { .. } | SimFault::PortVanishes => false,
    }
}

/// A simulated bus served on a pseudo-terminal by a thread.
pub struct SimPort {
    bus: Arc<Mutex<SimBus>>,
    stop: Arc<AtomicBool>,
    vanish: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    path: Option<String>,
}

/// How often the serving thread looks at its stop flags.
const SERVE_POLL: Duration = Duration::from_millis(10);

impl SimPort {
    /// Serves `bus` on a new pseudo-terminal; returns the driver's end of it.
    pub fn spawn(bus: SimBus) -> io::Result<(SimPort, serialport::TTYPort)> {
        let (mut master, slave) = serialport::TTYPort::pair().map_err(io::Error::from)?;
        serialport::SerialPort::set_timeout(&mut master, SERVE_POLL).map_err(io::Error::from)?;
        let path = serialport::SerialPort::name(&slave);
        let bus = Arc::new(Mutex::new(bus));
        let stop = Arc::new(AtomicBool::new(false));
        let vanish = Arc::new(AtomicBool::new(false));
        let thread = {
            let (bus, stop, vanish) = (bus.clone(), stop.clone(), vanish.clone());
            std::thread::Builder::new()
                .name("sim-servo-bus".into())
                .spawn(move || serve(master, &bus, &stop, &vanish))?
        };
        Ok((
            SimPort {
                bus,
                stop,
                vanish,
                thread: Some(thread),
                path,
            },
            slave,
        ))
    }

    /// The pseudo-terminal path, for opening the bus by name (`--port`).
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The simulated bus, to inject faults or inspect servos.
    pub fn bus(&self) -> MutexGuard<'_, SimBus> {
        self.bus.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The simulated bus, shared (for a physics model that runs beside the driver).
    pub fn shared(&self) -> Arc<Mutex<SimBus>> {
        self.bus.clone()
    }

    /// The port disappears, as when the USB cable is pulled.
    pub fn vanish(&mut self) {
        self.vanish.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SimPort {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    mut port: serialport::TTYPort,
    bus: &Mutex<SimBus>,
    stop: &AtomicBool,
    vanish: &AtomicBool,
) {
    let mut buf = [0u8; 512];
    while !stop.load(Ordering::SeqCst) && !vanish.load(Ordering::SeqCst) {
        match port.read(&mut buf) {
            Ok(0) => continue,
            Ok(n) => {
                let (reply, vanished) = {
                    let mut b = bus.lock().unwrap_or_else(|p| p.into_inner());
                    let reply = b.receive(&buf[..n]);
                    (reply, b.vanished)
                };
                if vanished {
                    return;
                }
                if !reply.is_empty() && (port.write_all(&reply).is_err() || port.flush().is_err()) {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
    // Dropping `port` closes the master side: the driver's end hangs up.
}

#[cfg(test)]
mod tests;
