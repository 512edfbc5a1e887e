//! Signing keys: Ed25519 keys whose 32-byte seeds are stored sealed by KMS (no emulator signs
//! Ed25519 inside KMS, so KMS protects the key and the process signs). One set per purpose
//! (cards, push deliveries), each with its own active key and KMS encryption context. A key is
//! made on first use and rotated by the operator; a process keeps the active key it opened for at
//! most its cache lifetime, so a rotation reaches every warm process within that bound.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use crate::domain::clock;
use crate::domain::signing::KeyPurpose;
use crate::store::{SigningKeyRecord, Store, StoreError};
use crate::vault::{Vault, VaultError};

/// The default of `FORGEBENCH_SIGNING_KEY_CACHE_SECONDS`: a rotation reaches every warm
/// process within five minutes.
pub const DEFAULT_KEY_LIFETIME: Duration = Duration::from_secs(300);

/// What can go wrong finding, making or opening a signing key.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Vault(#[from] VaultError),
    #[error("no randomness for a signing key: {0}")]
    NoRandomness(getrandom::Error),
    /// A stored key is not what this code writes (missing, retired while active, wrong length).
    #[error("signing key store is inconsistent: {0}")]
    Inconsistent(String),
    /// Other processes kept changing the active key while this one looked for it.
    #[error("the active signing key kept changing")]
    Contended,
    /// The active key changed between reading it and replacing it: the rotation did not happen.
    #[error("the signing key changed meanwhile; retry")]
    Changed,
}

/// The active key as this process last saw it.
struct Cached {
    kid: String,
    key: SigningKey,
    /// When the store last said this is the active key.
    checked: Instant,
}

/// The active key of one purpose, cached for at most `lifetime` between looks at the store.
pub struct SigningCache {
    purpose: KeyPurpose,
    lifetime: Duration,
    active: Mutex<Option<Cached>>,
}

fn context(purpose: KeyPurpose, kid: &str) -> [(&str, &str); 2] {
    [("purpose", purpose.name()), ("kid", kid)]
}

async fn new_record(
    purpose: KeyPurpose,
    vault: &Vault,
) -> Result<(SigningKeyRecord, SigningKey), SigningError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(SigningError::NoRandomness)?;
    let key = SigningKey::from_bytes(&seed);
    let public = key.verifying_key();
    let kid = hex::encode(&Sha256::digest(public.as_bytes())[..8]);
    let sealed_seed = vault.seal_bytes(&context(purpose, &kid), &seed).await?;
    Ok((
        SigningKeyRecord {
            kid,
            public_x: URL_SAFE_NO_PAD.encode(public.as_bytes()),
            sealed_seed,
            created_at: clock::now(),
            retired_at: None,
        },
        key,
    ))
}

async fn open(
    purpose: KeyPurpose,
    vault: &Vault,
    record: &SigningKeyRecord,
) -> Result<SigningKey, SigningError> {
    let seed = vault
        .unseal_bytes(&context(purpose, &record.kid), &record.sealed_seed)
        .await?;
    let seed: [u8; 32] = seed
        .try_into()
        .map_err(|_| SigningError::Inconsistent("a sealed signing seed is not 32 bytes".into()))?;
    Ok(SigningKey::from_bytes(&seed))
}

impl SigningCache {
    pub fn new(purpose: KeyPurpose, lifetime: Duration) -> SigningCache {
        SigningCache {
            purpose,
            lifetime,
            active: Mutex::default(),
        }
    }

    pub fn purpose(&self) -> KeyPurpose {
        self.purpose
    }

    /// The active key: from this process's cache while younger than the lifetime, else as the
    /// store names it now (opened with KMS only when it changed), else made now.
    pub async fn active(
        &self,
        store: &Store,
        vault: &Vault,
    ) -> Result<(String, SigningKey), SigningError> {
        let mut cached = self.active.lock().await;
        if let Some(found) = cached
            .as_ref()
            .filter(|found| found.checked.elapsed() < self.lifetime)
        {
            return Ok((found.kid.clone(), found.key.clone()));
        }
        let (kid, key) = self.load(store, vault, cached.as_ref()).await?;
        *cached = Some(Cached {
            kid: kid.clone(),
            key: key.clone(),
            checked: Instant::now(),
        });
        Ok((kid, key))
    }

    /// Reads the active pointer; reuses `current` when it still names it, opens the named key
    /// otherwise, and makes the first key when there is none.
    async fn load(
        &self,
        store: &Store,
        vault: &Vault,
        current: Option<&Cached>,
    ) -> Result<(String, SigningKey), SigningError> {
        for _ in 0..3 {
            if let Some(kid) = store.active_signing_kid(self.purpose).await? {
                if let Some(current) = current.filter(|current| current.kid == kid) {
                    return Ok((kid, current.key.clone()));
                }
                let record = store
                    .signing_key(self.purpose, &kid)
                    .await?
                    .filter(|record| record.retired_at.is_none())
                    .ok_or_else(|| {
                        SigningError::Inconsistent(format!(
                            "the active signing key {kid} is missing or retired"
                        ))
                    })?;
                return Ok((kid, open(self.purpose, vault, &record).await?));
            }
            if let Some(made) = self.make_first(store, vault).await? {
                return Ok(made);
            }
            // Another process made the first key at the same moment: use theirs.
        }
        Err(SigningError::Contended)
    }

    /// Makes the first key of this purpose; `None` when another process made one meanwhile.
    async fn make_first(
        &self,
        store: &Store,
        vault: &Vault,
    ) -> Result<Option<(String, SigningKey)>, SigningError> {
        let (record, key) = new_record(self.purpose, vault).await?;
        if !store
            .activate_signing_key(self.purpose, &record, None)
            .await?
        {
            return Ok(None);
        }
        tracing::info!(kid = %record.kid, purpose = self.purpose.name(), "signing key created");
        Ok(Some((record.kid, key)))
    }

    /// Makes sure this purpose has a key, without opening it (the JWKS route publishes keys
    /// but never signs, so it needs no KMS `Decrypt`).
    pub async fn ensure(&self, store: &Store, vault: &Vault) -> Result<(), SigningError> {
        for _ in 0..3 {
            if store.active_signing_kid(self.purpose).await?.is_some()
                || self.make_first(store, vault).await?.is_some()
            {
                return Ok(());
            }
        }
        Err(SigningError::Contended)
    }

    /// Makes a new key the active one; the old public key stays listed until retired.
    pub async fn rotate(&self, store: &Store, vault: &Vault) -> Result<String, SigningError> {
        let current = store.active_signing_kid(self.purpose).await?;
        let (record, key) = new_record(self.purpose, vault).await?;
        if !store
            .activate_signing_key(self.purpose, &record, current.as_deref())
            .await?
        {
            return Err(SigningError::Changed);
        }
        tracing::info!(kid = %record.kid, purpose = self.purpose.name(), "signing key rotated");
        *self.active.lock().await = Some(Cached {
            kid: record.kid.clone(),
            key,
            checked: Instant::now(),
        });
        Ok(record.kid)
    }
}
