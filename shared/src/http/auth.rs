//! Authentication: the `Authorization: Bearer <credential>` header (a key, or an OpenID Connect
//! token: `sign_in.rs`), or else the console's session
//! cookie, to the principal behind the key, through short-lived per-process caches of key and
//! session lookups (revocation and sign-out drop the entry here and reach other processes within
//! the cache's lifetime).

use lambda_http::http::header::{AUTHORIZATION, COOKIE};
use lambda_http::http::HeaderMap;

use crate::app::App;
use crate::domain::{keys, session, Principal, PrincipalKind, TenantPrincipal};
use crate::error::ApiError;
use crate::oidc::token::looks_like_jwt;
use crate::store::{use_is_stale, SessionRecord};

/// The console session token of a request that carries no `Authorization` header.
pub fn session_token(headers: &HeaderMap) -> Option<String> {
    if headers.contains_key(AUTHORIZATION) {
        return None;
    }
    session::token_of(
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok()),
    )
}

/// The headers [`App::authenticate`] reads from `headers` (`Authorization` and every
/// `Cookie`): what a long request keeps to authenticate its caller again as it goes, whichever
/// way the caller signed in.
pub fn credentials_of(headers: &HeaderMap) -> HeaderMap {
    let mut credentials = HeaderMap::new();
    for name in [AUTHORIZATION, COOKIE] {
        for value in headers.get_all(&name) {
            credentials.append(name.clone(), value.clone());
        }
    }
    credentials
}

/// The refusal of the operator's key on a route inside a tenant.
pub const OPERATOR_OUTSIDE_TENANTS: &str =
    "the operator key creates tenants and manages signing keys; use a key of the tenant";

/// The credential of an `Authorization` value in the one form taken: the scheme `Bearer`, one
/// space, then a credential in RFC 6750's `b64token` grammar, with nothing before or after. Any
/// other form is refused rather than read leniently, so that one credential has one header
/// value: the value the WAF counts per key is the credential itself (docs/security.md).
pub fn bearer_credential(value: &str) -> Option<&str> {
    let credential = value.strip_prefix("Bearer ")?;
    let body = credential.trim_end_matches('=');
    let b64token = !body.is_empty()
        && body
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-._~+/".contains(&byte));
    b64token.then_some(credential)
}

/// How long a key found to be no key is remembered as unknown, so a flood of made-up keys costs
/// one lookup per key and process. A key the gateway issues is a fresh random value that was
/// never looked up before, so a new key is never taken for an unknown one.
pub const UNKNOWN_KEY_TTL: std::time::Duration = std::time::Duration::from_secs(30);

impl App {
    /// Authenticates the `Authorization: Bearer <key>` header or, without one, the console's
    /// session cookie (a member key's session; the key is authenticated again, so a revoked key
    /// ends its sessions).
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, ApiError> {
        if headers.contains_key(AUTHORIZATION) {
            let credential = headers
                .get(AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(bearer_credential)
                .ok_or(ApiError::CredentialForm)?;
            if looks_like_jwt(credential) {
                return self.principal_of_token(credential).await;
            }
            return self.principal_of_hash(keys::hash(credential)).await;
        }
        let token = session_token(headers).ok_or(ApiError::Unauthenticated)?;
        let session = self
            .live_session(&session::hash(&token))
            .await?
            .ok_or(ApiError::Unauthenticated)?;
        self.principal_of_key(session.key_hash).await
    }

    /// The session under a token's hash, while it lasts.
    pub(crate) async fn live_session(&self, hash: &str) -> Result<Option<SessionRecord>, ApiError> {
        let ttl = self.config.key_cache_ttl;
        let cached = self.session_cache.get(hash, ttl);
        let session = match cached {
            Some(session) => Some(session),
            None => {
                let session = self.store.session(hash).await?;
                if let (Some(session), false) = (&session, ttl.is_zero()) {
                    self.session_cache.put(hash.to_owned(), session.clone());
                }
                session
            }
        };
        let now = crate::domain::clock::unix_now();
        Ok(session.filter(|session| session.expires_at > now))
    }

    /// Drops a session from this process's cache (after signing out).
    pub(crate) fn forget_session(&self, hash: &str) {
        self.session_cache.forget(hash);
    }

    /// The principal behind a key's hash: the operator's, or a key of a tenant.
    pub(crate) async fn principal_of_hash(&self, hash: String) -> Result<Principal, ApiError> {
        if let Some(operator) = &self.config.operator_key_hash {
            if keys::same_hash(operator, &hash) {
                return Ok(Principal::Operator);
            }
        }
        self.principal_of_key(hash).await
    }

    /// The principal behind the hash of a tenant's key.
    pub(crate) async fn principal_of_key(&self, hash: String) -> Result<Principal, ApiError> {
        let ttl = self.config.key_cache_ttl;
        if let Some(principal) = self.key_cache.get(&hash, ttl) {
            return Ok(principal);
        }
        if self.unknown_keys.get(&hash, UNKNOWN_KEY_TTL).is_some() {
            return Err(ApiError::Unauthenticated);
        }
        let Some(record) = self.store.lookup_key(&hash).await? else {
            self.unknown_keys.put(hash, ());
            return Err(ApiError::Unauthenticated);
        };
        if record.suspended {
            return Err(ApiError::Forbidden(
                "this key's agent is paused; its keys work again when it is active".into(),
            ));
        }
        if use_is_stale(record.last_used_at.as_deref()) {
            // Bookkeeping only: a failure here must not refuse the request.
            if let Err(error) = self.store.note_key_use(&hash).await {
                tracing::warn!(error = %error, "could not note a key's use");
            }
        }
        let id = record.principal_id;
        let kind = match record.principal_kind.as_str() {
            "admin" => PrincipalKind::Admin {
                member_id: id.into(),
            },
            "member" => PrincipalKind::Member {
                member_id: id.into(),
            },
            "viewer" => PrincipalKind::Viewer {
                member_id: id.into(),
            },
            "agent" => PrincipalKind::Agent {
                agent_id: id.into(),
            },
            other => {
                tracing::error!(kind = other, "key record of unknown kind");
                return Err(ApiError::internal(format!(
                    "key record of unknown kind {other:?}"
                )));
            }
        };
        let principal = Principal::Tenant(TenantPrincipal {
            tenant_id: record.tenant_id,
            kind,
            signed_in_with: None,
        });
        if !ttl.is_zero() {
            self.key_cache.put(hash, principal.clone());
        }
        Ok(principal)
    }

    /// Authenticates a key that must belong to a tenant: the operator's key acts on tenants, not
    /// inside one, and is refused here.
    pub async fn authenticate_in_tenant(
        &self,
        headers: &HeaderMap,
    ) -> Result<TenantPrincipal, ApiError> {
        match self.authenticate(headers).await? {
            Principal::Tenant(principal) => {
                let span = tracing::Span::current();
                span.record("tenant_id", principal.tenant_id.as_str());
                span.record("principal", principal.kind_name());
                span.record("principal_id", principal.id());
                Ok(principal)
            }
            Principal::Operator => Err(ApiError::Forbidden(OPERATOR_OUTSIDE_TENANTS.into())),
        }
    }

    /// Drops a key from this process's cache (after revoking it).
    pub fn forget_key(&self, hash: &str) {
        self.key_cache.forget(hash);
    }
}

#[cfg(test)]
mod tests {
    use super::bearer_credential;

    #[test]
    fn only_the_canonical_bearer_form_is_taken() {
        for (value, credential) in [
            ("Bearer k1", "k1"),
            ("Bearer fb_agt_0123abc", "fb_agt_0123abc"),
            ("Bearer a.b-c_d~e+f/g==", "a.b-c_d~e+f/g=="),
            ("Bearer K1", "K1"),
        ] {
            assert_eq!(bearer_credential(value), Some(credential), "{value:?}");
        }
        for value in [
            "bearer k1",
            "BEARER k1",
            "Bearer  k1",
            "Bearer\tk1",
            " Bearer k1",
            "Bearer k1 ",
            "Bearer k1 k2",
            "Bearer a=b",
            "Bearer =",
            "Basic k1",
            "Bearer",
            "Bearer ",
            "Bearerk1",
            "k1",
        ] {
            assert_eq!(bearer_credential(value), None, "{value:?}");
        }
    }
}
