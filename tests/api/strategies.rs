//! What the property tests share: how a property over the real server and database is run
//! (each case is a round trip, so few cases by default, more on demand, and a bounded shrink).

use proptest::test_runner::{Config as ProptestConfig, TestRunner};

/// How long shrinking a failure may go on: each step is a round trip through the database and
/// the server, and the failure message already names what was wrong.
pub struct Shrink {
    pub iterations: u32,
    pub millis: u32,
}

/// A runner for a property whose cases go through the database and the server: `default_cases`
/// cases, or as many as the environment variable `cases_var` says (for a deeper search).
pub fn database_runner(cases_var: &str, default_cases: u32, shrink: Shrink) -> TestRunner {
    let cases = std::env::var(cases_var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: shrink.iterations,
        max_shrink_time: shrink.millis,
        ..ProptestConfig::default()
    })
}
