//! The gateway's own header names, on its API and on the push deliveries it sends. Standard
//! headers come from `http::header`.

/// Names the governed call that caused this one (request); carried on to a push delivery.
pub const PARENT_CALL: &str = "x-parent-call";
/// The call id of an opened task (response).
pub const CALL_ID: &str = "x-call-id";
/// The task a push delivery carries.
pub const TASK: &str = "x-forgebench-task";
/// A push delivery's id: the same on every retry of one delivery (Standard Webhooks).
pub const WEBHOOK_ID: &str = "webhook-id";
/// When a push delivery was signed, in seconds since the epoch (Standard Webhooks).
pub const WEBHOOK_TIMESTAMP: &str = "webhook-timestamp";
/// A push delivery's signatures (Standard Webhooks).
pub const WEBHOOK_SIGNATURE: &str = "webhook-signature";
