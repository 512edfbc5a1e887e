//! The A2A 1.0 protocol at the gate: its wire format and its errors, mapped onto the gateway's
//! tasks and refusals. The routes that speak it sit in `http/`.

pub mod error;
pub mod incoming;
pub mod jsonrpc;
pub mod names;
pub mod wire;

pub use error::{A2aError, A2aErrorKind};
