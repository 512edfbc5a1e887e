//! What one deployed Lambda function serves. Every function of the deployment runs the same
//! gateway binary; the function's configuration names its job in `FORGEBENCH_ROUTE`, read once at
//! cold start. The names are the route table's (`Route::name`) plus the two event-driven jobs, so
//! the template, the CDK app and the tests all check against this one list.

use std::fmt;

use crate::http::Route;

/// The environment variable that names a function's job.
pub const ROUTE_VARIABLE: &str = "FORGEBENCH_ROUTE";

/// The job of one deployed function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    /// An API route behind API Gateway.
    Route(Route),
    /// The push queue's consumer (an SQS event source).
    PushWorker,
    /// The scheduled sweeper of missed claim deadlines, outboxes and word indexes.
    Sweeper,
}

/// The name the push worker is deployed under.
pub const PUSH_WORKER: &str = "push-worker";
/// The name the sweeper is deployed under.
pub const SWEEPER: &str = "sweep-deadlines";

/// `FORGEBENCH_ROUTE` was missing, or named no function of the table: the function refuses to
/// start rather than serve a default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownFunction {
    #[error("{ROUTE_VARIABLE} is not set: the function's configuration must name its route")]
    Missing,
    #[error("{ROUTE_VARIABLE}={0:?} names no route of the gateway")]
    Unknown(String),
}

impl Function {
    /// Every deployed function: one per route, then the push worker and the sweeper.
    pub fn all() -> impl Iterator<Item = Function> {
        Route::ALL
            .into_iter()
            .map(Function::Route)
            .chain([Function::PushWorker, Function::Sweeper])
    }

    /// The name the deployment gives this function's job (`open-task`, `push-worker`).
    pub fn name(self) -> String {
        match self {
            Function::Route(route) => route.name(),
            Function::PushWorker => PUSH_WORKER.to_owned(),
            Function::Sweeper => SWEEPER.to_owned(),
        }
    }

    /// The function a configured name means; `None` (the variable unset) is an error too.
    pub fn from_configured(name: Option<&str>) -> Result<Function, UnknownFunction> {
        let name = name.map(str::trim).ok_or(UnknownFunction::Missing)?;
        if name.is_empty() {
            return Err(UnknownFunction::Missing);
        }
        Function::all()
            .find(|function| function.name() == name)
            .ok_or_else(|| UnknownFunction::Unknown(name.to_owned()))
    }
}

impl fmt::Display for Function {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_function_has_a_distinct_name_that_reads_back_to_it() {
        let names: BTreeSet<String> = Function::all().map(Function::name).collect();
        assert_eq!(names.len(), Route::ALL.len() + 2);
        for function in Function::all() {
            assert_eq!(
                Function::from_configured(Some(&function.name())),
                Ok(function)
            );
        }
        assert_eq!(
            Function::from_configured(Some("open-task")),
            Ok(Function::Route(Route::OpenTask))
        );
        assert_eq!(
            Function::from_configured(Some("push-worker")),
            Ok(Function::PushWorker)
        );
    }

    #[test]
    fn a_missing_or_unknown_name_is_an_error_that_names_it() {
        assert_eq!(
            Function::from_configured(None),
            Err(UnknownFunction::Missing)
        );
        assert_eq!(
            Function::from_configured(Some(" ")),
            Err(UnknownFunction::Missing)
        );
        let unknown = Function::from_configured(Some("open-tasks")).unwrap_err();
        assert_eq!(unknown, UnknownFunction::Unknown("open-tasks".into()));
        assert!(unknown.to_string().contains("\"open-tasks\""), "{unknown}");
        assert!(unknown.to_string().contains(ROUTE_VARIABLE), "{unknown}");
        // names are exact: no case folding, no route by its Rust name
        assert!(Function::from_configured(Some("Open-Task")).is_err());
        assert!(Function::from_configured(Some("OpenTask")).is_err());
    }
}
