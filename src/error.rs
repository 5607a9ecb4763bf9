//! How a failure is reported: one line with every cause, `a: b: c`, written where the failure
//! is handled (the HTTP layer for a request, the sweeper for a sweep, the command line at exit).

use std::fmt;

/// An error with its causes, one after another: `a: b: c`. For the one log line that reports
/// a failure.
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = self.0.to_string();
        f.write_str(&said)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            // Some libraries (sqlx) put their source in their own message too: say it once.
            let message = e.to_string();
            if !said.contains(&message) {
                write!(f, ": {message}")?;
            }
            said = message;
            cause = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("could not answer")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("migration failed")]
    struct Top(#[source] Verbose);

    /// A library error that repeats its source in its own message.
    #[derive(Debug, thiserror::Error)]
    #[error("while migrating: {0}")]
    struct Verbose(#[source] std::io::Error);

    #[test]
    fn a_cause_already_in_the_message_is_not_said_twice() {
        let e = Top(Verbose(std::io::Error::other("pool timed out")));
        assert_eq!(
            Chain(&e).to_string(),
            "migration failed: while migrating: pool timed out"
        );
    }

    #[test]
    fn a_chain_shows_every_cause() {
        let e = Outer(std::io::Error::other("connection refused"));
        assert_eq!(
            Chain(&e).to_string(),
            "could not answer: connection refused"
        );
    }
}
