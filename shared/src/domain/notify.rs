//! A2A push notification configs: a task's caller names its own webhook, which receives the
//! task's update events (its change log, [`super::events`]) from the moment the config exists.
//!
//! The request is parsed by hand, like every client input, so each refusal names its field. The
//! credentials are a secret: they are sealed before they are stored, and no answer or log line
//! ever shows them (a config is shown with its authentication scheme only).

use super::clock::Timestamp;
use serde_json::{json, Map, Value};

use super::ids::{TaskId, TenantId};
use super::Invalid;

/// The most configs one task may hold.
pub const MAX_CONFIGS_PER_TASK: u64 = 5;
/// The longest config id, token and scheme a client may give.
pub const MAX_CONFIG_ID_CHARS: usize = 64;
pub const MAX_TOKEN_CHARS: usize = 1024;
pub const MAX_SCHEME_CHARS: usize = 64;
pub const MAX_CREDENTIALS_CHARS: usize = 4096;

/// A config as the client asked for it, checked, with its credentials still in the clear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyRequest {
    /// The client's own id for it, if it gave one (else one is made).
    pub id: Option<String>,
    pub url: String,
    pub token: Option<String>,
    /// `Authorization: {scheme} {credentials}` on every notification.
    pub authentication: Option<(String, String)>,
}

/// A config as stored: the credentials sealed, and how far its delivery got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    pub tenant_id: TenantId,
    pub task_id: TaskId,
    pub id: String,
    pub url: String,
    /// The token in the clear, once opened (or as a config stored before tokens were sealed
    /// holds it): what is shown back and sent. Never stored.
    pub token: Option<String>,
    /// The token as stored, sealed like the credentials.
    pub sealed_token: Option<String>,
    pub scheme: Option<String>,
    pub sealed_credentials: Option<String>,
    pub created_at: Timestamp,
    /// The number of the last task event delivered (or skipped); the next to send is the one
    /// after it. Starts at the task's event count when the config is made.
    pub delivered: u64,
    /// Attempts spent on the event after `delivered`.
    pub attempts: u64,
    /// When the task (and so the config) expires, seconds since the epoch.
    pub expires_at: Option<u64>,
}

impl NotifyConfig {
    /// The `webhook-id` of this config's event `number`: `{taskId}:{configId}:{number}`. The
    /// task id is the gate's own and unique, so no other task's notification (another caller's,
    /// another tenant's, with the same config id) ever shares it; the same on every retry of the
    /// event. Signed with the body, it is also what binds a notification to its destination: the
    /// config of one task, made by that task's caller.
    pub fn notification_id(&self, number: u64) -> String {
        format!("{}:{}:{number}", self.task_id, self.id)
    }

    /// The config as A2A shows it (`TaskPushNotificationConfig`): never the credentials.
    pub fn to_a2a(&self) -> Value {
        let mut shown = json!({
            "id": self.id,
            "taskId": self.task_id,
            "url": self.url,
        });
        if let Some(token) = &self.token {
            shown["token"] = Value::String(token.clone());
        }
        if let Some(scheme) = &self.scheme {
            shown["authentication"] = json!({ "scheme": scheme });
        }
        shown
    }
}

/// Fields of a `TaskPushNotificationConfig` the gateway reads; `tenant` is accepted and ignored
/// (the caller's key names its tenant).
const CONFIG_FIELDS: [&str; 6] = ["tenant", "id", "taskId", "url", "token", "authentication"];

impl NotifyRequest {
    /// Parses a `TaskPushNotificationConfig` (`at` names it in errors). Empty strings count as
    /// absent, as in proto JSON.
    pub fn parse(value: &Value, at: &str) -> Result<NotifyRequest, Invalid> {
        let object = value
            .as_object()
            .ok_or_else(|| Invalid(format!("{at} must be an object")))?;
        if let Some(field) = object
            .keys()
            .find(|key| !CONFIG_FIELDS.contains(&key.as_str()))
        {
            return Err(Invalid(format!(
                "{at}.{field} is not a push notification config field"
            )));
        }
        // The task is the one the request names elsewhere (the path, or the task the message
        // opens); this field is only held to its type.
        if object
            .get("taskId")
            .is_some_and(|task| !matches!(task, Value::Null | Value::String(_)))
        {
            return Err(Invalid(format!("{at}.taskId must be a string")));
        }
        let id = text(object, "id", at, MAX_CONFIG_ID_CHARS)?;
        if let Some(id) = &id {
            if !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            {
                return Err(Invalid(format!(
                    "{at}.id may hold letters, digits, '-', '_' and '.' only"
                )));
            }
        }
        let url = text(object, "url", at, usize::MAX)?
            .ok_or_else(|| Invalid(format!("{at}.url is required")))?;
        let token = header_text(object, "token", at, MAX_TOKEN_CHARS)?;
        let authentication = match object.get("authentication") {
            None | Some(Value::Null) => None,
            Some(value) => authentication(value, &format!("{at}.authentication"))?,
        };
        Ok(NotifyRequest {
            id,
            url,
            token,
            authentication,
        })
    }
}

/// `{scheme, credentials}`: a scheme is an HTTP auth-scheme token; credentials need a scheme.
fn authentication(value: &Value, at: &str) -> Result<Option<(String, String)>, Invalid> {
    let object = value
        .as_object()
        .ok_or_else(|| Invalid(format!("{at} must be an object")))?;
    if let Some(field) = object
        .keys()
        .find(|key| !matches!(key.as_str(), "scheme" | "credentials"))
    {
        return Err(Invalid(format!(
            "{at}.{field} is not an authentication field"
        )));
    }
    let scheme = text(object, "scheme", at, MAX_SCHEME_CHARS)?;
    let credentials = header_text(object, "credentials", at, MAX_CREDENTIALS_CHARS)?;
    match (scheme, credentials) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(Invalid(format!("{at}.scheme is required with credentials"))),
        (Some(_), None) => Err(Invalid(format!("{at}.credentials is required"))),
        (Some(scheme), Some(credentials)) => {
            if !scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            {
                return Err(Invalid(format!("{at}.scheme must be an HTTP auth scheme")));
            }
            Ok(Some((scheme, credentials)))
        }
    }
}

/// An optional string field of at most `max` characters, without control characters (it may
/// travel in a header).
fn text(
    object: &Map<String, Value>,
    name: &str,
    at: &str,
    max: usize,
) -> Result<Option<String>, Invalid> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::String(text)) => {
            if text.chars().count() > max {
                return Err(Invalid(format!(
                    "{at}.{name} is longer than {max} characters"
                )));
            }
            if text.chars().any(char::is_control) {
                return Err(Invalid(format!(
                    "{at}.{name} must not contain control characters"
                )));
            }
            Ok(Some(text.clone()))
        }
        Some(_) => Err(Invalid(format!("{at}.{name} must be a string"))),
    }
}

/// [`text`] for a value sent in an HTTP header as it is: printable ASCII only, so that it is
/// refused here rather than left out of every notification.
fn header_text(
    object: &Map<String, Value>,
    name: &str,
    at: &str,
    max: usize,
) -> Result<Option<String>, Invalid> {
    let value = text(object, name, at, max)?;
    if let Some(value) = &value {
        if !value.chars().all(|c| matches!(c, ' '..='~')) {
            return Err(Invalid(format!(
                "{at}.{name} must be printable ASCII: it is sent in an HTTP header"
            )));
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_s_task_id_is_held_to_its_type_only() {
        let config = |task: Value| json!({"taskId": task, "url": "https://a.example/hook"});
        for task in [json!(null), json!(""), json!("any\u{7}thing")] {
            assert!(
                NotifyRequest::parse(&config(task.clone()), "c").is_ok(),
                "{task}"
            );
        }
        for task in [json!({}), json!(1), json!([])] {
            let refused = NotifyRequest::parse(&config(task.clone()), "c");
            assert_eq!(
                refused.err(),
                Some(Invalid("c.taskId must be a string".into())),
                "{task}"
            );
        }
    }

    #[test]
    fn a_config_reads_its_fields_and_refuses_what_it_cannot_carry() {
        let parsed = NotifyRequest::parse(
            &json!({"id": "hook-1", "taskId": "t", "url": "https://a.example/hook",
                    "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "c"}}),
            "config",
        )
        .unwrap();
        assert_eq!(parsed.id.as_deref(), Some("hook-1"));
        assert_eq!(parsed.token.as_deref(), Some("tok"));
        assert_eq!(parsed.authentication, Some(("Bearer".into(), "c".into())));
        let bare =
            NotifyRequest::parse(&json!({"url": "https://a.example", "id": ""}), "c").unwrap();
        assert_eq!(
            (bare.id, bare.token, bare.authentication),
            (None, None, None)
        );
        for (bad, why) in [
            (json!({}), "c.url is required"),
            (json!({"url": 1}), "c.url must be a string"),
            (
                json!({"url": "u", "extra": 1}),
                "c.extra is not a push notification config field",
            ),
            (
                json!({"url": "u", "id": "a/b"}),
                "c.id may hold letters, digits, '-', '_' and '.' only",
            ),
            (
                json!({"url": "u", "token": "a\nb"}),
                "c.token must not contain control characters",
            ),
            (
                json!({"url": "u", "token": "tøken"}),
                "c.token must be printable ASCII: it is sent in an HTTP header",
            ),
            (
                json!({"url": "u", "authentication": {"scheme": "Bearer", "credentials": "sésame"}}),
                "c.authentication.credentials must be printable ASCII: it is sent in an HTTP header",
            ),
            (
                json!({"url": "u", "authentication": {"credentials": "x"}}),
                "c.authentication.scheme is required with credentials",
            ),
            (
                json!({"url": "u", "authentication": {"scheme": "Bearer"}}),
                "c.authentication.credentials is required",
            ),
            (
                json!({"url": "u", "authentication": {"scheme": "Bad Scheme", "credentials": "x"}}),
                "c.authentication.scheme must be an HTTP auth scheme",
            ),
        ] {
            assert_eq!(
                NotifyRequest::parse(&bad, "c"),
                Err(Invalid(why.into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_shown_config_never_holds_the_credentials() {
        let config = NotifyConfig {
            tenant_id: "tenant".into(),
            task_id: "task".into(),
            id: "hook".into(),
            url: "https://a.example/hook".into(),
            token: Some("tok".into()),
            sealed_token: Some("sealed-tok".into()),
            scheme: Some("Bearer".into()),
            sealed_credentials: Some("sealed".into()),
            created_at: crate::domain::clock::Timestamp::default(),
            delivered: 3,
            attempts: 0,
            expires_at: None,
        };
        assert_eq!(
            config.to_a2a(),
            json!({"id": "hook", "taskId": "task", "url": "https://a.example/hook",
                   "token": "tok", "authentication": {"scheme": "Bearer"}})
        );
    }
}
