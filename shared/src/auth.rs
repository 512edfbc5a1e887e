//! Authentication: the `Authorization: Bearer <key>` header to the principal behind the key,
//! through a short-lived per-process cache of key lookups (revocation drops the entry here and
//! reaches other processes within the cache's lifetime).

use crate::app::App;
use crate::cache::ExpiringCache;
use crate::domain::{keys, Principal, PrincipalKind, TenantPrincipal};
use crate::error::ApiError;
use crate::store::use_is_stale;

/// Remembers recent key lookups so a busy callee does not pay one read per request.
pub(crate) type KeyCache = ExpiringCache<Principal>;

/// The refusal of the operator's key on a route inside a tenant.
pub const OPERATOR_OUTSIDE_TENANTS: &str =
    "the operator key creates tenants and manages signing keys; use a key of the tenant";

/// The credential of an `Authorization: Bearer <key>` value; the scheme is matched in any case
/// (RFC 9110 §11.1), the key exactly.
fn bearer_credential(value: &str) -> Option<&str> {
    let (scheme, credential) = value.trim().split_once(char::is_whitespace)?;
    let credential = credential.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !credential.is_empty()).then_some(credential)
}

impl App {
    /// Authenticates the `Authorization: Bearer <key>` header.
    pub async fn authenticate(
        &self,
        headers: &lambda_http::http::HeaderMap,
    ) -> Result<Principal, ApiError> {
        let key = headers
            .get(lambda_http::http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_credential)
            .ok_or(ApiError::Unauthenticated)?;
        let hash = keys::hash(key);
        if let Some(operator) = &self.config.operator_key_hash {
            if keys::same_hash(operator, &hash) {
                return Ok(Principal::Operator);
            }
        }
        let ttl = self.config.key_cache_ttl;
        if let Some(principal) = self.key_cache.get(&hash, ttl) {
            return Ok(principal);
        }
        let record = self
            .store
            .lookup_key(&hash)
            .await?
            .ok_or(ApiError::Unauthenticated)?;
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
        headers: &lambda_http::http::HeaderMap,
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
    fn the_bearer_scheme_is_matched_in_any_case_and_the_key_exactly() {
        for value in [
            "Bearer k1",
            "bearer k1",
            "BEARER k1",
            "BeArEr   k1 ",
            "Bearer\tk1",
        ] {
            assert_eq!(bearer_credential(value), Some("k1"), "{value:?}");
        }
        for value in ["Basic k1", "Bearer", "Bearer   ", "Bearerk1", "k1"] {
            assert_eq!(bearer_credential(value), None, "{value:?}");
        }
        assert_eq!(bearer_credential("Bearer K1"), Some("K1"));
    }
}
