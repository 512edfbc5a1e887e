//! `--token-command CMD` (`FORGEBENCH_TOKEN_COMMAND`): signing in with OpenID Connect access
//! tokens that a command prints, as the SDK's token provider. The command runs with `sh -c`
//! when the CLI needs a token: first, when the one it has nears its expiry, and when the gateway
//! refuses it. Its stdout is the token, or a token endpoint's JSON answer (`access_token`,
//! `expires_in`); its stderr is the CLI's. The token is never printed.

use std::process::Stdio;
use std::time::Duration;

use forgebench_sdk::{AccessToken, TokenError, TokenFuture, TokenProvider};
use serde_json::Value;
use tokio::process::Command;

/// The variable the token command is read from (beside `--token-command`).
pub const TOKEN_COMMAND_VARIABLE: &str = "FORGEBENCH_TOKEN_COMMAND";

/// How long the token command may take.
const TOKEN_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A token provider that runs a command.
pub struct CommandTokens {
    command: String,
}

impl CommandTokens {
    pub fn new(command: String) -> CommandTokens {
        CommandTokens { command }
    }
}

impl TokenProvider for CommandTokens {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(run(&self.command))
    }
}

async fn run(command: &str) -> Result<AccessToken, TokenError> {
    // Spawned, not `output()`: that would capture the stderr, which is the user's to see.
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("the token command could not be run: {error}"))?;
    let output = tokio::time::timeout(TOKEN_COMMAND_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| {
            format!(
                "the token command did not finish within {} s",
                TOKEN_COMMAND_TIMEOUT.as_secs()
            )
        })?
        .map_err(|error| format!("the token command could not be run: {error}"))?;
    if !output.status.success() {
        return Err(format!("the token command failed ({})", output.status).into());
    }
    token_from_stdout(&output.stdout)
}

/// The token a command printed: one word, or a JSON object with `access_token` (and
/// `expires_in`, seconds), as a token endpoint answers. Errors never quote the output.
pub fn token_from_stdout(stdout: &[u8]) -> Result<AccessToken, TokenError> {
    let text = std::str::from_utf8(stdout)
        .map_err(|_| "the token command printed something that is not UTF-8")?
        .trim();
    if text.starts_with('{') {
        let answer: Value = serde_json::from_str(text)
            .map_err(|_| "the token command printed a JSON object that does not parse")?;
        let token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|token| !token.is_empty())
            .ok_or("the token command's JSON has no access_token")?;
        let token = AccessToken::new(token);
        return Ok(match answer.get("expires_in").and_then(Value::as_f64) {
            Some(seconds) if seconds.is_finite() && seconds >= 0.0 => {
                token.expires_in(Duration::from_secs_f64(seconds))
            }
            _ => token,
        });
    }
    if text.is_empty() {
        return Err("the token command printed nothing".into());
    }
    if text.contains(char::is_whitespace) {
        return Err("the token command printed more than one word: print only the token".into());
    }
    Ok(AccessToken::new(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_or_a_token_endpoint_answer_is_a_token() {
        let plain = token_from_stdout(b"eyJ.a.b\n").unwrap();
        assert_eq!((plain.expose(), plain.lifetime()), ("eyJ.a.b", None));
        let answer = token_from_stdout(
            br#"{"access_token": "eyJ.c.d", "token_type": "Bearer", "expires_in": 3600}"#,
        )
        .unwrap();
        assert_eq!(answer.expose(), "eyJ.c.d");
        assert_eq!(answer.lifetime(), Some(Duration::from_secs(3600)));
    }

    #[test]
    fn anything_else_is_refused_without_quoting_it() {
        for printed in [
            &b""[..],
            b"  \n",
            b"Bearer eyJ.secret.sig",
            br#"{"token": "eyJ.secret.sig"}"#,
            b"{not json eyJ.secret.sig",
        ] {
            let error = token_from_stdout(printed).unwrap_err().to_string();
            assert!(!error.contains("secret"), "{error}");
        }
    }

    #[tokio::test]
    async fn the_command_runs_with_sh_and_a_failure_says_its_status() {
        let token = run("printf '%s\\n' eyJ.from.sh").await.unwrap();
        assert_eq!(token.expose(), "eyJ.from.sh");
        let error = run("echo eyJ.half.done; exit 3").await.unwrap_err();
        assert!(error.to_string().contains("exit status: 3"), "{error}");
        assert!(!error.to_string().contains("half"), "{error}");
    }
}
