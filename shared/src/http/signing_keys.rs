//! The signing keys' routes: the JWKS (with any key, and without one at
//! `/.well-known/jwks.json`) and, for the operator, rotation and retirement of the card and
//! webhook keys.

use lambda_http::{Body, Request};
use serde_json::{json, Value};

use super::cards::{cacheable, cacheable_as};
use super::{json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::card::jwk;
use crate::domain::signing::{may_retire, KeyPurpose, RetireRefusal};
use crate::domain::Principal;
use crate::error::ApiError;
use crate::store::SigningKeyRecord;

/// The `Cache-Control` of the public JWKS (`GET /.well-known/jwks.json`): any cache may keep it,
/// shared ones included (it is the same for every reader and holds public keys only), but must
/// revalidate it before each use (`no-cache`, a `max-age` of zero; the ETag makes that a `304`).
///
/// A rotated key must reach receivers before it signs, and rotation gives it no lead time to
/// cache through: `POST /v1/signing-keys/rotate` publishes the new key and makes it the active
/// one in the same write, and a warm function signs with it as soon as the key it holds is older
/// than `FORGEBENCH_SIGNING_KEY_CACHE_SECONDS`, which may be the moment after the rotation. A
/// copy kept fresh for N seconds could lack the key that signed a delivery for up to N seconds
/// after a rotation, and a receiver that asks again because no key it holds verifies a signature
/// would be handed that same copy. A `max-age` above zero is safe only once rotation publishes
/// the next key at least that long before it first signs.
pub const PUBLIC_JWKS_CACHE_CONTROL: &str = "public, no-cache";

/// `GET /v1/billing/export/pubkey` (any key): the JWKS of every signing key not retired, card
/// and webhook keys alike, each with its `purpose`.
pub async fn pubkey(app: &App, request: Request) -> HandlerResult {
    app.authenticate(request.headers()).await?;
    Ok(cacheable(&request, &published_keys(app).await?))
}

/// `GET /.well-known/jwks.json` (no key): the JWKS of `GET /v1/billing/export/pubkey`, the
/// same set for everyone, where receivers and Standard Webhooks tooling look for it; sent with
/// [`PUBLIC_JWKS_CACHE_CONTROL`] and an ETag.
pub async fn public_jwks(app: &App, request: Request) -> HandlerResult {
    let jwks = published_keys(app).await?;
    Ok(cacheable_as(&request, &jwks, PUBLIC_JWKS_CACHE_CONTROL))
}

/// The JWKS of every signing key not retired, of both purposes: public keys only (each JWK is
/// built from the stored public half; a sealed seed is never opened or sent).
async fn published_keys(app: &App) -> Result<Value, ApiError> {
    let mut keys = Vec::new();
    for purpose in KeyPurpose::ALL {
        // Makes the first key of each purpose if there is none yet, so a receiver that reads
        // the set before the first card or delivery already holds the key that will sign it.
        app.signing_cache(purpose)
            .ensure(&app.store, &app.vault)
            .await?;
        for record in app.store.signing_keys(purpose).await? {
            if record.retired_at.is_none() {
                keys.push(jwk(&record.kid, &public_key(&record)?, purpose.name()));
            }
        }
    }
    Ok(json!({ "keys": keys }))
}

fn public_key(record: &SigningKeyRecord) -> Result<ed25519_dalek::VerifyingKey, ApiError> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&record.public_x)
        .map_err(ApiError::internal)?;
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|_| ApiError::internal("a stored public key is not 32 bytes"))?;
    ed25519_dalek::VerifyingKey::from_bytes(&bytes).map_err(ApiError::internal)
}

fn operator_only(principal: &Principal) -> Result<(), ApiError> {
    if *principal != Principal::Operator {
        return Err(ApiError::Forbidden(
            "only the operator manages signing keys".into(),
        ));
    }
    Ok(())
}

/// The `purpose` of a rotate request: `card-signing` when the body is empty or omits it.
fn rotate_purpose(request: &Request) -> Result<KeyPurpose, ApiError> {
    let empty = match request.body() {
        Body::Empty => true,
        Body::Text(text) => text.trim().is_empty(),
        Body::Binary(bytes) => bytes.iter().all(u8::is_ascii_whitespace),
        _ => true,
    };
    if empty {
        return Ok(KeyPurpose::Cards);
    }
    let body = json_object(request)?;
    only_fields(&body, &["purpose"])?;
    match body.get("purpose") {
        None | Some(Value::Null) => Ok(KeyPurpose::Cards),
        Some(Value::String(text)) => KeyPurpose::parse(text).ok_or_else(|| {
            ApiError::InvalidRequest("purpose is card-signing or webhook-signing".into())
        }),
        Some(_) => Err(ApiError::InvalidRequest(
            "purpose is card-signing or webhook-signing".into(),
        )),
    }
}

/// `POST /v1/signing-keys/rotate` `{purpose?}` (operator): a new active key of that purpose
/// (cards by default); old public keys stay listed until retired.
pub async fn rotate(app: &App, request: Request) -> HandlerResult {
    operator_only(&app.authenticate(request.headers()).await?)?;
    let purpose = rotate_purpose(&request)?;
    let kid = app
        .signing_cache(purpose)
        .rotate(&app.store, &app.vault)
        .await?;
    ok(&json!({ "kid": kid, "purpose": purpose.name() }))
}

/// The purpose of key `kid` and every key of that purpose (oldest first), if it exists.
async fn find_key(
    app: &App,
    kid: &str,
) -> Result<Option<(KeyPurpose, Vec<SigningKeyRecord>)>, ApiError> {
    for purpose in KeyPurpose::ALL {
        let records = app.store.signing_keys(purpose).await?;
        if records.iter().any(|record| record.kid == kid) {
            return Ok(Some((purpose, records)));
        }
    }
    Ok(None)
}

/// `POST /v1/signing-keys/{kid}/retire` (operator): drops a replaced key from the JWKS, once no
/// warm process can still sign with it. The active key cannot be retired; retiring a retired
/// key changes nothing.
pub async fn retire(app: &App, request: Request) -> HandlerResult {
    operator_only(&app.authenticate(request.headers()).await?)?;
    let kid = path_param(&request, "kid")?;
    let (purpose, records) = find_key(app, &kid)
        .await?
        .ok_or_else(|| ApiError::NotFound("no signing key has this kid".into()))?;
    let position = records.iter().position(|record| record.kid == kid);
    let record = position
        .map(|at| &records[at])
        .ok_or_else(|| ApiError::internal(format!("signing key {kid} listed but not found")))?;
    let done = json!({"kid": kid, "purpose": purpose.name(), "retired": true});
    if record.retired_at.is_some() {
        return ok(&done);
    }
    let replaced_at = position
        .and_then(|at| records.get(at + 1))
        .map(|successor| successor.created_at.as_str());
    let lifetime = app.config.signing_key_lifetime;
    may_retire(replaced_at, time::OffsetDateTime::now_utc(), lifetime).map_err(|refusal| {
        ApiError::Conflict(match refusal {
            RetireRefusal::Active => "the active key cannot be retired; rotate first".into(),
            RetireRefusal::StillCached { until } => {
                format!("warm functions may sign with this key until {until}; retire it after that")
            }
        })
    })?;
    if !app.store.retire_signing_key(purpose, &kid).await? {
        return Err(ApiError::Conflict(
            "the signing keys changed meanwhile; retry".into(),
        ));
    }
    tracing::info!(kid = %kid, purpose = purpose.name(), "signing key retired");
    ok(&done)
}
