//! The `sitemapd` binary run as a process, as a user runs it: `serve`, `check`, `export`, and a
//! configuration it refuses.

use std::path::Path;
use std::process::Command;

use super::app::BASE;
use super::databases::TestDb;
use super::http::eventually;

/// The `sitemapd` binary run as a user would run it: an empty environment but for what the test
/// sets, and a working directory of its own (so no `.env` of the checkout is read).
pub struct Sitemapd {
    command: Command,
    stdin: Option<Vec<u8>>,
    _cwd: Option<tempfile::TempDir>,
}

impl Sitemapd {
    pub fn new<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let cwd = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_sitemapd"));
        command.env_clear().current_dir(cwd.path()).args(args);
        Self {
            command,
            stdin: None,
            _cwd: Some(cwd),
        }
    }

    pub fn env(mut self, name: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.command.env(name, value);
        self
    }

    pub fn envs(mut self, vars: &[(&str, &str)]) -> Self {
        self.command.envs(vars.iter().copied());
        self
    }

    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    pub fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// Runs it to the end.
    pub fn output(mut self) -> std::process::Output {
        use std::io::Write;
        use std::process::Stdio;
        let Some(input) = self.stdin.take() else {
            return self.command.output().expect("run sitemapd");
        };
        let mut child = self
            .command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sitemapd");
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(&input).unwrap();
        drop(pipe);
        child.wait_with_output().unwrap()
    }

    /// Runs `serve` on a free port of 127.0.0.1 and waits until `/readyz` says it serves its
    /// files; the process is killed when the returned guard is dropped, whatever the test did.
    pub async fn serve(mut self) -> Serving {
        let port = super::free_port();
        let addr = format!("127.0.0.1:{port}");
        let child = self
            .command
            .env("BIND_ADDR", &addr)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start sitemapd");
        let serving = Serving {
            child: Some(child),
            addr,
            _cwd: self._cwd.take(),
        };
        serving.wait_until_answering().await;
        serving
    }
}

/// A `sitemapd serve` process of a test; killed on drop unless it was waited for.
pub struct Serving {
    child: Option<std::process::Child>,
    pub addr: String,
    _cwd: Option<tempfile::TempDir>,
}

impl Serving {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn wait_until_answering(&self) {
        let client = &reqwest::Client::new();
        let url = &self.url("/readyz");
        let healthy = eventually(
            "the server to answer /readyz",
            move || async move {
                client
                    .get(url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status() == 200)
            },
            |healthy| *healthy,
        )
        .await;
        assert!(healthy, "the server did not come up");
    }

    /// Sends SIGTERM, as a service manager stops it.
    pub fn terminate(&self) {
        let pid = self.child.as_ref().expect("running").id();
        let sent = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -TERM {pid}");
    }

    /// Waits for the process to end; its exit status and log.
    pub async fn wait_with_output(mut self) -> std::process::Output {
        let child = self.child.take().expect("running");
        tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `sitemapd check` on `db` with `vars` besides: its exit code and what it printed.
pub fn check(db: &TestDb, vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Sitemapd::new(["check"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .envs(vars)
        .output();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Runs `sitemapd serve` with `vars`; it must stop before listening, exit 2, and say in one
/// line what is wrong, naming each of `named`.
pub fn refused(vars: &[(&str, &str)], named: &[&str]) {
    let mut all = vec![("SITEMAP_BASE_URL", "https://e.com")];
    all.extend_from_slice(vars);
    let out = Sitemapd::new(["serve"]).envs(&all).output();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{vars:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for name in named {
        assert!(stderr.contains(name), "{name} not in {stderr}");
    }
}

/// Runs `sitemapd export` into a new directory with only these variables set; it must succeed.
pub fn export(vars: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = Sitemapd::new([std::ffi::OsStr::new("export"), dir.path().as_os_str()])
        .envs(vars)
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}
