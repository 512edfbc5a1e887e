//! The OpenID Connect issuers a tenant trusts: each for one audience, each listed subject signing
//! in as an agent or a member.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::client::{segment, Client, Request};
use crate::error::{Error, Result};
use crate::manage::Items;

/// An issuer the tenant trusts (`TrustedIssuer`). Fields the SDK does not model are kept in
/// `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustedIssuer {
    pub id: String,
    /// The issuer identifier, exactly as its tokens carry it in `iss`.
    pub issuer: String,
    /// The `aud` its tokens must name.
    pub audience: String,
    /// Where the gateway read the issuer's discovery document.
    pub discovery_url: String,
    pub subjects: Vec<SubjectGrant>,
    pub created_at: String,
    pub updated_at: String,
    /// Only in the answer to [`Client::trust_issuer`]: what reading the issuer's discovery
    /// document then found. One that could not be read does not stop the trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery: Option<IssuerDiscovery>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What reading a trusted issuer's discovery document found (`TrustedIssuer.discovery`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuerDiscovery {
    /// Whether the document was read and names the issuer.
    pub read: bool,
    /// Why it could not be used, when `read` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A subject a trusted issuer lists, as the gateway shows it (`SubjectGrant`): the token's `sub`
/// and the agent or the member it signs in as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectGrant {
    /// The token's `sub`, exactly.
    pub subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_id: Option<String>,
}

/// Whom a subject signs in as: an agent (by name or id) or a member (by id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SignsInAs {
    /// The agent's name or id.
    #[serde(rename = "agent")]
    Agent(String),
    /// The member's id.
    #[serde(rename = "member_id")]
    Member(String),
}

/// A subject to list (`SubjectGrantIn`): the token's `sub` and the agent or the member it signs
/// in as. Serialized `{"subject", "agent"}` or `{"subject", "member_id"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectGrantIn {
    /// The token's `sub`, exactly (1 to 255 characters).
    pub subject: String,
    #[serde(flatten)]
    pub signs_in_as: SignsInAs,
}

impl SubjectGrantIn {
    /// Tokens whose `sub` is `subject` sign in as the agent `agent` (name or id).
    pub fn agent(subject: impl Into<String>, agent: impl Into<String>) -> SubjectGrantIn {
        SubjectGrantIn {
            subject: subject.into(),
            signs_in_as: SignsInAs::Agent(agent.into()),
        }
    }

    /// Tokens whose `sub` is `subject` sign in as the member `member_id`.
    pub fn member(subject: impl Into<String>, member_id: impl Into<String>) -> SubjectGrantIn {
        SubjectGrantIn {
            subject: subject.into(),
            signs_in_as: SignsInAs::Member(member_id.into()),
        }
    }
}

/// A distrusted issuer: `{id, removed: true}` (`IssuerRemoved`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuerRemoved {
    pub id: String,
    pub removed: bool,
}

fn issuer_path(issuer_id: &str) -> Result<String> {
    Ok(format!("/v1/issuers/{}", segment(issuer_id)?))
}

fn subjects_json(subjects: &[SubjectGrantIn]) -> Result<Value> {
    serde_json::to_value(subjects).map_err(|error| Error::Decode(error.to_string()))
}

impl Client {
    /// The OpenID Connect issuers the tenant trusts (admin, member, viewer):
    /// `GET /v1/issuers`.
    pub async fn list_issuers(&self) -> Result<Items<TrustedIssuer>> {
        self.send_json(Request::get("/v1/issuers".into())).await
    }

    /// Trusts `issuer` for `audience` (admin; audited): its tokens whose `aud` names `audience`
    /// then sign in as the agent or member each of `subjects` names. The gateway reads the
    /// issuer's discovery document at once and the answer's `discovery` says how that went: one
    /// it cannot read (or that names another issuer) does not stop the trust (`read: false` and
    /// the `problem`). An address the outbound guard refuses is `403`
    /// ([`Error::PermissionDenied`]); a pair already trusted is `409`, an unknown agent or
    /// member `404`. Not retried after a broken connection (a repeat would be a `409`):
    /// `POST /v1/issuers`.
    pub async fn trust_issuer(
        &self,
        issuer: &str,
        audience: &str,
        subjects: &[SubjectGrantIn],
    ) -> Result<TrustedIssuer> {
        if issuer.is_empty() || audience.is_empty() {
            return Err(Error::InvalidArgument(
                "an issuer and an audience are required".into(),
            ));
        }
        let body = json!({
            "issuer": issuer,
            "audience": audience,
            "subjects": subjects_json(subjects)?,
        });
        self.send_json(Request::post("/v1/issuers".into(), body))
            .await
    }

    /// Replaces the subjects a trusted issuer lists (admin; audited); an empty list leaves it
    /// trusted with no subject: `PATCH /v1/issuers/{issuer_id}`.
    pub async fn update_issuer(
        &self,
        issuer_id: &str,
        subjects: &[SubjectGrantIn],
    ) -> Result<TrustedIssuer> {
        let body = json!({ "subjects": subjects_json(subjects)? });
        let request = Request::new(reqwest::Method::PATCH, issuer_path(issuer_id)?)
            .body(body)
            // The same list again changes nothing.
            .repeatable(true);
        self.send_json(request).await
    }

    /// Trusts an issuer no more (admin; audited): its tokens sign in no more. An unknown
    /// issuer is `404`: `DELETE /v1/issuers/{issuer_id}`.
    pub async fn distrust_issuer(&self, issuer_id: &str) -> Result<IssuerRemoved> {
        self.send_json(Request::new(
            reqwest::Method::DELETE,
            issuer_path(issuer_id)?,
        ))
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_is_spelled_as_the_gateway_takes_it() {
        assert_eq!(
            serde_json::to_value(SubjectGrantIn::agent("svc", "invoice-classifier")).unwrap(),
            json!({"subject": "svc", "agent": "invoice-classifier"})
        );
        assert_eq!(
            serde_json::to_value(SubjectGrantIn::member("ops", "m-1")).unwrap(),
            json!({"subject": "ops", "member_id": "m-1"})
        );
    }

    #[test]
    fn a_trusted_issuer_reads_the_documented_example() {
        let trusted: TrustedIssuer = serde_json::from_value(json!({
            "id": "5b7e7c1e-2f0a-4b43-9d55-0f3f7d7f9a61",
            "issuer": "https://login.example.com/tenant-a/v2.0",
            "audience": "api://forgebench-tenant-a",
            "discovery_url": "https://login.example.com/tenant-a/v2.0/.well-known/openid-configuration",
            "subjects": [
                {"subject": "7f6b0c2a-workload-invoices", "agent_id": "706608c0-4160-452a-86ac-ded1186326ac"},
                {"subject": "ops-runner", "member_id": "27ebd003-1ecf-4f65-bd21-932c4e63bdd3"}
            ],
            "created_at": "2026-12-05T10:00:00.000Z",
            "updated_at": "2026-12-05T10:00:00.000Z"
        }))
        .unwrap();
        assert_eq!(
            trusted.subjects[0].agent_id.as_deref(),
            Some("706608c0-4160-452a-86ac-ded1186326ac")
        );
        assert_eq!(trusted.subjects[1].agent_id, None);
        assert_eq!(
            trusted.subjects[1].member_id.as_deref(),
            Some("27ebd003-1ecf-4f65-bd21-932c4e63bdd3")
        );
    }
}
