//! How a failure is reported: one line with every cause, `a: b: c`, written where the failure
//! is handled (the HTTP layer for a request, the sweeper for a sweep, the command line at exit).

use std::fmt;

/// An error with its causes, one after another: `a: b: c`. For the one log line that reports
/// a failure.
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
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

    #[test]
    fn a_chain_shows_every_cause() {
        let e = Outer(std::io::Error::other("connection refused"));
        assert_eq!(
            Chain(&e).to_string(),
            "could not answer: connection refused"
        );
    }
}
