//! `forgebench`: the command line of the Forgebench A2A gateway, built on the Rust SDK.

mod args;
mod commands;
mod exec;
mod exit;
mod govern;
mod ledger;
mod output;
mod pages;
mod profile;
mod progress;
mod token;
mod watch;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use forgebench_sdk::{Client, HOSTED_URL};

use crate::args::{Cli, Command};
use crate::commands::CommandError;
use crate::output::Printer;
use crate::profile::ProfileError;
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
    let reach = match reach(&cli) {
        Ok(reach) => reach,
        Err(error) => {
            let error = CommandError::from(error);
            printer.error(&error);
            return ExitCode::from(error.exit_code());
        }
    };
    // No default gateway: a key goes only where the user said (--url, FORGEBENCH_URL or the
    // profile).
    let Some(url) = reach.url else {
        Cli::command()
            .error(
                ErrorKind::MissingRequiredArgument,
                format!(
                    "no gateway URL: pass --url, set FORGEBENCH_URL or use a profile that has \
                     one (for the hosted service, {HOSTED_URL})"
                ),
            )
            .exit();
    };
    // Its own User-Agent, so the gateway's access log tells the CLI's requests from the SDK's.
    let mut builder = Client::builder().base_url(url).user_agent(USER_AGENT);
    // A key, or a command that prints tokens: one of them.
    if let Some(key) = reach.key {
        builder = builder.api_key(key);
    }
    if let Some(command) = reach.token_command {
        builder = builder.token_provider(CommandTokens::new(command));
    }
    let client = match builder.build() {
        Ok(client) => client,
        Err(error) => {
            eprintln!(
                "forgebench: {error} (--key or FORGEBENCH_API_KEY, or --token-command or \
                 FORGEBENCH_TOKEN_COMMAND, or a profile with either)"
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

/// Where the CLI goes and how it signs in; each `None` is not given anywhere.
struct Reach {
    url: Option<String>,
    key: Option<String>,
    token_command: Option<String>,
}

/// Flags first, then variables (clap reads a flag over its variable), then the profile
/// ([`profile`]): the profile gives the URL when neither did, and its credential (key or token
/// command) when neither gave one. An empty value counts as none. The profile is read only when
/// one is named or something is missing.
fn reach(cli: &Cli) -> Result<Reach, ProfileError> {
    let given = |value: &Option<String>| value.clone().filter(|value| !value.trim().is_empty());
    let mut reach = Reach {
        url: given(&cli.url),
        key: given(&cli.key),
        token_command: given(&cli.token_command),
    };
    let credential_given = reach.key.is_some() || reach.token_command.is_some();
    let named = cli.profile.as_deref().filter(|name| !name.is_empty());
    if named.is_none() && reach.url.is_some() && credential_given {
        return Ok(reach);
    }
    if let Some(profile) = profile::load(named)? {
        if reach.url.is_none() {
            reach.url = given(&profile.url);
        }
        if !credential_given {
            reach.key = given(&profile.key);
            reach.token_command = given(&profile.token_command);
        }
    }
    Ok(reach)
}
