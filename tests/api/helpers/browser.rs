//! Headless Chromium, for the pages a browser renders (stylesheet, status page), and where
//! screenshots go.

use std::process::Command;

/// The headless browser, or a failure that says how to get one.
pub fn chromium() -> String {
    let candidates = std::env::var("CHROMIUM").into_iter().chain(
        ["chromium", "chromium-browser", "google-chrome"]
            .into_iter()
            .map(String::from),
    );
    for candidate in candidates {
        let works = Command::new(&candidate)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
        if works {
            return candidate;
        }
    }
    panic!(
        "headless Chromium is missing: the stylesheet and status page tests render pages in a real browser. \
         Install it (Debian/Ubuntu: apt-get install chromium) or run ./scripts/test.sh, which \
         installs it; set CHROMIUM=/path/to/chrome to use another build"
    );
}

/// Runs headless Chromium on `url` with `args`, off the test's runtime (the server under test
/// runs on it), with a profile of its own so parallel runs do not share one.
pub async fn run_chromium(browser: &str, args: &[&str], url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut command = Command::new(browser);
    command
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url);
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(profile);
    String::from_utf8(out.stdout).unwrap()
}

/// The DOM of `url` once headless Chromium has rendered it.
pub async fn dump_dom(browser: &str, url: &str) -> String {
    run_chromium(browser, &["--dump-dom"], url).await
}

/// Where a test saves a screenshot: `target/screenshots/NAME` (or under CARGO_TARGET_DIR).
pub fn screenshot_path(name: &str) -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("screenshots").join(name)
}
