//! The gateway under measure: the in-process app with its DynamoDB and moto clients pointed at
//! recording proxies and its AWS requests recorded, and what a run asks of it.

use forgebench_bench::proxy::Proxy;
use forgebench_tests::{spawn_app_with, Options, Pair, Recorder, TestApp};
use serde_json::json;

use crate::billing::take_requests;
use crate::run::Run;

pub struct Gateway {
    pub app: TestApp,
    recorder: Recorder,
    pub dynamodb: Proxy,
    pub moto: Proxy,
}

pub async fn gateway(options: Options) -> Gateway {
    let recorder = Recorder::default();
    let dynamodb = Proxy::start(forgebench_tests::dynamodb_endpoint(), true).await;
    let moto = Proxy::start(forgebench_tests::moto_endpoint(), false).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: dynamodb.endpoint.clone(),
        moto_endpoint: moto.endpoint.clone(),
        key_cache_seconds: 60,
        deployed_poll_intervals: true,
        recorder: Some(recorder.clone()),
        ..options
    })
    .await;
    Gateway {
        app,
        recorder,
        dynamodb,
        moto,
    }
}

impl Gateway {
    /// Forgets everything recorded so far.
    pub fn reset(&self) {
        self.recorder.take_requests();
        self.dynamodb.take();
        self.moto.take();
    }

    pub fn finish(&self, run: &mut Run) {
        run.requests = take_requests(&self.recorder);
        run.tally(&self.dynamodb, &self.moto);
    }
}

/// Turns word search on or off for `pair`'s tenant (`PATCH /v1/tenant/settings`).
pub async fn set_word_search(gateway: &Gateway, pair: &Pair, on: bool) {
    set_settings(gateway, pair, json!({ "word_search": on })).await;
}

/// Changes `pair`'s tenant's settings (`PATCH /v1/tenant/settings`).
pub async fn set_settings(gateway: &Gateway, pair: &Pair, settings: serde_json::Value) {
    let reply = gateway
        .app
        .send(
            "PATCH",
            "/v1/tenant/settings",
            Some(&pair.tenant.admin_key),
            Some(settings),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}
