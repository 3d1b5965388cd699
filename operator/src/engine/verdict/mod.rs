//! Judging a finished run, in one place: how it ends (its phase and the `Complete` condition),
//! whether it answered its question, its thresholds, the recommendation among the cells that pass them, and the exit code both
//! `run` commands give for it.

pub mod answer;
pub mod end;
pub mod exit;
pub mod gate;
pub mod judge;
pub mod outcome;
pub mod recommend;
