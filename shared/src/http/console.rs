//! The console: its page and assets (built into the binary from `console/`), and its sessions.
//!
//! `POST /console/session` exchanges a member key (admin, member or viewer) for a session held
//! in an `HttpOnly`, `Secure`, `SameSite=Strict` cookie; the page then calls the API like any
//! client, with the cookie in place of the key and, on every change, the session's CSRF token.
//! `GET /console/session` tells a reloaded page who it is; `DELETE /console/session` signs out.

use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use serde_json::json;

use super::{json_object, only_fields, path_param, text_field, HandlerResult};
use crate::app::App;
use crate::domain::keys;
use crate::domain::{clock, session, Principal, TenantPrincipal};
use crate::error::{json_response, ApiError};
use crate::http::auth::session_token;
use crate::store::SessionRecord;

/// How long a console session lasts from sign-in; then the page asks for the key again.
pub const SESSION_SECONDS: u64 = 3600;

/// What the page may load and talk to: its own scripts, styles and API, nothing inline, nothing
/// from elsewhere, and no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// A file of `console/`, by the name it is served under, with its media type.
macro_rules! console_asset {
    ($name:literal, $content_type:literal) => {
        (
            $name,
            $content_type,
            include_str!(concat!("../../../console/", $name)),
        )
    };
}

/// The console's files, by the name they are served under.
const ASSETS: &[(&str, &str, &str)] = &[
    console_asset!("app.js", "text/javascript; charset=utf-8"),
    console_asset!("api.js", "text/javascript; charset=utf-8"),
    console_asset!("dom.js", "text/javascript; charset=utf-8"),
    console_asset!("pages.js", "text/javascript; charset=utf-8"),
    console_asset!("app.css", "text/css; charset=utf-8"),
];

const PAGE: &str = include_str!("../../../console/index.html");

/// A file of the console with the headers every one of them carries.
fn console_file(content_type: &'static str, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::Text(text.to_owned()));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    // A deploy replaces the files: the browser asks again (a 304 is not worth a second route).
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    response
}

/// `GET /console`: the page. Asked for as `/console/`, it sends the browser to `/console`
/// first: the page names its files relative to its own URL (`console/app.js`), which only
/// resolves from there, wherever a stage prefix puts it.
pub(crate) fn page(request: &Request) -> Response<Body> {
    if request.uri().path().ends_with('/') {
        let mut response = Response::new(Body::Empty);
        *response.status_mut() = StatusCode::PERMANENT_REDIRECT;
        response
            .headers_mut()
            .insert(LOCATION, HeaderValue::from_static("../console"));
        return response;
    }
    console_file("text/html; charset=utf-8", PAGE)
}

/// The console's page, as its route serves it.
pub(crate) async fn page_route(_: &App, request: Request) -> HandlerResult {
    Ok(page(&request))
}

/// A console asset, as its route serves it.
pub(crate) async fn asset_route(_: &App, request: Request) -> HandlerResult {
    asset(&request)
}

/// `GET /console/{asset}`: one of the console's scripts or styles.
pub(crate) fn asset(request: &Request) -> HandlerResult {
    let name = path_param(request, "asset")?;
    ASSETS
        .iter()
        .find(|(asset, _, _)| *asset == name)
        .map(|(_, content_type, text)| console_file(content_type, text))
        .ok_or_else(|| ApiError::NotFound("the console has no such file".into()))
}

/// Refuses a change made with the session cookie that does not carry the session's CSRF token.
/// Signing in (`signs_in`) is the exception: it carries a key, not the cookie.
pub(crate) fn refuse_change_without_csrf(
    signs_in: bool,
    request: &Request,
) -> Result<(), ApiError> {
    if signs_in || !session::is_change(request.method().as_str()) {
        return Ok(());
    }
    let Some(token) = session_token(request.headers()) else {
        return Ok(());
    };
    let sent = request
        .headers()
        .get(session::CSRF_HEADER)
        .and_then(|value| value.to_str().ok());
    if session::csrf_holds(&token, sent) {
        Ok(())
    } else {
        Err(ApiError::Forbidden(
            "a change made with the console's session must carry its X-CSRF-Token".into(),
        ))
    }
}

/// The member a session stands for, as the page shows it.
fn session_body(principal: &TenantPrincipal, token: &str, expires_at: u64) -> serde_json::Value {
    json!({
        "tenant_id": principal.tenant_id,
        "member_id": principal.member_id(),
        "role": principal.kind_name(),
        "csrf_token": session::csrf_token(token),
        "expires_at": clock::from_unix(expires_at),
    })
}

/// The member behind a key, or the refusal of a key that is not a member's.
fn member_only(principal: Principal) -> Result<TenantPrincipal, ApiError> {
    match principal {
        Principal::Tenant(member) if member.member_id().is_some() => Ok(member),
        _ => Err(ApiError::Forbidden(
            "the console signs in members (admin, member or viewer keys); agents and the \
             operator use their keys with the API"
                .into(),
        )),
    }
}

/// `POST /console/session` `{"key"}`: a session for a member key.
pub(crate) async fn sign_in(app: &App, request: Request) -> HandlerResult {
    // Another site's form can post text/plain without asking; JSON it cannot.
    let is_json = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(ApiError::UnsupportedMediaType(
            "sign in with a JSON body (Content-Type: application/json)".into(),
        ));
    }
    let body = json_object(&request)?;
    only_fields(&body, &["key"])?;
    let key = text_field(&body, "key", 200)?;
    let key_hash = keys::hash(&key);
    let member = member_only(app.principal_of_hash(key_hash.clone()).await?)?;
    let token = session::generate()
        .map_err(|error| ApiError::internal(format!("no randomness for a session: {error}")))?;
    let expires_at = clock::unix_now() + SESSION_SECONDS;
    app.store
        .put_session(
            &session::hash(&token),
            &SessionRecord {
                key_hash,
                expires_at,
            },
        )
        .await?;
    tracing::info!(tenant_id = %member.tenant_id, member_id = member.id(), "console session opened");
    let mut response = json_response(
        StatusCode::CREATED,
        &session_body(&member, &token, expires_at),
    );
    set_cookie(&mut response, &session::set_cookie(&token, SESSION_SECONDS))?;
    Ok(response)
}

/// `GET /console/session`: who the session cookie stands for, and its CSRF token.
pub(crate) async fn session(app: &App, request: Request) -> HandlerResult {
    let token = session_token(request.headers()).ok_or(ApiError::Unauthenticated)?;
    let session = app
        .live_session(&session::hash(&token))
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    let member = member_only(app.principal_of_key(session.key_hash).await?)?;
    Ok(json_response(
        StatusCode::OK,
        &session_body(&member, &token, session.expires_at),
    ))
}

/// `DELETE /console/session`: ends the session and has the browser drop its cookie.
pub(crate) async fn sign_out(app: &App, request: Request) -> HandlerResult {
    if let Some(token) = session_token(request.headers()) {
        let hash = session::hash(&token);
        app.store.delete_session(&hash).await?;
        app.forget_session(&hash);
    }
    let mut response = Response::new(Body::Empty);
    *response.status_mut() = StatusCode::NO_CONTENT;
    set_cookie(&mut response, &session::clear_cookie())?;
    Ok(response)
}

fn set_cookie(response: &mut Response<Body>, value: &str) -> Result<(), ApiError> {
    let value = HeaderValue::from_str(value).map_err(|error| {
        ApiError::internal(format!("a session cookie is not a header: {error}"))
    })?;
    response.headers_mut().append(SET_COOKIE, value);
    Ok(())
}
