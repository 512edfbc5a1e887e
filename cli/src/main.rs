//! `forgebench`: the command line of the Forgebench A2A gateway, built on the Rust SDK.

mod args;
mod commands;
mod exec;
mod exit;
mod output;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use forgebench_sdk::{Client, HOSTED_URL};

use crate::args::Cli;
use crate::output::Printer;

#[tokio::main]
async fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FORGEBENCH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .init();
    let cli = Cli::parse();
    let printer = Printer { json: cli.json };
    // No default gateway: a key goes only where the user said (--url or FORGEBENCH_URL).
    let Some(url) = cli.url.filter(|url| !url.is_empty()) else {
        Cli::command()
            .error(
                ErrorKind::MissingRequiredArgument,
                format!(
                    "no gateway URL: pass --url or set FORGEBENCH_URL (for the hosted service, \
                     {HOSTED_URL})"
                ),
            )
            .exit();
    };
    let client = match Client::builder()
        .api_key(cli.key.unwrap_or_default())
        .base_url(url)
        .build()
    {
        Ok(client) => client,
        Err(error) => {
            eprintln!("forgebench: {error} (--key or FORGEBENCH_API_KEY)");
            return ExitCode::from(exit::USAGE);
        }
    };
    match commands::run(&client, printer, cli.command).await {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("forgebench: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
