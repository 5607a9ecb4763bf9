//! Servers besides sitemapd (nginx, apache2, caddy): their binaries, and a free port for them.

use std::path::Path;
use std::process::Command;

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server binary (nginx, apache2, caddy), installed with apt-get when missing (as a user's
/// machine would get it; ./scripts/test.sh installs them up front).
pub fn server_binary(name: &str, package: &str) -> std::path::PathBuf {
    let found = |name: &str| {
        ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"]
            .iter()
            .map(|dir| Path::new(dir).join(name))
            .find(|path| path.exists())
    };
    if let Some(path) = found(name) {
        return path;
    }
    let install = format!(
        "DEBIAN_FRONTEND=noninteractive apt-get install -y -q {package} >/dev/null 2>&1 \
         || (apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q {package} >/dev/null 2>&1)"
    );
    let _ = Command::new("sh").args(["-c", &install]).status();
    found(name).unwrap_or_else(|| {
        panic!("{name} is not installed and apt-get could not install {package}")
    })
}
