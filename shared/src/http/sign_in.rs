//! Signing in with an OpenID Connect token: the token's issuer and audience find the tenant that
//! trusts them, the issuer's published key checks it, and its subject, listed by that tenant,
//! signs in as an agent or a member, which then acts exactly as its key would.
//!
//! A refusal tells the caller "invalid token" and nothing more; its reason goes to the log with
//! the issuer the token named (and the subject, once the signature holds). The token itself is
//! never logged.

use crate::app::App;
use crate::domain::clock::unix_now;
use crate::domain::issuer::{SignsInAs, TrustedIssuer};
use crate::domain::{
    keys, AgentStatus, Principal, PrincipalKind, SignedInWith, TenantId, TenantPrincipal,
};
use crate::error::ApiError;
use crate::oidc::token::{self, TokenRefusal, Unchecked};
use crate::store::{StoreError, TrustClaim};

/// The most audiences of one token tried against the tenants' trust.
const MAX_AUDIENCES_TRIED: usize = 5;

/// Why a sign-in with a token did not give a principal.
enum SignInError {
    Refused(TokenRefusal),
    /// The subject's agent is paused: refused as its keys are.
    Paused,
    Store(StoreError),
}

impl From<TokenRefusal> for SignInError {
    fn from(refusal: TokenRefusal) -> Self {
        SignInError::Refused(refusal)
    }
}

impl From<StoreError> for SignInError {
    fn from(error: StoreError) -> Self {
        SignInError::Store(error)
    }
}

impl App {
    /// The principal a bearer token signs in as, through a per-process cache of tokens already
    /// checked (each kept no longer than the key cache's lifetime, nor past its `exp`).
    pub(crate) async fn principal_of_token(&self, token: &str) -> Result<Principal, ApiError> {
        let ttl = self.config.key_cache_ttl;
        let cache_key = keys::hash(token);
        if let Some((principal, expires_at)) = self.token_cache.get(&cache_key, ttl) {
            if expires_at > unix_now() {
                return Ok(principal);
            }
        }
        match self.sign_in(token).await {
            Ok((principal, expires_at)) => {
                if !ttl.is_zero() {
                    self.token_cache
                        .put(cache_key, (principal.clone(), expires_at));
                }
                Ok(principal)
            }
            Err(SignInError::Refused(_)) => Err(ApiError::InvalidToken),
            Err(SignInError::Paused) => Err(ApiError::Forbidden(
                "this token's agent is paused; it signs in again when the agent is active".into(),
            )),
            Err(SignInError::Store(error)) => Err(error.into()),
        }
    }

    /// Forgets the tokens this process checked and the pairs it found trusted (after a change of
    /// the trusted issuers; other processes see it within the key cache's lifetime).
    pub(crate) fn forget_tokens(&self) {
        self.token_cache.clear();
        self.trust_cache.clear();
    }

    /// Signs in with `token`, logging why not (with the issuer it names) when it is refused.
    async fn sign_in(&self, token: &str) -> Result<(Principal, u64), SignInError> {
        let unchecked = token::read_unchecked(token).inspect_err(|refusal| {
            tracing::info!(reason = refusal.reason(), "token refused");
        })?;
        let signed_in = self.sign_in_as_claimed(token, &unchecked).await;
        if let Err(SignInError::Refused(refusal)) = &signed_in {
            tracing::info!(reason = refusal.reason(), issuer = %unchecked.issuer, "token refused");
        }
        signed_in
    }

    async fn sign_in_as_claimed(
        &self,
        token: &str,
        unchecked: &Unchecked,
    ) -> Result<(Principal, u64), SignInError> {
        let (claim, issuer) = self.trusted_issuer(unchecked).await?;
        let key = match self
            .oidc
            .key(&issuer.issuer, unchecked.key_id.as_deref())
            .await
        {
            Ok(Some(key)) => key,
            Ok(None) => return Err(TokenRefusal::UnknownKey.into()),
            Err(error) => {
                tracing::warn!(issuer = %issuer.issuer, error = %error, "an issuer's keys could not be read");
                return Err(TokenRefusal::IssuerUnreachable.into());
            }
        };
        let now = unix_now();
        let checked = token::check(
            token,
            unchecked,
            &key,
            &issuer.issuer,
            &issuer.audience,
            now,
        )?;
        tracing::info!(
            issuer = %issuer.issuer,
            subject = %checked.subject,
            "token checked"
        );
        let signs_in_as = issuer
            .signs_in_as(&checked.subject)
            .ok_or(TokenRefusal::UnknownSubject)?;
        let kind = self.principal_kind(&claim.tenant_id, signs_in_as).await?;
        let principal = Principal::Tenant(TenantPrincipal {
            tenant_id: claim.tenant_id,
            kind,
            signed_in_with: Some(SignedInWith {
                issuer: issuer.issuer,
                subject: checked.subject,
            }),
        });
        Ok((principal, checked.expires_at))
    }

    /// The tenant that trusts the token's issuer for one of its audiences, and that issuer.
    async fn trusted_issuer(
        &self,
        unchecked: &Unchecked,
    ) -> Result<(TrustClaim, TrustedIssuer), SignInError> {
        for audience in unchecked.audiences.iter().take(MAX_AUDIENCES_TRIED) {
            let Some(claim) = self.trust_claim(&unchecked.issuer, audience).await? else {
                continue;
            };
            let issuers = self.store.tenant_issuers(&claim.tenant_id).await?;
            if let Some(issuer) = issuers
                .issuers
                .into_iter()
                .find(|issuer| issuer.id == claim.issuer_id)
            {
                return Ok((claim, issuer));
            }
        }
        Err(TokenRefusal::UntrustedIssuer.into())
    }

    /// The claim on (`issuer`, `audience`), through a per-process cache as long as the key
    /// cache's (which holds "no tenant" too, so a flood of tokens naming an untrusted issuer
    /// costs one read per pair and process).
    async fn trust_claim(
        &self,
        issuer: &str,
        audience: &str,
    ) -> Result<Option<TrustClaim>, StoreError> {
        let ttl = self.config.key_cache_ttl;
        let cache_key = format!("{}\n{issuer}\n{audience}", issuer.len());
        if let Some(claim) = self.trust_cache.get(&cache_key, ttl) {
            return Ok(claim);
        }
        let claim = self.store.trust_claim(issuer, audience).await?;
        if !ttl.is_zero() {
            self.trust_cache.put(cache_key, claim.clone());
        }
        Ok(claim)
    }

    /// What a listed subject signs in as: an active agent of the tenant, or a member with its
    /// role.
    async fn principal_kind(
        &self,
        tenant_id: &TenantId,
        signs_in_as: &SignsInAs,
    ) -> Result<PrincipalKind, SignInError> {
        match signs_in_as {
            SignsInAs::Agent(agent_id) => {
                let agent = self
                    .store
                    .recent_agent(agent_id, self.config.key_cache_ttl)
                    .await?
                    .filter(|agent| agent.tenant_id == *tenant_id)
                    .ok_or(TokenRefusal::PrincipalGone)?;
                match agent.status {
                    AgentStatus::Active => Ok(PrincipalKind::Agent { agent_id: agent.id }),
                    AgentStatus::Paused => Err(SignInError::Paused),
                    AgentStatus::Retired => Err(TokenRefusal::PrincipalGone.into()),
                }
            }
            SignsInAs::Member(member_id) => {
                let member = self
                    .store
                    .find_member(tenant_id, member_id)
                    .await?
                    .ok_or(TokenRefusal::PrincipalGone)?;
                let member_id = member.member_id;
                match member.role.as_str() {
                    "admin" => Ok(PrincipalKind::Admin { member_id }),
                    "viewer" => Ok(PrincipalKind::Viewer { member_id }),
                    _ => Ok(PrincipalKind::Member { member_id }),
                }
            }
        }
    }
}
