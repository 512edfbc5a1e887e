//! Profiles: named sets of a gateway URL and a credential (a key or a token command) in the
//! config file, `$XDG_CONFIG_HOME/forgebench/config.toml` (else `~/.config/forgebench/…`):
//!
//! ```toml
//! [profiles.default]
//! url = "https://api.forgebench.ai"
//! key = "fb_agt_..."
//!
//! [profiles.ci]
//! url = "https://api.forgebench.ai"
//! token_command = "cat /run/secrets/forgebench-token"
//! ```
//!
//! A profile fills in only what no flag and no variable gave (the URL; the credential as a
//! whole). A file holding a key is refused unless only its owner may read it (as ssh refuses a
//! private key others can read), and an error never quotes the file.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The profile used when none is named (with `--profile` or `FORGEBENCH_PROFILE`), if the file
/// has it.
pub const DEFAULT_PROFILE: &str = "default";

/// One profile of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub url: Option<String>,
    pub key: Option<String>,
    pub token_command: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

/// Why a profile could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("no config file to read profile {name} from: set XDG_CONFIG_HOME or HOME")]
    NoConfigDirectory { name: String },
    #[error("no profile {name} in {}", path.display())]
    Missing { name: String, path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The parser's message and place, never the file's text (it may hold a key).
    #[error("{} is not a config file: {message} (line {line})", path.display())]
    Parse {
        path: PathBuf,
        message: String,
        line: usize,
    },
    #[error(
        "{} holds a key and others may read it (mode {mode:03o}): refused; make it yours \
         alone with `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    Exposed { path: PathBuf, mode: u32 },
}

/// The config file's path: under `XDG_CONFIG_HOME` when it is set to an absolute path, else
/// under `HOME/.config`.
pub fn config_path() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute());
    let base = match xdg {
        Some(base) => base,
        None => {
            PathBuf::from(std::env::var_os("HOME").filter(|home| !home.is_empty())?).join(".config")
        }
    };
    Some(base.join("forgebench").join("config.toml"))
}

/// The profile `named` (an error when it is not there), or [`DEFAULT_PROFILE`] when none is
/// named (`None` when the file or that profile is not there).
pub fn load(named: Option<&str>) -> Result<Option<Profile>, ProfileError> {
    let name = named.unwrap_or(DEFAULT_PROFILE);
    let Some(path) = config_path() else {
        return match named {
            Some(_) => Err(ProfileError::NoConfigDirectory { name: name.into() }),
            None => Ok(None),
        };
    };
    let missing = || match named {
        Some(_) => Err(ProfileError::Missing {
            name: name.into(),
            path: path.clone(),
        }),
        None => Ok(None),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return missing(),
        Err(source) => return Err(ProfileError::Read { path, source }),
    };
    let mut config = parse(&path, &text)?;
    let Some(profile) = config.profiles.remove(name) else {
        return missing();
    };
    if profile.key.as_deref().is_some_and(|key| !key.is_empty()) {
        only_its_owner_reads(&path)?;
    }
    Ok(Some(profile))
}

fn parse(path: &Path, text: &str) -> Result<ConfigFile, ProfileError> {
    toml::from_str(text).map_err(|error| {
        let at = error.span().map_or(0, |span| span.start);
        ProfileError::Parse {
            path: path.to_owned(),
            message: error.message().to_owned(),
            line: text
                .get(..at)
                .map_or(1, |before| before.matches('\n').count() + 1),
        }
    })
}

fn only_its_owner_reads(path: &Path) -> Result<(), ProfileError> {
    let mode = std::fs::metadata(path)
        .map_err(|source| ProfileError::Read {
            path: path.to_owned(),
            source,
        })?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        return Err(ProfileError::Exposed {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_does_not_parse_is_named_without_quoting_it() {
        let text = "[profiles.default]\nurl = \"https://a.example\"\nkey = fb_agt_secret\n";
        let error = parse(Path::new("/c/config.toml"), text).unwrap_err();
        let said = error.to_string();
        assert!(!said.contains("fb_agt_secret"), "{said}");
        assert!(said.contains("(line 3)"), "{said}");
        let unknown = parse(Path::new("/c/config.toml"), "[profiles.x]\nkye = \"k\"\n");
        assert!(matches!(unknown, Err(ProfileError::Parse { .. })));
    }
}
