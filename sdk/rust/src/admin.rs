//! The tenant's records and settings (audit log, call lineage, tenant settings) and the
//! gateway's signing keys.

use futures::{Stream, TryStreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::client::{segment, Client, Request};
use crate::error::{Error, Result};
use crate::manage::Items;

/// Whether an audited action was done or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    Allowed,
    Refused,
    /// A tried (`dry_run`) tenant policy would have refused it; it went on.
    WouldRefuse,
    /// An outcome this SDK does not know yet.
    #[serde(other)]
    Unknown,
}

impl AuditOutcome {
    /// The outcome as the gateway spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOutcome::Allowed => "allowed",
            AuditOutcome::Refused => "refused",
            AuditOutcome::WouldRefuse => "would_refuse",
            AuditOutcome::Unknown => "unknown",
        }
    }
}

/// Who did an audited action: `kind` (`member`, `agent`, `operator`, …) and id.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AuditActor {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub id: Option<String>,
}

/// One entry of the audit log. Fields the SDK does not model are kept in `extra`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: String,
    pub at: String,
    #[serde(default)]
    pub actor: AuditActor,
    /// `agent.create`, `member.key.revoke`, `task.open`, `tenant.word_search.off`, …
    pub action: String,
    pub target: String,
    pub outcome: AuditOutcome,
    #[serde(default)]
    pub reason: Option<String>,
    /// The tenant policies (comma-separated names) that decided it, when a policy did.
    #[serde(default)]
    pub policy: Option<String>,
    #[serde(default)]
    pub call_id: Option<String>,
    /// An open's or a caller's answer's lineage, allowed or refused: the call that caused it.
    #[serde(default)]
    pub parent_call_id: Option<String>,
    /// The first call of its chain: a refused open is found in its tree by this.
    #[serde(default)]
    pub root_call_id: Option<String>,
    #[serde(default)]
    pub task_id: Option<String>,
    /// How many times this happened in the entry's minute (refusals are counted, not repeated).
    #[serde(default = "one")]
    pub count: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn one() -> u64 {
    1
}

/// The filters of `GET /v1/audit` (admin, viewer); every one optional.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// An agent (name or id) as the actor or the target.
    pub agent: Option<String>,
    /// An action prefix: `agent.` matches `agent.create`, `agent.key.issue`, …
    pub action: Option<String>,
    pub outcome: Option<AuditOutcome>,
    /// RFC 3339: entries after it.
    pub since: Option<String>,
    /// 1–100, default 50.
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl AuditQuery {
    fn request(&self) -> Request {
        let mut request = Request::get("/v1/audit".into());
        let filters = [
            ("agent", self.agent.clone()),
            ("action", self.action.clone()),
            ("outcome", self.outcome.map(|o| o.as_str().to_owned())),
            ("since", self.since.clone()),
            ("limit", self.limit.map(|l| l.to_string())),
            ("cursor", self.cursor.clone()),
        ];
        for (name, value) in filters {
            if let Some(value) = value {
                request = request.query(name, value);
            }
        }
        request
    }
}

/// One page of the audit log, newest first. The filters apply within each page read, so a page
/// may be short (even empty) while `next_cursor` still leads on; `None` on the last page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditPage {
    pub items: Vec<AuditEntry>,
    pub next_cursor: Option<String>,
}

/// One call of a lineage tree (`GET /v1/calls`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call {
    pub call_id: String,
    #[serde(default)]
    pub parent_call_id: Option<String>,
    pub root_call_id: String,
    pub task_id: String,
    pub caller_agent_id: String,
    pub callee_agent_id: String,
    pub at: String,
}

/// What a signing key signs: agent cards or push deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SigningKeyPurpose {
    CardSigning,
    WebhookSigning,
    /// A purpose this SDK does not know yet.
    #[serde(other)]
    Unknown,
}

/// One public key of the JWKS (an Ed25519 `OKP` key). Fields the SDK does not model are kept in
/// `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    pub crv: String,
    /// The public key, base64url.
    pub x: String,
    pub kid: String,
    pub alg: String,
    #[serde(rename = "use")]
    pub key_use: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<SigningKeyPurpose>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The gateway's JWKS: every signing key not retired, of both purposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// The key `kid`, when it is listed.
    pub fn key(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|key| key.kid == kid)
    }

    /// The set as JSON, as [`crate::webhooks::verify_delivery`] takes it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A signing key made active by a rotation: `{kid, purpose}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningKey {
    pub kid: String,
    pub purpose: SigningKeyPurpose,
}

/// A retired signing key: `{kid, purpose, retired: true}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetiredSigningKey {
    pub kid: String,
    pub purpose: SigningKeyPurpose,
    pub retired: bool,
}

/// The caller's tenant's settings: word search and the call-tree limits (docs/api.md,
/// "Governance").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantSettings {
    pub tenant_id: String,
    /// Whether task message words are indexed for `q` searches (default true).
    pub word_search: bool,
    /// The most calls on one path of a call tree, its root counted as 1: 1 to 64 (default 16).
    pub max_call_depth: u32,
    /// Whether a call to an agent already on its own path to the root is refused (default
    /// false).
    pub refuse_cycles: bool,
    /// The most tasks one call may open, 1 to 10,000; `None` is no limit (the default).
    pub max_fan_out: Option<u32>,
    /// The most tasks of one call tree open at once, 1 to 10,000; `None` is no limit (the
    /// default).
    pub max_open_in_tree: Option<u32>,
}

/// What [`Client::update_tenant_settings`] changes; a field left `None` stays as it is. The
/// count limits tell the two apart: `max_fan_out: Some(None)` is sent as `null` and clears the
/// limit, `None` leaves it out. A change of the call-tree limits is audited as
/// `tenant.call_tree`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TenantSettingsPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub word_search: Option<bool>,
    /// 1 to 64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_call_depth: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refuse_cycles: Option<bool>,
    /// `Some(Some(n))` sets the limit (1 to 10,000), `Some(None)` clears it (`null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_fan_out: Option<Option<u32>>,
    /// `Some(Some(n))` sets the limit (1 to 10,000), `Some(None)` clears it (`null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_open_in_tree: Option<Option<u32>>,
}

impl Client {
    /// One page of the tenant's audit log, newest first (admin, viewer): `GET /v1/audit`.
    pub async fn audit(&self, query: &AuditQuery) -> Result<AuditPage> {
        self.send_json(query.request()).await
    }

    /// Every audit entry `query` selects, newest first, read page by page (following
    /// `next_cursor` from `query.cursor`) as the stream is polled. A refusal is the stream's
    /// last item.
    pub fn audit_entries(
        &self,
        query: &AuditQuery,
    ) -> impl Stream<Item = Result<AuditEntry>> + Send + 'static {
        let pages = futures::stream::try_unfold(
            (self.clone(), Some(query.clone())),
            |(client, query)| async move {
                let Some(query) = query else {
                    return Ok(None);
                };
                let page = client.audit(&query).await?;
                let next = page.next_cursor.clone().map(|cursor| AuditQuery {
                    cursor: Some(cursor),
                    ..query
                });
                Ok(Some((page.items, (client, next))))
            },
        );
        pages
            .map_ok(|items| futures::stream::iter(items.into_iter().map(Ok)))
            .try_flatten()
    }

    /// Every call of the lineage tree rooted at `root_call_id`, oldest first (admin, viewer):
    /// `GET /v1/calls`.
    pub async fn calls(&self, root_call_id: &str) -> Result<Items<Call>> {
        if root_call_id.is_empty() {
            return Err(Error::InvalidArgument("a root call id is required".into()));
        }
        self.send_json(Request::get("/v1/calls".into()).query("root_call_id", root_call_id))
            .await
    }

    /// The JWKS of every signing key not retired, of both purposes (any key):
    /// `GET /v1/billing/export/pubkey`.
    pub async fn signing_keys(&self) -> Result<Jwks> {
        self.send_json(Request::get(crate::webhooks::JWKS_PATH.into()))
            .await
    }

    /// Makes a new signing key of `purpose` active (operator key; `None` rotates the
    /// card-signing key). The old key stays listed until retired. Not retried after a broken
    /// connection (a repeat would rotate again): `POST /v1/signing-keys/rotate`.
    pub async fn rotate_signing_key(
        &self,
        purpose: Option<SigningKeyPurpose>,
    ) -> Result<SigningKey> {
        let body = match purpose {
            Some(purpose) => json!({ "purpose": purpose }),
            None => json!({}),
        };
        self.send_json(Request::post("/v1/signing-keys/rotate".into(), body))
            .await
    }

    /// Drops a replaced signing key from the JWKS for good (operator key). The active key, or
    /// one replaced less than the signing-key cache lifetime ago, is `409`; retiring a retired
    /// key changes nothing: `POST /v1/signing-keys/{kid}/retire`.
    pub async fn retire_signing_key(&self, kid: &str) -> Result<RetiredSigningKey> {
        let path = format!("/v1/signing-keys/{}/retire", segment(kid)?);
        self.send_json(Request::post(path, json!({})).repeatable(true))
            .await
    }

    /// The caller's tenant's settings (admin, viewer): `GET /v1/tenant/settings`.
    pub async fn tenant_settings(&self) -> Result<TenantSettings> {
        self.send_json(Request::get("/v1/tenant/settings".into()))
            .await
    }

    /// Changes the caller's tenant's settings (admin; audited: `tenant.word_search.on`/`.off`,
    /// `tenant.call_tree`) and returns them: `PATCH /v1/tenant/settings`. A value out of its
    /// range is `Error::BadRequest`; a patch that changes nothing writes no audit entry.
    pub async fn update_tenant_settings(
        &self,
        patch: &TenantSettingsPatch,
    ) -> Result<TenantSettings> {
        let body = serde_json::to_value(patch).map_err(|error| Error::Decode(error.to_string()))?;
        let request = Request::new(reqwest::Method::PATCH, "/v1/tenant/settings".into()).body(body);
        self.send_json(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audit_query_sends_only_the_filters_given() {
        let query = AuditQuery {
            action: Some("agent.".into()),
            outcome: Some(AuditOutcome::Refused),
            limit: Some(2),
            ..AuditQuery::default()
        };
        assert_eq!(
            query.request().query,
            vec![
                ("action", "agent.".to_owned()),
                ("outcome", "refused".to_owned()),
                ("limit", "2".to_owned())
            ]
        );
    }

    #[test]
    fn a_purpose_and_a_patch_are_spelled_as_the_gateway_spells_them() {
        assert_eq!(
            json!({ "purpose": SigningKeyPurpose::WebhookSigning }),
            json!({"purpose": "webhook-signing"})
        );
        assert_eq!(
            serde_json::to_value(TenantSettingsPatch::default()).unwrap_or_default(),
            json!({})
        );
    }

    #[test]
    fn a_settings_patch_leaves_out_what_is_none_and_sends_null_to_clear_a_limit() {
        let patch = |patch: TenantSettingsPatch| serde_json::to_value(patch).unwrap_or_default();
        assert_eq!(
            patch(TenantSettingsPatch {
                max_call_depth: Some(8),
                refuse_cycles: Some(true),
                max_fan_out: Some(Some(20)),
                max_open_in_tree: Some(Some(100)),
                ..TenantSettingsPatch::default()
            }),
            json!({"max_call_depth": 8, "refuse_cycles": true, "max_fan_out": 20, "max_open_in_tree": 100})
        );
        assert_eq!(
            patch(TenantSettingsPatch {
                max_fan_out: Some(None),
                ..TenantSettingsPatch::default()
            }),
            json!({"max_fan_out": null}),
            "Some(None) clears the limit; the other fields are left out"
        );
        assert_eq!(
            patch(TenantSettingsPatch {
                word_search: Some(false),
                max_open_in_tree: Some(None),
                ..TenantSettingsPatch::default()
            }),
            json!({"word_search": false, "max_open_in_tree": null})
        );
    }

    #[test]
    fn settings_read_with_and_without_count_limits() {
        let read: TenantSettings = serde_json::from_value(json!({
            "tenant_id": "t", "word_search": true, "max_call_depth": 16,
            "refuse_cycles": false, "max_fan_out": null, "max_open_in_tree": 250
        }))
        .unwrap();
        assert_eq!(
            (
                read.max_call_depth,
                read.refuse_cycles,
                read.max_fan_out,
                read.max_open_in_tree
            ),
            (16, false, None, Some(250))
        );
    }
}
