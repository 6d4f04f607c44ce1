//! Shared by the test areas that talk to a gateway: [`http`], a loopback client, and (feature
//! `cli`) [`Serve`], `toolwire serve` as a real process: its config written to a scratch file of
//! its own, `--port 0` (the OS picks a free port), ready once its first line names the address
//! it listens on, killed when the value is dropped (also when the test fails).

#![allow(dead_code)] // each area uses its own part

use std::time::Duration;

/// A loopback HTTP client (no proxy) whose requests give up after `timeout`.
pub(crate) fn http(timeout: Duration) -> reqwest::Client {
    toolwire::client::http_client_builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .expect("a loopback HTTP client")
}

/// A scratch path unique to this process and call, in the temp folder.
pub(crate) fn scratch(name: &str, extension: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!(
        "toolwire-{name}-{}-{nanos}-{}.{extension}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(feature = "cli")]
pub(crate) use serve::Serve;

#[cfg(feature = "cli")]
mod serve {
    use std::io::{BufRead, BufReader, Read};
    use std::path::PathBuf;
    use std::process::{Child, Command, ExitStatus, Stdio};
    use std::sync::{Arc, Mutex, mpsc};
    use std::time::{Duration, Instant};

    /// How long a server may take to print its address.
    const READY_WITHIN: Duration = Duration::from_secs(60);

    /// The most of a server's stderr kept for [`Serve::stderr`].
    const STDERR_KEPT: usize = 1 << 20;

    /// The most stdout lines (after the first) kept for [`Serve::said`].
    const STDOUT_LINES_KEPT: usize = 10_000;

    /// What a `toolwire serve` process starts with: its arguments after `serve --port 0`, its
    /// config (written to a scratch file), its environment changes.
    #[derive(Debug, Default)]
    pub(crate) struct ServeBuilder {
        args: Vec<String>,
        config: Option<String>,
        env: Vec<(String, String)>,
        removed: Vec<String>,
    }

    impl ServeBuilder {
        /// One more argument.
        pub(crate) fn arg(mut self, arg: impl Into<String>) -> Self {
            self.args.push(arg.into());
            self
        }

        /// More arguments.
        pub(crate) fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
            self.args.extend(args.into_iter().map(Into::into));
            self
        }

        /// The config file's text (TOML), passed as `--config FILE`.
        pub(crate) fn config(mut self, toml: impl Into<String>) -> Self {
            self.config = Some(toml.into());
            self
        }

        /// A variable set for the process.
        pub(crate) fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.env.push((name.into(), value.into()));
            self
        }

        /// A variable of the test's environment the process does not get.
        pub(crate) fn env_remove(mut self, name: impl Into<String>) -> Self {
            self.removed.push(name.into());
            self
        }

        /// Starts the server and waits until it listens; panics (with its stderr) when it
        /// exits first or says nothing within a minute.
        pub(crate) fn start(self) -> Serve {
            let config = self.config.map(|text| {
                let path = super::scratch("serve", "toml");
                std::fs::write(&path, text).expect("the scratch config file");
                path
            });
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolwire"));
            cmd.args(["serve", "--port", "0"]);
            if let Some(path) = &config {
                cmd.arg("--config").arg(path);
            }
            cmd.args(&self.args)
                .env("NO_PROXY", "127.0.0.1,localhost")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for name in &self.removed {
                cmd.env_remove(name);
            }
            for (name, value) in &self.env {
                cmd.env(name, value);
            }
            let mut child = cmd.spawn().expect("toolwire serve starts");
            let stderr = Arc::new(Mutex::new(String::new()));
            if let Some(mut err) = child.stderr.take() {
                let kept = Arc::clone(&stderr);
                std::thread::spawn(move || {
                    let mut buf = [0_u8; 8192];
                    while let Ok(n) = err.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                        if kept.len() < STDERR_KEPT {
                            kept.push_str(&String::from_utf8_lossy(&buf[..n]));
                        }
                    }
                });
            }
            let stdout = child.stdout.take().expect("a piped stdout");
            let (first_tx, first_rx) = mpsc::channel();
            let said = Arc::new(Mutex::new(Vec::new()));
            let keep = Arc::clone(&said);
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stdout).lines();
                let _ = first_tx.send(lines.next());
                // The rest is read (so the server never blocks on a full pipe) and kept.
                for line in lines.map_while(Result::ok) {
                    let mut kept = keep.lock().unwrap_or_else(|e| e.into_inner());
                    if kept.len() < STDOUT_LINES_KEPT {
                        kept.push(line);
                    }
                }
            });
            let mut serve = Serve {
                child,
                addr: String::new(),
                config,
                stderr,
                said,
            };
            let first = match first_rx.recv_timeout(READY_WITHIN) {
                Ok(Some(Ok(line))) => line,
                other => panic!(
                    "toolwire serve printed no address ({other:?}); stderr: {}",
                    serve.stderr()
                ),
            };
            serve.addr = first
                .strip_prefix("toolwire serve: listening on http://")
                .unwrap_or_else(|| {
                    panic!(
                        "unexpected first line {first:?}; stderr: {}",
                        serve.stderr()
                    )
                })
                .to_owned();
            serve
        }
    }

    /// A running `toolwire serve`, killed when dropped.
    #[derive(Debug)]
    pub(crate) struct Serve {
        child: Child,
        addr: String,
        config: Option<PathBuf>,
        stderr: Arc<Mutex<String>>,
        said: Arc<Mutex<Vec<String>>>,
    }

    impl Serve {
        /// What a server starts with.
        pub(crate) fn builder() -> ServeBuilder {
            ServeBuilder::default()
        }

        /// `host:port` it listens on.
        pub(crate) fn addr(&self) -> &str {
            &self.addr
        }

        /// `http://host:port`.
        pub(crate) fn url(&self) -> String {
            format!("http://{}", self.addr)
        }

        /// Its process id.
        pub(crate) fn pid(&self) -> u32 {
            self.child.id()
        }

        /// The process, for a test that signals or waits for it itself.
        pub(crate) fn child(&mut self) -> &mut Child {
            &mut self.child
        }

        /// The lines it printed after its first, once there are at least `count` of them;
        /// panics when there are fewer after `within`.
        pub(crate) fn said(&self, count: usize, within: Duration) -> Vec<String> {
            let deadline = Instant::now() + within;
            loop {
                let said = self.said.lock().unwrap_or_else(|e| e.into_inner()).clone();
                if said.len() >= count {
                    return said;
                }
                assert!(
                    Instant::now() < deadline,
                    "toolwire serve printed {} of {count} lines: {said:?}",
                    said.len()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }

        /// What it wrote to stderr so far (its first MiB).
        pub(crate) fn stderr(&self) -> String {
            self.stderr
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
        }

        /// SIGTERM (the graceful stop), then its exit status once it exited; panics when it is
        /// still running after `within`.
        pub(crate) fn terminate(&mut self, within: Duration) -> ExitStatus {
            let sent = Command::new("kill")
                .args(["-TERM".to_owned(), self.child.id().to_string()])
                .status()
                .expect("kill runs");
            assert!(sent.success(), "kill -TERM failed");
            let deadline = Instant::now() + within;
            loop {
                if let Some(exit) = self.child.try_wait().expect("the child's status") {
                    return exit;
                }
                assert!(
                    Instant::now() < deadline,
                    "toolwire serve did not stop within {within:?}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    impl Drop for Serve {
        fn drop(&mut self) {
            if let Ok(None) = self.child.try_wait() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
            if let Some(path) = self.config.take() {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}
