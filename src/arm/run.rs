//! Executing a plan on the servo bus, safely.
//!
//! Each step is streamed as goal positions at the control rate, following
//! the step's trapezoidal speed profile along its joint path; every command
//! passes the safety envelope right before it is written. At the end of a
//! step the joints must arrive within the tolerance (the gripper too when it
//! opens). Any bus error, timeout, stall, refused command or emergency stop
//! stops the arm (hold or release, as configured), reports what happened,
//! and leaves the executor halted until a person calls [`Executor::resume`].

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::bus::{ArrivalCheck, BusError, BusPort, FeetechBus, ServoGoal, ServoState};
use super::clock::Clock;
use super::config::StopMode;
use super::feetech::reg;
use super::model::{Joints, JOINTS};
use super::plan::{path_length, point_on_path, trapezoid_distance, Plan, PlanStep, StepKind};
use super::safety::{Envelope, SafetyViolation};
use super::setup::ArmSetup;

/// Goal update period while moving: 50 Hz, in the range LeRobot streams
/// goals at (30-60 Hz); an emergency stop acts within one period.
pub const CONTROL_PERIOD: Duration = Duration::from_millis(20);
/// No movement beyond the tolerance for this long while not arrived is a stall.
pub const NO_PROGRESS: Duration = Duration::from_millis(600);

/// What the stop after a failure achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReport {
    pub mode: StopMode,
    /// Servos that are holding (or released), as asked.
    pub done: Vec<u8>,
    /// Servos that reported a fault, or stood outside their calibrated range:
    /// their torque was switched off instead.
    pub released: Vec<u8>,
    /// Servos that could not be reached.
    pub failed: Vec<u8>,
    pub port_lost: bool,
}

impl fmt::Display for StopReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.port_lost {
            return f.write_str("the port is gone, so no stop command could be sent: servos keep their last goal; switch the arm's power off if it is unsafe");
        }
        let verb = match self.mode {
            StopMode::Hold => "holding position",
            StopMode::Release => "torque released",
        };
        write!(f, "servos {:?} {verb}", self.done)?;
        if !self.released.is_empty() {
            write!(
                f,
                "; servos {:?} reported a fault and were released",
                self.released
            )?;
        }
        if !self.failed.is_empty() {
            write!(f, "; servos {:?} did not answer", self.failed)?;
        }
        Ok(())
    }
}

/// Why the arm stopped.
#[derive(Debug, thiserror::Error)]
pub enum ArmError {
    #[error("arm stopped during {step:?}: {source}; {stop}")]
    Bus {
        step: String,
        #[source]
        source: BusError,
        stop: Box<StopReport>,
    },
    #[error("arm stopped during {step:?}: refused an unsafe command: {source}; {stop}")]
    Unsafe {
        step: String,
        #[source]
        source: SafetyViolation,
        stop: Box<StopReport>,
    },
    #[error("emergency stop during {step:?}; {stop}")]
    EmergencyStop { step: String, stop: Box<StopReport> },
    #[error("the arm is halted ({reason}); a person must check it and resume")]
    Halted { reason: String },
    #[error("servos {missing:?} do not answer (found {found:?}): check power and cables")]
    MissingServos { missing: Vec<u8>, found: Vec<u8> },
    #[error("servo {id} ({joint}) is at step {steps}, outside its calibrated range {min}..{max}: move it into range by hand")]
    OutOfRange {
        id: u8,
        joint: String,
        steps: i32,
        min: i32,
        max: i32,
    },
    #[error("cannot start: {0}")]
    Start(#[source] BusError),
}

impl ArmError {
    /// The bus error behind a stop, if any.
    pub fn bus_error(&self) -> Option<&BusError> {
        match self {
            ArmError::Bus { source, .. } => Some(source),
            ArmError::Start(source) => Some(source),
            _ => None,
        }
    }

    pub fn stop_report(&self) -> Option<&StopReport> {
        match self {
            ArmError::Bus { stop, .. }
            | ArmError::Unsafe { stop, .. }
            | ArmError::EmergencyStop { stop, .. } => Some(stop),
            _ => None,
        }
    }
}

/// What a finished plan did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub steps: usize,
    /// Time taken on the executor's clock.
    pub elapsed: Duration,
    /// Present positions after the last step.
    pub final_states: Vec<ServoState>,
}

enum StepFailure {
    Bus(BusError),
    Unsafe(SafetyViolation),
    Stop,
}

/// Runs plans on one bus.
pub struct Executor<'a, P: BusPort> {
    bus: FeetechBus<P>,
    setup: &'a ArmSetup,
    clock: Arc<dyn Clock>,
    stop: Arc<AtomicBool>,
    halted: Option<String>,
}

impl<'a, P: BusPort> Executor<'a, P> {
    pub fn new(bus: FeetechBus<P>, setup: &'a ArmSetup, clock: Arc<dyn Clock>) -> Executor<'a, P> {
        Executor {
            bus,
            setup,
            clock,
            stop: Arc::new(AtomicBool::new(false)),
            halted: None,
        }
    }

    /// Uses `stop` as the stop flag (one flag for a player that makes a
    /// new executor for each move).
    pub fn with_stop_flag(mut self, stop: Arc<AtomicBool>) -> Executor<'a, P> {
        self.stop = stop;
        self
    }

    /// The bus back, for the next executor.
    pub fn into_bus(self) -> FeetechBus<P> {
        self.bus
    }

    /// Set this flag (from a signal handler, a button, another thread) to stop at once.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Why the arm is halted, if it is.
    pub fn halted(&self) -> Option<&str> {
        self.halted.as_deref()
    }

    /// A person has checked the arm: allow motion again.
    pub fn resume(&mut self) {
        self.halted = None;
        self.stop.store(false, Ordering::SeqCst);
    }

    pub fn bus_mut(&mut self) -> &mut FeetechBus<P> {
        &mut self.bus
    }

    fn ids(&self) -> [u8; JOINTS + 1] {
        self.setup.model.servo_ids()
    }

    /// Finds all servos, holds them where they are, limits the gripper's
    /// torque and switches torque on. Returns the present joints and gripper angle.
    pub fn connect(&mut self) -> Result<(Joints, f64), ArmError> {
        let ids = self.ids();
        let found = self.bus.scan(ids).map_err(ArmError::Start)?;
        let missing: Vec<u8> = ids
            .iter()
            .copied()
            .filter(|id| !found.contains(id))
            .collect();
        if !missing.is_empty() {
            return Err(ArmError::MissingServos { missing, found });
        }
        let states = self.bus.read_states(&ids).map_err(ArmError::Start)?;
        let maps: Vec<_> = self.setup.maps.all().copied().collect();
        let names: Vec<&str> = self
            .setup
            .model
            .joints
            .iter()
            .chain(std::iter::once(&self.setup.model.gripper.joint))
            .map(|j| j.name.as_str())
            .collect();
        for ((s, m), name) in states.iter().zip(&maps).zip(&names) {
            if !m.in_range(s.position) {
                return Err(ArmError::OutOfRange {
                    id: s.id,
                    joint: (*name).to_owned(),
                    steps: s.position,
                    min: m.range_min,
                    max: m.range_max,
                });
            }
        }
        // Goal = present before torque on, so nothing jumps.
        let here: Vec<(u8, i32)> = states.iter().map(|s| (s.id, s.position)).collect();
        self.bus
            .sync_write_register(reg::GOAL_POSITION, &here)
            .map_err(ArmError::Start)?;
        let gripper_id = self.setup.model.gripper.joint.servo_id;
        self.bus
            .write_register(
                gripper_id,
                reg::TORQUE_LIMIT,
                i32::from(self.setup.safety.gripper_torque_limit_permille),
            )
            .map_err(ArmError::Start)?;
        self.bus.set_torque(&ids, true).map_err(ArmError::Start)?;
        let mut q = [0.0; JOINTS];
        for (i, qi) in q.iter_mut().enumerate() {
            *qi = maps[i].radians(f64::from(states[i].position));
        }
        let g = maps[JOINTS].radians(f64::from(states[JOINTS].position));
        Ok((q, g))
    }

    /// The present joint angles and gripper angle (for planning the next move).
    pub fn present_pose(&mut self) -> Result<(Joints, f64), BusError> {
        let ids = self.ids();
        let states = self.bus.read_states(&ids)?;
        let maps = &self.setup.maps;
        let mut q = [0.0; JOINTS];
        for ((qi, st), m) in q.iter_mut().zip(&states).zip(&maps.joints) {
            *qi = m.radians(f64::from(st.position));
        }
        let g = states
            .get(JOINTS)
            .map_or(0.0, |st| maps.gripper.radians(f64::from(st.position)));
        Ok((q, g))
    }

    /// Executes a plan step by step, verifying each arrival.
    pub fn execute(&mut self, plan: &Plan) -> Result<RunReport, ArmError> {
        if let Some(reason) = &self.halted {
            return Err(ArmError::Halted {
                reason: reason.clone(),
            });
        }
        let t0 = self.clock.now();
        let mut q = plan.start_joints_rad;
        let mut g = plan.start_gripper_rad;
        let mut final_states = Vec::new();
        for (i, step) in plan.steps.iter().enumerate() {
            tracing::info!(step = i + 1, of = plan.steps.len(), what = %step.what, "arm step");
            match self.run_step(step, q, g, plan, i == 0) {
                Ok(states) => final_states = states,
                Err(failure) => return Err(self.fail(&step.what, failure)),
            }
            q = step.joints_rad;
            g = step.gripper_rad;
        }
        Ok(RunReport {
            steps: plan.steps.len(),
            elapsed: self.clock.now().saturating_sub(t0),
            final_states,
        })
    }

    fn command(
        &self,
        q: &Joints,
        g: f64,
        plan: &Plan,
        grasp: bool,
        leaving: bool,
    ) -> Result<Vec<ServoGoal>, StepFailure> {
        let env = if leaving {
            Envelope::leaving(self.setup, &plan.start_joints_rad)
        } else {
            Envelope::new(self.setup)
        };
        env.command(q, g, plan.speed_rad_s, plan.accel_rad_s2, grasp)
            .map(|c| c.goals)
            .map_err(StepFailure::Unsafe)
    }

    fn run_step(
        &mut self,
        step: &PlanStep,
        start: Joints,
        start_gripper: f64,
        plan: &Plan,
        leaving_start: bool,
    ) -> Result<Vec<ServoState>, StepFailure> {
        // Below the clearance is allowed only going to, at or leaving a grasp point.
        let grasp = step.grasp_point
            || matches!(
                step.kind,
                StepKind::Lift | StepKind::Grip | StepKind::Release
            );
        let len = path_length(&start, &step.path);
        let duration = step.duration_s.max(0.0);
        let ids: Vec<u8> = self.setup.model.joints.iter().map(|j| j.servo_id).collect();
        let t0 = self.clock.now();
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return Err(StepFailure::Stop);
            }
            let t = self.clock.now().saturating_sub(t0).as_secs_f64();
            let s = trapezoid_distance(len, plan.speed_rad_s, plan.accel_rad_s2, t);
            let q = point_on_path(&start, &step.path, s);
            let f = if duration > 0.0 {
                (t / duration).min(1.0)
            } else {
                1.0
            };
            let g = start_gripper + (step.gripper_rad - start_gripper) * f;
            let goals = self.command(&q, g, plan, grasp, leaving_start)?;
            self.bus.write_goals(&goals).map_err(StepFailure::Bus)?;
            // Read back every tick: a lost servo or a blocked joint is caught
            // within one period, not at the end of the step (the gripper is
            // left out: squeezing a piece is its job).
            let states = self.bus.read_states(&ids).map_err(StepFailure::Bus)?;
            if let Some((st, goal)) = states
                .iter()
                .zip(&goals)
                .find(|(st, _)| st.load_permille.abs() > self.setup.safety.stall_load_permille)
            {
                return Err(StepFailure::Bus(BusError::Stalled {
                    id: st.id,
                    position: st.position,
                    goal: goal.position,
                    load_permille: st.load_permille,
                }));
            }
            if t >= duration {
                break;
            }
            self.clock.sleep(CONTROL_PERIOD);
        }
        let goals = self.command(
            &step.joints_rad,
            step.gripper_rad,
            plan,
            grasp,
            leaving_start,
        )?;
        // The gripper stops on the piece when closing or holding; check it only when opening.
        let check_goals: Vec<ServoGoal> = if step.kind == StepKind::Release {
            goals
        } else {
            goals[..JOINTS].to_vec()
        };
        let safety = &self.setup.safety;
        let check = ArrivalCheck {
            tolerance_steps: safety.arrival_tolerance_steps,
            poll_period: CONTROL_PERIOD,
            timeout: Duration::from_secs_f64(safety.arrival_slack_s),
            stall_load_permille: safety.stall_load_permille,
            no_progress: NO_PROGRESS,
        };
        match self
            .bus
            .wait_until_arrived(&check_goals, &check, &*self.clock, Some(&self.stop))
        {
            Ok(states) => Ok(states),
            Err(BusError::Stopped) => Err(StepFailure::Stop),
            Err(e) => Err(StepFailure::Bus(e)),
        }
    }

    fn fail(&mut self, step: &str, failure: StepFailure) -> ArmError {
        let port_lost = matches!(&failure, StepFailure::Bus(e) if e.port_lost());
        let stop = Box::new(self.safe_stop(port_lost));
        let step = step.to_owned();
        let err = match failure {
            StepFailure::Bus(source) => ArmError::Bus { step, source, stop },
            StepFailure::Unsafe(source) => ArmError::Unsafe { step, source, stop },
            StepFailure::Stop => ArmError::EmergencyStop { step, stop },
        };
        tracing::error!("{err}");
        self.halted = Some(err.to_string());
        err
    }

    /// Stops every servo that still answers, one by one, as configured.
    pub fn safe_stop(&mut self, port_lost: bool) -> StopReport {
        let mode = self.setup.safety.on_stop;
        let mut report = StopReport {
            mode,
            done: Vec::new(),
            released: Vec::new(),
            failed: Vec::new(),
            port_lost,
        };
        if port_lost {
            return report;
        }
        let ids = self.ids();
        let ranges: Vec<_> = self.setup.maps.all().copied().collect();
        for (id, range) in ids.into_iter().zip(ranges) {
            let result = match mode {
                StopMode::Hold => {
                    self.bus
                        .read_register(id, reg::PRESENT_POSITION)
                        .and_then(|pos| {
                            if range.in_range(pos) {
                                self.bus
                                    .write_register(id, reg::GOAL_POSITION, pos)
                                    .map(|()| true)
                            } else {
                                // Never a goal outside the range, not even to hold:
                                // a servo pushed out of its range is released instead.
                                self.bus
                                    .write_register(id, reg::TORQUE_ENABLE, 0)
                                    .map(|()| false)
                            }
                        })
                }
                StopMode::Release => self
                    .bus
                    .write_register(id, reg::TORQUE_ENABLE, 0)
                    .map(|()| true),
            };
            match result {
                Ok(true) => report.done.push(id),
                Ok(false) => report.released.push(id),
                Err(BusError::Fault { .. }) => {
                    // The servo answers but is faulted: take its torque off (it
                    // executes the write even though the reply carries the fault).
                    match self.bus.write_register(id, reg::TORQUE_ENABLE, 0) {
                        Ok(()) | Err(BusError::Fault { .. }) => report.released.push(id),
                        Err(_) => report.failed.push(id),
                    }
                }
                Err(e) if e.port_lost() => {
                    report.port_lost = true;
                    return report;
                }
                Err(_) => report.failed.push(id),
            }
        }
        report
    }

    /// Stops now (emergency stop from the caller's thread).
    pub fn emergency_stop(&mut self) -> StopReport {
        self.stop.store(true, Ordering::SeqCst);
        let report = self.safe_stop(false);
        self.halted = Some("emergency stop".to_owned());
        report
    }
}

#[cfg(test)]
mod tests;
