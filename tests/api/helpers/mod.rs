//! Test harness: a database of its own per test (PostgreSQL, MariaDB or SQLite), the real
//! server on port 0, a real HTTP client. Each file holds one concern; what tests use is re-exported
//! here, so tests `use crate::helpers::...` as before.

mod app;
mod binary;
mod browser;
mod databases;
mod fixtures;
mod http;
// `TestDb::hold_*` and the `Held` they return; no test names `Held` itself.
mod locks;
mod rows;
mod servers;
mod signer;
mod xml;

pub use app::*;
pub use binary::*;
pub use browser::*;
pub use databases::*;
pub use fixtures::*;
pub use http::*;
pub use rows::*;
pub use servers::*;
pub use signer::*;
pub use xml::*;
