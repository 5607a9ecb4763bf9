//! The command line: `serve`, `migrate`, `check`, `robots test`, `crawlers update`, `export`,
//! `import`, `demo`.
//!
//! Each command loads the configuration the same way and returns an exit code; `main` only
//! calls [`run`].

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::{Config, Defaults, LogFormat, Vars};
use crate::{commands, demo};

#[derive(Parser)]
#[command(
    name = "sitemapd",
    version,
    about = "Serves a website's sitemaps and robots.txt live from its database"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Apply missing migrations, then serve HTTP until SIGTERM/SIGINT (the default)
    Serve,
    /// Apply the migrations, watch the tables behind each source where allowed, and exit
    Migrate {
        /// Remove the triggers watching SOURCE (a view or table) and forget its change log
        /// instead; its changes then show every SITEMAP_REFRESH_SECS
        #[arg(long, value_name = "SOURCE")]
        unwatch: Option<String>,
    },
    /// Read every entry and the robots template; print what is served and skipped; exit 1 on problems
    Check {
        /// Also fetch SITEMAP_BASE_URL's /robots.txt as a crawler would (through whatever is in
        /// front) and exit 1 when it is not the file sitemapd serves, naming the difference
        #[arg(long)]
        public: bool,
    },
    /// Robots.txt tools
    Robots {
        #[command(subcommand)]
        command: RobotsCommand,
    },
    /// Crawler registry tools
    Crawlers {
        #[command(subcommand)]
        command: CrawlersCommand,
    },
    /// Write the files the server serves (index, pages .xml.gz, robots.txt) into DIR
    Export {
        /// Directory to write into (created if missing)
        dir: PathBuf,
    },
    /// Load entries from existing sitemap files (XML, XML.gz, text, or an index and its files)
    /// into the built-in sitemap_entries table; exit 1 if anything was skipped or a file failed
    #[command(long_about = IMPORT_HELP)]
    Import {
        /// Sitemap, sitemap index or text sitemap to read, or - for stdin
        #[arg(value_name = "FILE|-")]
        file: String,
    },
    /// Serve sample entries from an embedded SQLite database, with zero configuration, and the
    /// status page on the next port (or ADMIN_BIND_ADDR)
    Demo,
}

const IMPORT_HELP: &str = "\
Load entries from existing sitemap files into the built-in sitemap_entries table.

The format is told by content, not by name: an XML sitemap (urlset), the same gzipped, a text
sitemap (one URL per line), or a sitemap index, whose files are looked for beside it by the last
segment of each <loc> (an index read from stdin: in the current directory). xhtml:link
rel=\"alternate\" and image:image are imported into sitemap_alternates and sitemap_images;
other extensions are ignored and counted.

Entries are matched by loc: a new URL gets a new id, an existing one keeps its id and takes the
file's lastmod, changefreq, priority, alternates and images (a text sitemap carries only URLs,
so its lines leave existing entries as they are). Entries the server would skip (outside
SITEMAP_BASE_URL, too long, disallowed by robots.txt, ...) are not imported but counted with
examples; an invalid tag is dropped, not its entry. A missing or malformed file is reported
with its position; the rest still imports, and what was written stays.

Import always writes sitemap_entries, even when SITEMAP_SOURCE names another table or a view.
Migrations are applied first. Exit status: 0 all imported, 1 something skipped or a file
failed, 2 configuration error.";

#[derive(Subcommand)]
enum RobotsCommand {
    /// Say whether the served robots.txt allows URL for a user agent; exit 0 allowed, 1 disallowed
    Test {
        /// Absolute URL or path to test
        url: String,
        /// A crawler's product token, its registry name, or a whole User-Agent string (mapped
        /// through the crawler registry to the token that crawler obeys)
        #[arg(long, default_value = "*")]
        user_agent: String,
    },
    /// Print a snippet for nginx, apache or caddy that answers 403 to the crawlers
    /// ROBOTS_POLICY disallows on /, never for /robots.txt (how to include it is in its comments)
    Enforce {
        /// nginx, apache or caddy
        #[arg(value_parser = ["nginx", "apache", "caddy"])]
        server: String,
    },
}

#[derive(Subcommand)]
enum CrawlersCommand {
    /// Fetch the ai.robots.txt list and the range lists the registry names; write the agents the
    /// registry lacks into a registry file and print what ROBOTS_POLICY now does with them; exit 1
    /// (nothing written) when the list cannot be fetched
    Update {
        /// The list to read instead of ai.robots.txt's robots.json: an http(s) URL or a local file
        #[arg(long, value_name = "URL|FILE")]
        from: Option<String>,
        /// The registry file to write (default: CRAWLERS_FILE, else crawlers.toml); an existing
        /// one is kept and only agents it does not name are added
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// How long blocking tasks still running when a command ends may hold the exit. A name lookup
/// still waiting for a DNS server that does not answer (an IP-range list's host, off the
/// internet) runs on the blocking pool: it must not hold it. `serve` has spent its
/// `SHUTDOWN_GRACE_SECS` already, all but [`crate::app::TEARDOWN`]: half of that is left.
fn runtime_teardown(command: &Command) -> std::time::Duration {
    match command {
        Command::Serve | Command::Demo => crate::app::TEARDOWN / 2,
        _ => std::time::Duration::from_secs(1),
    }
}

/// Parses arguments, runs the command, returns the process exit code.
pub fn run() -> i32 {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Command::Serve);
    let defaults = match command {
        Command::Demo => demo::defaults(),
        _ => Defaults::default(),
    };
    let mut vars = Vars::from_env();
    let command = match command {
        Command::Crawlers {
            command: CrawlersCommand::Update { from, out: None },
        } => Command::Crawlers {
            command: CrawlersCommand::Update {
                from,
                out: vars.crawlers_file_to_update(),
            },
        },
        command => command,
    };
    let config = match Config::from_vars(&vars, &defaults) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("sitemapd: {e}");
            return 2;
        }
    };
    let config = match command {
        Command::Demo => demo::with_demo_settings(config),
        _ => config,
    };
    let _log_writer = init_tracing(config.log_format);
    let teardown = runtime_teardown(&command);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(async {
        match command {
            Command::Serve => commands::serve(&config).await,
            Command::Demo => {
                demo::prepare(&config).await?;
                println!("{}", demo::addresses(&config));
                commands::serve(&config).await
            }
            Command::Migrate { unwatch: None } => commands::migrate(&config).await,
            Command::Migrate {
                unwatch: Some(source),
            } => commands::unwatch(&config, &source).await,
            Command::Check { public } => commands::check(&config, public).await,
            Command::Robots {
                command: RobotsCommand::Test { url, user_agent },
            } => commands::robots_test(&config, &url, &user_agent),
            Command::Robots {
                command: RobotsCommand::Enforce { server },
            } => commands::robots_enforce(&config, &server),
            Command::Crawlers {
                command: CrawlersCommand::Update { from, out },
            } => commands::crawlers_update(&config, from.as_deref(), out.as_deref()).await,
            Command::Export { dir } => commands::export(&config, &dir).await,
            Command::Import { file } => commands::import(&config, &file).await,
        }
    });
    runtime.shutdown_timeout(teardown);
    match result {
        Ok(code) => code,
        Err(e) => {
            let message = crate::error::Chain(&e).to_string();
            tracing::error!("{message}");
            eprintln!("sitemapd: {message}");
            e.exit_code()
        }
    }
}

/// Logs go to stderr from a background thread, so a request never waits on a terminal or a
/// pipe; the returned guard flushes what is left when the process ends.
fn init_tracing(format: LogFormat) -> tracing_appender::non_blocking::WorkerGuard {
    let (writer, guard) = tracing_appender::non_blocking(std::io::stderr());
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    // Colour only on a terminal: escape codes in a log file or journal are noise.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    guard
}
