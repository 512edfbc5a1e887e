//! The Forgebench A2A gateway's shared crate: the domain, the DynamoDB adapter, the HTTP handlers
//! and the runtime glue that every Lambda function and the local gateway are built from.

pub mod a2a;
pub mod app;
pub mod bodies;
#[cfg(feature = "local-stack")]
pub mod bootstrap;
pub(crate) mod cache;
pub mod config;
pub mod domain;
pub mod error;
pub mod function;
pub mod http;
pub mod metrics;
pub mod oidc;
pub mod on_first_use;
pub mod push;
pub mod runtime;
pub mod sdk_http;
pub mod search;
pub mod signing;
pub mod store;
pub mod sweeper;
mod sweeper_holds;
pub mod tasks;
pub mod telemetry;
pub mod trace;
pub mod vault;

pub use app::App;
pub use config::Config;
pub use function::Function;
pub use http::Route;
