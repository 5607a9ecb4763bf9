//! Servers besides sitemapd (nginx, apache2, caddy): their binaries, and a free port for them.

use std::path::Path;
use std::process::Command;

/// A loopback port nothing holds now, for a server another process binds (nginx, Caddy,
/// dnsmasq, a spawned sitemapd), free for TCP and UDP alike.
///
/// Taken below the kernel's ephemeral range (Linux: 32768–60999), where `bind(…:0)` and every
/// outgoing connection take theirs: a port freed by a `bind(…:0)` probe can be handed to the
/// next outgoing connection before the server binds it, and the server then cannot start.
/// Ports are handed out once per test process, from a start that differs between processes.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7_919) % COUNT,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..COUNT {
        let port = (FIRST + NEXT.fetch_add(1, Ordering::SeqCst) % COUNT) as u16;
        let free = std::net::TcpListener::bind(("0.0.0.0", port)).is_ok()
            && std::net::UdpSocket::bind(("0.0.0.0", port)).is_ok();
        if free {
            return port;
        }
    }
    panic!("no free port in {FIRST}..{}", FIRST + COUNT)
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
