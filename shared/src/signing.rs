//! The card-signing key: an Ed25519 key whose 32-byte seed is stored sealed by KMS (no emulator
//! signs Ed25519 inside KMS, so KMS protects the key and the process signs). Made on first use,
//! opened once per cold start, rotated by the operator; every public key stays listed.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use crate::domain::clock;
use crate::error::ApiError;
use crate::store::{SigningKeyRecord, Store};
use crate::vault::Vault;

/// The active key, kept for the life of the process once opened.
#[derive(Default)]
pub struct SigningCache {
    active: Mutex<Option<(String, SigningKey)>>,
}

fn context(kid: &str) -> [(&str, &str); 2] {
    [("purpose", "card-signing"), ("kid", kid)]
}

async fn new_record(vault: &Vault) -> Result<(SigningKeyRecord, SigningKey), ApiError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|_| ApiError::Internal)?;
    let key = SigningKey::from_bytes(&seed);
    let public = key.verifying_key();
    let kid = hex::encode(&Sha256::digest(public.as_bytes())[..8]);
    let sealed_seed = vault.seal_bytes(&context(&kid), &seed).await?;
    Ok((
        SigningKeyRecord {
            kid,
            public_x: URL_SAFE_NO_PAD.encode(public.as_bytes()),
            sealed_seed,
            created_at: clock::now(),
        },
        key,
    ))
}

async fn open(vault: &Vault, record: &SigningKeyRecord) -> Result<SigningKey, ApiError> {
    let seed = vault
        .unseal_bytes(&context(&record.kid), &record.sealed_seed)
        .await?;
    let seed: [u8; 32] = seed.try_into().map_err(|_| ApiError::Internal)?;
    Ok(SigningKey::from_bytes(&seed))
}

impl SigningCache {
    /// The active key: from this process's cache, else opened from the store, else made now.
    pub async fn active(
        &self,
        store: &Store,
        vault: &Vault,
    ) -> Result<(String, SigningKey), ApiError> {
        let mut active = self.active.lock().await;
        if let Some(found) = active.as_ref() {
            return Ok(found.clone());
        }
        for _ in 0..3 {
            if let Some(kid) = store.active_signing_kid().await? {
                let records = store.signing_keys().await?;
                let record = records
                    .iter()
                    .find(|record| record.kid == kid)
                    .ok_or(ApiError::Internal)?;
                let key = open(vault, record).await?;
                *active = Some((kid.clone(), key.clone()));
                return Ok((kid, key));
            }
            let (record, key) = new_record(vault).await?;
            if store.activate_signing_key(&record, None).await? {
                tracing::info!(kid = %record.kid, "card-signing key created");
                *active = Some((record.kid.clone(), key.clone()));
                return Ok((record.kid, key));
            }
            // Another process made the first key at the same moment: use theirs.
        }
        Err(ApiError::Unavailable)
    }

    /// Makes a new key the active one; the old public key stays listed.
    pub async fn rotate(&self, store: &Store, vault: &Vault) -> Result<String, ApiError> {
        let current = store.active_signing_kid().await?;
        let (record, key) = new_record(vault).await?;
        if !store
            .activate_signing_key(&record, current.as_deref())
            .await?
        {
            return Err(ApiError::Conflict(
                "the signing key changed meanwhile; retry".into(),
            ));
        }
        tracing::info!(kid = %record.kid, "card-signing key rotated");
        *self.active.lock().await = Some((record.kid.clone(), key));
        Ok(record.kid)
    }
}
