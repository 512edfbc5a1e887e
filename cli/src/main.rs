//! `forgebench`: the command line of the Forgebench A2A gateway, built on the Rust SDK.

mod args;
mod commands;
mod exec;
mod exit;
mod govern;
mod ledger;
mod output;
mod pages;
mod progress;
mod token;
mod watch;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use forgebench_sdk::{Client, HOSTED_URL};

use crate::args::{Cli, Command};
use crate::output::Printer;
use crate::token::CommandTokens;

/// `forgebench-cli/<version>`: what the CLI's requests say they come from.
const USER_AGENT: &str = concat!("forgebench-cli/", env!("CARGO_PKG_VERSION"));

#[tokio::main]
async fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FORGEBENCH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .init();
    let cli = Cli::parse();
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(
            shell,
            &mut Cli::command(),
            "forgebench",
            &mut std::io::stdout(),
        );
        return ExitCode::SUCCESS;
    }
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
    // A key, or a command that prints tokens: one of them (an empty one counts as none).
    // Its own User-Agent, so the gateway's access log tells the CLI's requests from the SDK's.
    let mut builder = Client::builder().base_url(url).user_agent(USER_AGENT);
    if let Some(key) = cli.key.filter(|key| !key.is_empty()) {
        builder = builder.api_key(key);
    }
    if let Some(command) = cli
        .token_command
        .filter(|command| !command.trim().is_empty())
    {
        builder = builder.token_provider(CommandTokens::new(command));
    }
    let client = match builder.build() {
        Ok(client) => client,
        Err(error) => {
            eprintln!(
                "forgebench: {error} (--key or FORGEBENCH_API_KEY, or --token-command or \
                 FORGEBENCH_TOKEN_COMMAND)"
            );
            return ExitCode::from(exit::USAGE);
        }
    };
    match commands::run(&client, printer, cli.command).await {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            printer.error(&error);
            ExitCode::from(error.exit_code())
        }
    }
}
