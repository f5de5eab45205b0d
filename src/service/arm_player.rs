//! The arm as the service's [`MovePlayer`]: each move is planned from the
//! arm's present pose and executed on the servo bus, every arrival
//! verified; a failure stops the arm safely and is reported to the core
//! (which pauses the game). The same code drives a real SO-101 over a
//! serial port and the simulated bus on a pseudo-terminal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use shakmaty::{Chess, Move, Position};

use super::runtime::MovePlayer;
use crate::arm::bus::{BusPort, FeetechBus};
use crate::arm::clock::Clock;
use crate::arm::plan::{Planner, SlotState};
use crate::arm::run::Executor;
use crate::arm::setup::ArmSetup;

/// Plays moves with the arm on one servo bus.
pub struct ArmPlayer<P: BusPort> {
    setup: ArmSetup,
    /// `None` only while a move runs (the executor holds it).
    bus: Option<FeetechBus<P>>,
    clock: Arc<dyn Clock>,
    stop: Arc<AtomicBool>,
    /// Graveyard and reserve slots used so far in this game.
    slots: SlotState,
    /// What the arm keeps alive beside the bus (the simulated bus's
    /// serving thread); dropped with the player.
    _keep: Option<Box<dyn Send>>,
}

impl<P: BusPort + 'static> ArmPlayer<P> {
    pub fn new(setup: ArmSetup, bus: FeetechBus<P>, clock: Arc<dyn Clock>) -> ArmPlayer<P> {
        ArmPlayer {
            setup,
            bus: Some(bus),
            clock,
            stop: Arc::new(AtomicBool::new(false)),
            slots: SlotState::default(),
            _keep: None,
        }
    }

    /// Keeps `thing` alive as long as the player (a simulated bus).
    pub fn keeping(mut self, thing: Box<dyn Send>) -> ArmPlayer<P> {
        self._keep = Some(thing);
        self
    }
}

impl<P: BusPort + 'static> MovePlayer for ArmPlayer<P> {
    fn play(&mut self, before: &Chess, mv: Move) -> Result<(), String> {
        let bus = self
            .bus
            .take()
            .ok_or_else(|| "the arm's bus is not available".to_owned())?;
        // A stop pressed before this move was answered by the core (it
        // paused the game); the person resumed it, so the arm may move.
        self.stop.store(false, Ordering::SeqCst);
        let mut ex =
            Executor::new(bus, &self.setup, self.clock.clone()).with_stop_flag(self.stop.clone());
        // A new game starts with an empty graveyard (people clear it when
        // they set the pieces up).
        if before.fullmoves().get() <= 1 {
            self.slots = SlotState::default();
        }
        let mut slots = self.slots.clone();
        let result = ex
            .connect()
            .map_err(|e| e.to_string())
            .and_then(|start| {
                Planner::new(&self.setup)
                    .plan(before, mv, Some(start), &mut slots)
                    .map_err(|e| format!("cannot plan the move: {e}"))
            })
            .and_then(|plan| ex.execute(&plan).map_err(|e| e.to_string()));
        self.bus = Some(ex.into_bus());
        if result.is_ok() {
            self.slots = slots;
        }
        result.map(|_| ())
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stop_handle(&self) -> Option<Arc<dyn Fn() + Send + Sync>> {
        let stop = self.stop.clone();
        Some(Arc::new(move || stop.store(true, Ordering::SeqCst)))
    }
}
