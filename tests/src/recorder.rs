//! The [`Recorder`]: an SDK interceptor that notes every AWS request the gateway sends (as the
//! IAM actions it needs, and DynamoDB's round trips) and fails chosen ones before they are sent.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

/// Notes every request the SDK clients send, as the IAM action it needs (`dynamodb:GetItem`,
/// `sqs:SendMessage`, `kms:Encrypt`; a DynamoDB transaction as the action of each of its items;
/// a KMS call also as `kms:Encrypt@<purpose>`, the encryption context's purpose), and how long
/// DynamoDB took to answer them.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    log: Arc<std::sync::Mutex<RequestLog>>,
    /// The DynamoDB requests answered since the last take of them: each one's name (see
    /// [`Recorder::take_dynamodb_round_trips`]) and round trip.
    dynamodb_round_trips: Arc<std::sync::Mutex<Vec<(String, Duration)>>>,
    /// Operations whose next request fails before it is sent (a fault injected into the real
    /// client: the emulator never sees the request).
    faults: Arc<std::sync::Mutex<Vec<String>>>,
}

/// A DynamoDB request's name and when it went out, kept with the request until its answer
/// comes back.
#[derive(Debug, Clone)]
struct SentToDynamodb(String, std::time::Instant);

impl aws_smithy_types::config_bag::Storable for SentToDynamodb {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

/// Requests in order: each one's operation and the IAM actions it needs.
type RequestLog = Vec<(String, Vec<String>)>;

impl Recorder {
    /// Fails the next request of `operation` (`BatchWriteItem`, `PutItem`, …) before it is sent,
    /// as a network fault would; later ones go through.
    pub fn fail_next(&self, operation: &str) {
        self.faults
            .lock()
            .expect("recorder")
            .push(operation.to_owned());
    }

    /// The IAM actions of every request since the last take.
    pub fn take(&self) -> Vec<String> {
        self.take_requests()
            .into_iter()
            .flat_map(|(_, actions)| actions)
            .collect()
    }

    /// Every request since the last take: its operation (`GetItem`, `TransactWriteItems`, …)
    /// and the IAM actions it needs.
    pub fn take_requests(&self) -> Vec<(String, Vec<String>)> {
        std::mem::take(&mut *self.log.lock().expect("recorder"))
    }

    /// The summed round trips of the DynamoDB requests answered since the last take: the time
    /// spent waiting on the store (requests sent at once count each).
    pub fn take_dynamodb_time(&self) -> Duration {
        self.take_dynamodb_round_trips()
            .into_iter()
            .map(|(_, round_trip)| round_trip)
            .sum()
    }

    /// Each DynamoDB request answered since the last take, in the order of the answers: its
    /// name (the operation, and the index a `Query` reads: `Query words_in`) and its round
    /// trip, from sent to the answer's headers.
    pub fn take_dynamodb_round_trips(&self) -> Vec<(String, Duration)> {
        std::mem::take(&mut *self.dynamodb_round_trips.lock().expect("recorder"))
    }

    /// The operation of every request since the last take but the queue's receives (which a
    /// local push poller sends all the time, and a deployed event source mapping for us).
    pub fn take_operations_but_receives(&self) -> Vec<String> {
        self.take_requests()
            .into_iter()
            .map(|(operation, _)| operation)
            .filter(|operation| operation != "ReceiveMessage")
            .collect()
    }

    /// The operation of every DynamoDB request since the last take (the others are dropped).
    pub fn take_dynamodb(&self) -> Vec<String> {
        self.take_requests()
            .into_iter()
            .filter(|(_, actions)| actions.iter().any(|a| a.starts_with("dynamodb:")))
            .map(|(operation, _)| operation)
            .collect()
    }
}

/// A JSON request's body (DynamoDB and KMS speak JSON), or `null`.
fn request_body(request: &aws_smithy_runtime_api::http::Request) -> Value {
    request
        .body()
        .bytes()
        .and_then(|bytes| serde_json::from_slice(bytes).ok())
        .unwrap_or_default()
}

impl aws_smithy_runtime_api::client::interceptors::Intercept for Recorder {
    fn name(&self) -> &'static str {
        "Recorder"
    }

    fn read_before_transmit(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let request = context.request();
        let target = request.headers().get("x-amz-target").unwrap_or_default();
        let (service, operation) = target.split_once('.').unwrap_or(("", target));
        // S3 speaks REST without a target header: the operation's own metadata names it.
        let metadata = cfg.load::<aws_smithy_runtime_api::client::orchestrator::Metadata>();
        let (prefix, operation) = match service {
            s if s.starts_with("DynamoDB") => ("dynamodb", operation),
            s if s.starts_with("AmazonSQS") => ("sqs", operation),
            s if s.starts_with("TrentService") => ("kms", operation),
            _ => match metadata {
                Some(metadata) if metadata.service().eq_ignore_ascii_case("s3") => {
                    ("s3", metadata.name())
                }
                _ => ("unknown", operation),
            },
        };
        // Owned, so the metadata it may borrow from is let go before the state below is kept.
        let operation = operation.to_owned();
        // Only DynamoDB's and KMS's bodies are read, once: S3's may be large and not JSON.
        let body = match prefix {
            "dynamodb" | "kms" => request_body(request),
            _ => Value::Null,
        };
        if prefix == "dynamodb" {
            let name = match body["IndexName"].as_str() {
                Some(index) => format!("{operation} {index}"),
                None => operation.clone(),
            };
            cfg.interceptor_state()
                .store_put(SentToDynamodb(name, std::time::Instant::now()));
        }
        let mut actions = Vec::new();
        if prefix == "dynamodb" && operation == "TransactWriteItems" {
            for item in body["TransactItems"].as_array().into_iter().flatten() {
                for (kind, action) in [
                    ("Put", "PutItem"),
                    ("Update", "UpdateItem"),
                    ("Delete", "DeleteItem"),
                    ("ConditionCheck", "ConditionCheckItem"),
                ] {
                    if item.get(kind).is_some() {
                        actions.push(format!("dynamodb:{action}"));
                    }
                }
            }
        } else if prefix == "sqs" && operation.ends_with("Batch") {
            // A batch call needs the permission of its single call (`SendMessageBatch` is
            // allowed by `sqs:SendMessage`).
            actions.push(format!("sqs:{}", operation.trim_end_matches("Batch")));
        } else {
            actions.push(format!("{prefix}:{operation}"));
        }
        // A KMS call is also noted with its encryption context's purpose (`kms:Decrypt@
        // endpoint-secret`), which IAM conditions on (`kms:EncryptionContext:purpose`).
        if prefix == "kms" {
            let purpose = body["EncryptionContext"]["purpose"].as_str().unwrap_or("");
            actions.push(format!("{prefix}:{operation}@{purpose}"));
        }
        let mut faults = self.faults.lock().expect("recorder");
        let fault = faults.iter().position(|failing| *failing == operation);
        let fault = fault.map(|place| faults.remove(place));
        drop(faults);
        self.log
            .lock()
            .expect("recorder")
            .push((operation, actions));
        match fault {
            Some(operation) => Err(format!("injected fault: {operation}").into()),
            None => Ok(()),
        }
    }

    fn read_after_transmit(
        &self,
        _context: &aws_smithy_runtime_api::client::interceptors::context::BeforeDeserializationInterceptorContextRef<'_>,
        _runtime_components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        if let Some(SentToDynamodb(name, sent)) = cfg.load::<SentToDynamodb>() {
            let round_trip = sent.elapsed();
            self.dynamodb_round_trips
                .lock()
                .expect("recorder")
                .push((name.clone(), round_trip));
        }
        Ok(())
    }
}
