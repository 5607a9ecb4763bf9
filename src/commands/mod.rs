//! The commands, one per file: `serve`, `migrate`, `check`, `robots test` and `robots enforce`,
//! `crawlers update`, `export`, `import`. Each takes the validated configuration and returns an exit code; the
//! one-shot commands open only what they need (`export` opens the sites as `serve` does,
//! [`crate::app::Sites::open`], and nothing that listens).

mod check;
mod crawlers_update;
mod export;
mod import;
mod migrate;
mod progress;
mod robots;
mod serve;

pub use check::check;
pub use crawlers_update::crawlers_update;
pub use export::export;
pub use import::import;
pub use migrate::{migrate, unwatch};
pub use robots::{robots_enforce, robots_test};
pub use serve::serve;
