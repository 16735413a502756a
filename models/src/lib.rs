//! Model-checked protocols of pgmill.

pub mod checking;
pub mod claim;
pub mod orphan;
pub mod reassert;
pub mod rescue;
pub mod row;
