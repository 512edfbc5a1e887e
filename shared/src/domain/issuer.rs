//! Trusted issuers: the OpenID Connect providers a tenant lets its agents and members sign in
//! with, and which subject of each signs in as whom.
//!
//! A tenant trusts an issuer for one audience: a token is taken only when its `iss` is the
//! issuer and its `aud` names the audience, both exactly. One (issuer, audience) pair belongs to
//! one tenant of the deployment, which is how a token finds its tenant. Within it, each subject
//! (`sub`) the tenant lists signs in as one agent or one member, and acts exactly as that
//! principal's key would.

use serde::{Deserialize, Serialize};

use super::clock::Timestamp;
use super::ids::{AgentId, MemberId};
use super::Invalid;

/// The most issuers one tenant trusts.
pub const MAX_ISSUERS_PER_TENANT: usize = 10;
/// The most subjects one trusted issuer lists.
pub const MAX_SUBJECTS_PER_ISSUER: usize = 50;
/// The longest issuer URL and audience.
const MAX_URL_CHARS: usize = 512;
/// The longest subject: the OpenID Connect limit (Core §2, `sub`).
const MAX_SUBJECT_CHARS: usize = 255;

/// Who a subject signs in as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignsInAs {
    Agent(AgentId),
    Member(MemberId),
}

/// One subject of an issuer and who it signs in as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectGrant {
    pub subject: String,
    pub signs_in_as: SignsInAs,
}

/// An OpenID Connect issuer a tenant trusts, for one audience.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedIssuer {
    pub id: String,
    /// The issuer identifier, exactly as tokens carry it in `iss`.
    pub issuer: String,
    /// The audience a token must name in `aud`.
    pub audience: String,
    pub subjects: Vec<SubjectGrant>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl TrustedIssuer {
    /// Who `subject` signs in as, if the issuer lists it.
    pub fn signs_in_as(&self, subject: &str) -> Option<&SignsInAs> {
        self.subjects
            .iter()
            .find(|grant| grant.subject == subject)
            .map(|grant| &grant.signs_in_as)
    }

    /// Where the issuer's OpenID Connect discovery document is (Discovery §4).
    pub fn discovery_url(&self) -> String {
        discovery_url(&self.issuer)
    }
}

/// The discovery document's URL of an issuer: `/.well-known/openid-configuration` after the
/// issuer, without a doubled slash.
pub fn discovery_url(issuer: &str) -> String {
    format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    )
}

/// An issuer identifier as OpenID Connect defines one: an `https` URL with no query or fragment.
/// A plain `http` issuer is taken only on a loopback host (a provider on the developer's own
/// machine); whether the gateway may reach it at all is the outbound guard's decision.
pub fn parse_issuer(text: &str) -> Result<String, Invalid> {
    let invalid = || {
        Invalid::new(format!(
            "issuer must be an https URL of at most {MAX_URL_CHARS} printable ASCII characters, without query or fragment"
        ))
    };
    if text.is_empty() || text.len() > MAX_URL_CHARS || !text.chars().all(|c| c.is_ascii_graphic())
    {
        return Err(invalid());
    }
    let url = url::Url::parse(text).map_err(|_| invalid())?;
    let loopback = matches!(
        url.host(),
        Some(url::Host::Domain("localhost")) | Some(url::Host::Ipv4(std::net::Ipv4Addr::LOCALHOST))
    );
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    if !scheme_ok
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(invalid());
    }
    Ok(text.to_owned())
}

/// An audience: 1 to 512 characters, none a control character or a space at either end.
pub fn parse_audience(text: &str) -> Result<String, Invalid> {
    bounded_text(text, MAX_URL_CHARS, "audience")
}

/// A subject: 1 to 255 characters, none a control character or a space at either end.
pub fn parse_subject(text: &str) -> Result<String, Invalid> {
    bounded_text(text, MAX_SUBJECT_CHARS, "subject")
}

fn bounded_text(text: &str, max: usize, what: &str) -> Result<String, Invalid> {
    let count = text.chars().count();
    if count == 0 || count > max || text.trim() != text || text.chars().any(char::is_control) {
        return Err(Invalid::new(format!(
            "{what} is 1 to {max} characters, without control characters or spaces at either end"
        )));
    }
    Ok(text.to_owned())
}

/// Checks a list of subjects: within the bound, no subject twice.
pub fn check_subjects(subjects: &[SubjectGrant]) -> Result<(), Invalid> {
    if subjects.len() > MAX_SUBJECTS_PER_ISSUER {
        return Err(Invalid::new(format!(
            "an issuer lists at most {MAX_SUBJECTS_PER_ISSUER} subjects"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for grant in subjects {
        if !seen.insert(grant.subject.as_str()) {
            return Err(Invalid::new(format!(
                "subject {:?} is listed twice",
                grant.subject
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issuer_is_an_https_url_or_a_loopback_http_one() {
        for good in [
            "https://login.example.com",
            "https://login.example.com/tenant/v2.0",
            "https://token.actions.githubusercontent.com",
            "http://127.0.0.1:4010",
            "http://localhost:4010/realms/x",
        ] {
            assert_eq!(parse_issuer(good).as_deref(), Ok(good), "{good}");
        }
        for bad in [
            "",
            "http://login.example.com",
            "https://login.example.com?x=1",
            "https://login.example.com#f",
            "https://user:pw@login.example.com",
            " https://login.example.com",
            "login.example.com",
            "ftp://login.example.com",
            "https://login.example.com/a\nb",
            "https://login.example.com/a b",
            "https://login.exämple.com",
        ] {
            assert!(parse_issuer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_discovery_url_follows_the_issuer_without_a_doubled_slash() {
        assert_eq!(
            discovery_url("https://a.example/realm/"),
            "https://a.example/realm/.well-known/openid-configuration"
        );
        assert_eq!(
            discovery_url("https://a.example"),
            "https://a.example/.well-known/openid-configuration"
        );
    }

    #[test]
    fn subjects_are_bounded_and_unique() {
        let grant = |subject: &str| SubjectGrant {
            subject: subject.into(),
            signs_in_as: SignsInAs::Agent("a".into()),
        };
        assert!(check_subjects(&[grant("x"), grant("y")]).is_ok());
        assert!(check_subjects(&[grant("x"), grant("x")]).is_err());
        let many: Vec<_> = (0..=MAX_SUBJECTS_PER_ISSUER)
            .map(|n| grant(&n.to_string()))
            .collect();
        assert!(check_subjects(&many).is_err());
        assert!(parse_subject("repo:org/app:ref:refs/heads/main").is_ok());
        assert!(parse_subject("").is_err());
        assert!(parse_subject("a\nb").is_err());
        assert!(parse_subject(&"s".repeat(256)).is_err());
    }

    #[test]
    fn a_subject_signs_in_as_the_principal_listed() {
        let issuer = TrustedIssuer {
            id: "i".into(),
            issuer: "https://a.example".into(),
            audience: "gate".into(),
            subjects: vec![SubjectGrant {
                subject: "svc".into(),
                signs_in_as: SignsInAs::Member("m".into()),
            }],
            created_at: Timestamp::default(),
            updated_at: Timestamp::default(),
        };
        assert_eq!(
            issuer.signs_in_as("svc"),
            Some(&SignsInAs::Member("m".into()))
        );
        assert_eq!(issuer.signs_in_as("other"), None);
    }
}
