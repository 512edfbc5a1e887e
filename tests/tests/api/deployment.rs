//! The route table, the function crates and the SAM template agree: every route has its own
//! function crate serving exactly it, and the template deploys that crate at that method and path.

use std::collections::BTreeSet;
use std::path::Path;

use forgebench::store::schema::TEMPLATE;
use forgebench::Route;

fn template() -> serde_yaml::Value {
    serde_yaml::from_str(TEMPLATE).expect("template parses")
}

#[test]
fn every_route_is_one_function_crate_that_serves_exactly_it() {
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    let crates: BTreeSet<String> = std::fs::read_dir(&functions)
        .expect("functions/")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for route in Route::ALL {
        let name = route.name();
        assert!(crates.contains(&name), "no crate functions/{name}");
        let main =
            std::fs::read_to_string(functions.join(&name).join("src/main.rs")).expect("main.rs");
        assert!(
            main.contains(&format!("Route::{route:?})")),
            "functions/{name} serves another route"
        );
    }
    let expected: BTreeSet<String> = Route::ALL
        .iter()
        .map(|route| route.name())
        .chain(["sweep-deadlines".to_owned(), "push-worker".to_owned()])
        .collect();
    assert_eq!(
        crates, expected,
        "a function crate without a route, or the reverse"
    );
}

#[test]
fn the_template_deploys_each_function_at_its_route() {
    let document = template();
    let resources = document["Resources"].as_mapping().expect("Resources");
    let mut deployed = BTreeSet::new();
    let mut scheduled = BTreeSet::new();
    let mut queue_driven = BTreeSet::new();
    for (_, resource) in resources {
        if resource["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .expect("each function names its binary")
            .to_owned();
        assert_eq!(resource["Metadata"]["BuildMethod"], "rust-cargolambda");
        let events = resource["Properties"]["Events"]
            .as_mapping()
            .expect("events");
        for (_, event) in events {
            match event["Type"].as_str() {
                Some("Api") => {
                    let method = event["Properties"]["Method"]
                        .as_str()
                        .unwrap()
                        .to_uppercase();
                    let path = event["Properties"]["Path"].as_str().unwrap().to_owned();
                    deployed.insert((binary.clone(), method, path));
                }
                Some("Schedule") => {
                    scheduled.insert(binary.clone());
                }
                Some("SQS") => {
                    let properties = &event["Properties"];
                    assert_eq!(
                        properties["FunctionResponseTypes"][0],
                        "ReportBatchItemFailures"
                    );
                    queue_driven.insert(binary.clone());
                }
                other => panic!("unexpected event type {other:?}"),
            }
        }
    }
    let expected: BTreeSet<(String, String, String)> = Route::ALL
        .iter()
        .map(|route| {
            let (method, path) = route.spec();
            (route.name(), method.to_string(), path.to_owned())
        })
        .collect();
    assert_eq!(deployed, expected);
    assert_eq!(scheduled, BTreeSet::from(["sweep-deadlines".to_owned()]));
    assert_eq!(queue_driven, BTreeSet::from(["push-worker".to_owned()]));
}

#[test]
fn the_push_queue_outlasts_the_worker_and_has_a_dead_letter_queue() {
    let document = template();
    let resources = &document["Resources"];
    let worker_timeout = resources["PushWorkerFunction"]["Properties"]["Timeout"]
        .as_u64()
        .unwrap();
    let queue = &resources["PushQueue"]["Properties"];
    let visibility = queue["VisibilityTimeout"].as_u64().unwrap();
    assert!(
        visibility >= 6 * worker_timeout,
        "visibility {visibility} < 6 x {worker_timeout}"
    );
    let max_receive = queue["RedrivePolicy"]["maxReceiveCount"].as_u64().unwrap();
    let attempts = forgebench::push::verdict::RetrySchedule::default().max_attempts();
    assert!(
        max_receive > attempts,
        "the DLQ must not take messages still being retried"
    );
    assert_eq!(resources["PushDeadLetterQueue"]["Type"], "AWS::SQS::Queue");
}

#[test]
fn the_wait_bound_of_the_deployment_fits_the_integration_timeout() {
    let document = template();
    let max_wait = document["Parameters"]["MaxWaitSeconds"]["Default"]
        .as_u64()
        .unwrap();
    let timeout = document["Globals"]["Function"]["Timeout"].as_u64().unwrap();
    // API Gateway REST integrations time out at 29 s; the wait must leave room for the work.
    assert!(
        max_wait + 2 <= timeout && timeout <= 29,
        "wait {max_wait}, timeout {timeout}"
    );
}
